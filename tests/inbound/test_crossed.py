"""A follow-up that crossed a reply, said honestly, and the note that excuses it (inbound.replies.crossed).

Live: the processes `scripts/run` starts (proving.harness.backlog: the send and ingest workers, the scheduler,
the IDLE watcher), a real Dovecot, and an SMTP server that takes 3 s to answer DATA. Three people were mailed
step 1; their follow-ups are due:
- person 0 answers while their follow-up is in its 3 s DATA: it crossed the reply, and the pages say so;
- person 2 answers at the same moment, while their follow-up is still queued: it never leaves, nothing crossed;
- person 1 answers after their follow-up has left: they may have read it, nothing crossed.
The one-click note then reaches the SMTP server threaded on person 0's reply, from the mailbox that received it.
"""

from __future__ import annotations

import os
import tomllib

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from inbound.models import Answer, Conversation, InboundMessage
from inbound.replies.crossed import crossed_counts, crossed_note_send, enrollment_crossings, reply_crossings
from proving.harness import backlog, data
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import database_url, wait_for
from sequences.config.apply import config_apply
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.crossing import Crossed, crossed
from sequences.ledger import Why, send_ledger_rows
from sequences.models import CROSSED_NOTE, Enrollment, SendJob, Sequence
from sequences.reasons import Reason
from sequences.services.common import ServiceError
from ui import results

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
TAG = "cx"
NOTE = "Sorry — our automatic follow-up crossed your reply. Please disregard it; we read yours."


@pytest.fixture
def slow_smtp():
    with SmtpServer(behaviour=Behaviour(data_delay=3.0)) as server:
        yield server


@pytest.fixture
def env(redis_conn):
    return dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
                OUTREACH_SECRET_TEST_IMAP="alicepw", OUTREACH_REPLY_VIEW_RECHECK_SECONDS="2", PYTHONUNBUFFERED="1")


