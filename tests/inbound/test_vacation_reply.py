"""A real Sieve vacation answer (Dovecot + Pigeonhole) holds the person; with the one-click headers none comes.

The app sends step 1 to the aiosmtpd test server; those bytes are delivered to the prospect, a Dovecot user
with an active vacation script, through dovecot-lda (as an MTA would hand them over). Pigeonhole sends its
answer over SMTP to a second aiosmtpd server; the test puts that answer into the sending mailbox's IMAP inbox
(alice on the same Dovecot) and runs the poll the watcher runs. Pigeonhole skips mail with List-* headers
("discarding vacation response to mailinglist recipient"): the sequence's unsubscribe style decides.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from email import message_from_bytes

import pytest
from django.utils import timezone

from inbound.ingest.poll import mailbox_poll
from proving.harness.dovecot import DEFAULT_USERS, Dovecot
from proving.harness.smtp import SmtpServer
from sequences.models import Enrollment, SendJob, Sequence, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.timeline import Event
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
PROSPECT = "pat@prospect.test"  # a Dovecot user named by its address: vacation answers mail addressed to it
BACK = timezone.now().date() + timedelta(days=8)
SENTENCE = f"I am out of the office until {BACK.day} {BACK:%B %Y}."
VACATION = f'require "vacation";\nvacation :days 1 :subject "Out of office" "{SENTENCE}";\n'


@pytest.fixture
def answers():
    """The SMTP server Pigeonhole sends its vacation answers to."""
    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture
def sieve_dovecot(answers):
    with Dovecot({**DEFAULT_USERS, PROSPECT: "patpw"}, sieve_submission_port=answers.port) as server:
        server.sieve_script(PROSPECT, VACATION)
        yield server


@pytest.fixture
def reading_mailbox(mailbox, sieve_dovecot, monkeypatch):
    """The sending mailbox (on the aiosmtpd test server), reading replies from alice's inbox."""
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    mailbox.imap_host, mailbox.imap_port = sieve_dovecot.host, sieve_dovecot.port
    mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
    mailbox.imap_folders = ["INBOX"]
    mailbox.save()
    return mailbox


def delivered_to_prospect(mailbox, smtp_server, dovecot: Dovecot, style: str) -> SendJob:
    """Step 1 of a two-step sequence of that style, sent by the app and delivered to the prospect's Dovecot."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600))
    Sequence.objects.filter(pk=sequence.pk).update(unsubscribe_style=style)
    enrollment = enroll(sequence, PROSPECT, first_name="Pat")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    (sent,) = smtp_server.received
    assert sent.recipients == [PROSPECT]
    dovecot.deliver(PROSPECT, sent.data, sender=sent.sender)
    assert list((dovecot.maildir(PROSPECT) / "new").iterdir()), "the email was not delivered to the prospect"
    return SendJob.objects.get(enrollment=enrollment, step__position=1)


def follow_up(job: SendJob) -> SendJob:
    return SendJob.objects.get(enrollment=job.enrollment, step__position=2)


def test_without_the_one_click_headers_pigeonhole_answers_and_the_person_is_held(
    reading_mailbox, smtp_server, sieve_dovecot, answers
):
    sent = delivered_to_prospect(reading_mailbox, smtp_server, sieve_dovecot, Sequence.UnsubscribeStyle.LINE)

    (answer,) = answers.received  # dovecot-lda hands the answer over before it exits
    message = message_from_bytes(answer.data)
    assert answer.recipients == [reading_mailbox.address]
    assert message["Auto-Submitted"] == "auto-replied (vacation)" and message["In-Reply-To"] == sent.message_id
    assert f"sent vacation response to <{reading_mailbox.address}>" in sieve_dovecot.log()
    sieve_dovecot.append("alice", "INBOX", answer.data)

    result = mailbox_poll(mailbox_id=reading_mailbox.pk)

    assert result.folders["INBOX"]["recorded"] == 1
    held = follow_up(sent)
    assert (held.state, held.scheduled_at) == (S.SCHEDULED, datetime.combine(BACK + timedelta(days=1), time(0),
                                                                             tzinfo=UTC))
    hold = TimelineEvent.objects.get(kind=Event.OUT_OF_OFFICE_HOLD, enrollment=sent.enrollment)
    assert hold.data["return_date"] == BACK.isoformat() and hold.data["sentence"] == SENTENCE
    assert Enrollment.objects.get(pk=sent.enrollment_id).status == Enrollment.Status.ACTIVE, "held, not stopped"


def test_with_the_one_click_headers_pigeonhole_sends_no_answer(reading_mailbox, smtp_server, sieve_dovecot, answers):
    sent = delivered_to_prospect(reading_mailbox, smtp_server, sieve_dovecot, Sequence.UnsubscribeStyle.HEADERS)
    scheduled = follow_up(sent).scheduled_at

    assert answers.received == []
    assert (f"discarding vacation response to mailinglist recipient <{reading_mailbox.address}>"
            in sieve_dovecot.log())
    assert mailbox_poll(mailbox_id=reading_mailbox.pk).folders["INBOX"]["recorded"] == 0
    assert follow_up(sent).scheduled_at == scheduled, "nothing came back: the follow-up keeps its time"
    assert not TimelineEvent.objects.filter(kind=Event.OUT_OF_OFFICE_HOLD).exists()