def _page(client: Client, name: str, pk: int) -> str:
    response = client.get(reverse(name, args=[pk]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.slow
def test_a_reply_during_a_3s_data_shows_crossed_and_the_note_leaves_threaded_on_it(dovecot, slow_smtp, env, tmp_path,
                                                                                   django_user_model):
    mailbox = data.mailbox_create(
        name="crossing", address="sales0@bench.outreach.test", display_name="Sam", smtp_port=slow_smtp.port,
        daily_cap=10**6, imap_host=dovecot.host, imap_port=dovecot.port, imap_username="alice",
        imap_password_env="OUTREACH_SECRET_TEST_IMAP", imap_folders=["INBOX"])
    jobs = backlog.followups_waiting(mailbox=mailbox, count=3, tag=TAG)
    sequence = Sequence.objects.get(pk=jobs[0].step.sequence_id)
    Sequence.objects.filter(pk=sequence.pk).update(crossed_note=NOTE)
    with backlog.processes("scripts/run", mailbox=mailbox, env=env, log_dir=tmp_path):
        backlog.release(jobs)
        wait_for(lambda: jobs[0].message_id in slow_smtp.arrived_ids(), timeout=30,
                 what="person 0's follow-up in its DATA")
        assert SendJob.objects.get(pk=jobs[0].pk).state == S.AUTHORIZED  # past the final check, not yet left
        assert SendJob.objects.get(pk=jobs[2].pk).state in (S.QUEUED, S.SCHEDULED)
        backlog.reply_append(dovecot, "alice", tag=TAG, index=0)
        backlog.reply_append(dovecot, "alice", tag=TAG, index=2)
        wait_for(lambda: SendJob.objects.filter(pk=jobs[1].pk, state=S.SUBMITTED).exists(), timeout=60,
                 what="person 1's follow-up to leave")
        backlog.reply_append(dovecot, "alice", tag=TAG, index=1)
        wait_for(lambda: Enrollment.objects.filter(pk__in=[j.enrollment_id for j in jobs],
                                                   status=Enrollment.Status.STOPPED).count() == 3
                 and not SendJob.objects.filter(pk__in=[j.pk for j in jobs],
                                                state__in=(S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)).exists(),
                 timeout=60, what="the three people stopped and their follow-ups decided")

    crossing_job, after_job, before_job = (SendJob.objects.get(pk=jobs[i].pk) for i in (0, 1, 2))
    assert crossing_job.state == S.SUBMITTED and after_job.state == S.SUBMITTED
    assert (before_job.state, before_job.cancel_reason) == (S.CANCELED, Reason.REPLIED)
    reply = {i: InboundMessage.objects.get(enrollment_id=jobs[i].enrollment_id, duplicate_of=None) for i in (0, 1, 2)}
    assert reply[0].internaldate < crossing_job.submitted_at  # it reached the inbox before our message left
    assert reply[1].internaldate >= after_job.submitted_at.replace(microsecond=0)

    # The conversation and the enrollment say it, in the words, with the record's times.
    admin = django_user_model.objects.create_superuser("olga", "olga@acme.test", "pw", first_name="Olga")
    client = Client()
    client.force_login(admin)
    said = (f"Our follow-up crossed this reply — it left at {crossing_job.submitted_at:%H:%M:%S}, the reply reached "
            f"the inbox at {reply[0].internaldate:%H:%M:%S}")
    conversation = _page(client, "reply_detail", jobs[0].enrollment_id)
    assert said in conversation and 'id="crossed-note-' in conversation
    assert said in _page(client, "enrollment_detail", jobs[0].enrollment_id)
    for i in (1, 2):  # a reply nothing crossed: nothing said, nothing offered
        for name in ("reply_detail", "enrollment_detail"):
            page = _page(client, name, jobs[i].enrollment_id)
            assert "crossed" not in page.replace("Crossed a reply", ""), (i, name)

    # One definition: the pages, the results and the send ledger name the same message, and only it.
    (only,) = enrollment_crossings(jobs[0].enrollment_id)
    assert only.job_id == crossing_job.pk and only.inbound_id == reply[0].pk
    assert only.how == crossed(authorized_at=crossing_job.authorized_at, submitted_at=crossing_job.submitted_at,
                               stop_at=only.stop_at, received_at=reply[0].internaldate)
    assert reply_crossings(Conversation.objects.get(pk=jobs[0].enrollment_id)) == {reply[0].pk: [only]}
    assert not enrollment_crossings(jobs[1].enrollment_id) and not enrollment_crossings(jobs[2].enrollment_id)
    ledger = {row.job: row for row in send_ledger_rows(sequence_id=sequence.pk)}
    assert [job for job, row in ledger.items() if row.reason == Why.CROSSED] == [crossing_job.pk]
    assert ledger[crossing_job.pk].stop_at == only.stop_at
    step2 = sequence.steps.get(position=2)
    assert crossed_counts(sequence.steps.all()) == {step2.pk: 1}
    assert dict(results.step_results(sequence))[2].crossed == 1
    assert results.sequence_counts(Sequence.objects.filter(pk=sequence.pk))[sequence.pk].crossed == 1

    # One click: the note leaves from the mailbox that received the reply, threaded on it.
    before = len(slow_smtp.received)
    response = client.post(reverse("reply_crossed_note", args=[jobs[0].enrollment_id]), {"reply": reply[0].pk})
    assert response.status_code == 302
    assert len(slow_smtp.received) == before + 1
    note = slow_smtp.received[-1]
    message = note.message
    assert message["In-Reply-To"] == reply[0].message_id
    assert reply[0].message_id in message["References"]
    assert (note.sender, note.recipients) == (mailbox.address, [f"p0.{TAG}@prospects.test"])
    assert message["Subject"] == "Re: Quick question, Ada"
    assert message.get_payload(decode=True).decode().replace("\r\n", "\n") == f"{NOTE}\n\nOlga\n"
    answer = Answer.objects.get(conversation_id=jobs[0].enrollment_id)
    assert (answer.state, answer.in_reply_to_id, answer.mailbox_id) == (Answer.State.SUBMITTED, reply[0].pk,
                                                                        mailbox.pk)
    conversation = _page(client, "reply_detail", jobs[0].enrollment_id)
    assert f'id="crossed-note-sent-{reply[0].pk}"' in conversation and 'id="crossed-note-' + str(reply[0].pk) + '"' \
        not in conversation
    # Never twice, and never for a reply nothing crossed.
    with pytest.raises(ServiceError, match="sent for this reply already"):
        crossed_note_send(conversation_id=jobs[0].enrollment_id, reply_id=reply[0].pk, actor="olga")
    with pytest.raises(ServiceError, match="nothing to excuse"):
        crossed_note_send(conversation_id=jobs[1].enrollment_id, reply_id=reply[1].pk, actor="olga")
    assert len(slow_smtp.received) == before + 1


# --- the predicate, and the sequence's note in files and the editor -----------------------------------------------


def test_the_crossed_predicate_is_the_ledgers(db):
    from datetime import UTC, datetime, timedelta

    t = datetime(2025, 5, 2, 10, 2, 11, tzinfo=UTC)
    s = timedelta(seconds=1)
    # Stop committed while the message was being handed off.
    assert crossed(authorized_at=t, submitted_at=t + 3 * s, stop_at=t + s, received_at=None) == Crossed.WHILE_HANDED_OFF
    assert crossed(authorized_at=t, submitted_at=None, stop_at=t + s, received_at=None) == Crossed.WHILE_HANDED_OFF
    # The reply reached the inbox before the message left, its stop committed after: during DATA, or before the
    # final check.
    assert crossed(authorized_at=t, submitted_at=t + 3 * s, stop_at=t + 9 * s, received_at=t + s) == Crossed.AFTER_REPLY
    assert crossed(authorized_at=t, submitted_at=t + s, stop_at=t + 9 * s, received_at=t - s) == Crossed.AFTER_REPLY
    # Not crossed: the stop came first (the message was held back), or the reply came after the message left.
    assert crossed(authorized_at=t + s, submitted_at=t + 2 * s, stop_at=t, received_at=t - s) is None
    assert crossed(authorized_at=t, submitted_at=t + s, stop_at=t + 9 * s, received_at=t + 2 * s) is None
    # INTERNALDATE says the whole second: a reply of the second the message left may have come after it.
    assert crossed(authorized_at=t, submitted_at=t + 0.9 * s, stop_at=t + 9 * s, received_at=t) is None
    assert crossed(authorized_at=t, submitted_at=t + s, stop_at=t + 9 * s, received_at=t) == Crossed.AFTER_REPLY
    assert crossed(authorized_at=None, submitted_at=None, stop_at=t, received_at=t) is None


CONFIG = """
[[mailbox]]
name = "relay"
address = "sales@acme.test"
smtp = {{ host = "127.0.0.1", port = 2525, security = "none" }}

[[sequence]]
name = "Intro"
mailbox = "relay"
{note}

[[sequence.step]]
subject = "Hello"
body = "Hello"
"""


def test_the_crossed_note_is_set_in_files_and_exported_when_not_the_default(db):
    config_apply(parse(CONFIG.format(note="")))
    intro = Sequence.objects.get(name="Intro")
    assert intro.crossed_note == CROSSED_NOTE
    assert "crossed_note" not in sequence_export_toml(intro)

    config_apply(parse(CONFIG.format(note='crossed_note = """\n  Sorry — ours crossed yours.\nDisregard it.\n"""')))
    intro.refresh_from_db()
    assert intro.crossed_note == "Sorry — ours crossed yours.\nDisregard it."
    exported = tomllib.loads(sequence_export_toml(intro))
    assert exported["sequence"][0]["crossed_note"] == intro.crossed_note

    config_apply(parse(CONFIG.format(note="")))  # a file without the key leaves it as it is
    intro.refresh_from_db()
    assert intro.crossed_note.startswith("Sorry")
    with pytest.raises(ConfigError, match=r"sequence\[0\].crossed_note \(line 10\): must not be empty"):
        parse(CONFIG.format(note='crossed_note = "  "'))


def test_the_sequence_editor_sets_the_crossed_note(db, django_user_model):
    from tests.factories import MailboxFactory, make_sequence

    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, waits=(0,))
    admin = django_user_model.objects.create_superuser("olga", "olga@acme.test", "pw")
    client = Client()
    client.force_login(admin)
    form = client.get(reverse("sequence_edit", args=[sequence.pk])).content.decode()
    assert "Note when a follow-up crossed a reply" in form and CROSSED_NOTE in form
    posted = {"name": sequence.name, "mailbox": sequence.mailbox_id, "unsubscribe_style": "headers",
              "booking_url": "", "crossed_note": "Ours crossed yours: please disregard it."}
    assert client.post(reverse("sequence_edit", args=[sequence.pk]), posted).status_code == 302
    sequence.refresh_from_db()
    assert sequence.crossed_note == "Ours crossed yours: please disregard it."
    refused = client.post(reverse("sequence_edit", args=[sequence.pk]), posted | {"crossed_note": "x" * 2001})
    assert refused.status_code == 400
    sequence.refresh_from_db()
    assert sequence.crossed_note == "Ours crossed yours: please disregard it."
