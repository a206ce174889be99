"""Can't see, don't send: follow-ups wait for the mailbox to read its replies (sequences.reply_view).

Real Dovecot and a real SMTP server, the real pipeline and poller. Each guarantee is shown next to what
happens without it: the same scenario with the reply view switched off lets the follow-up leave after the
person's reply reached the inbox.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from inbound.ingest.view import folder_unread_mark
from mailboxes.imap.errors import ImapError
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import mails
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def run_due() -> dict[int, str]:
    """Every due job through the pipeline: job id -> the state its run ended in."""
    return {job_id: send_job_process(job_id=job_id, worker_id="w1").state for job_id in dispatch_due()}


def poll(mailbox):
    return mailbox_poll(mailbox_id=mailbox.pk)


def step_one_sent(mailbox, smtp_server, emails: list[str]) -> dict[str, Enrollment]:
    """The mailbox connected (its first poll), one two-step enrollment per address, step 1 sent to each;
    step 2 is due at once."""
    assert poll(mailbox).error == ""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    enrollments = {email: enroll(sequence, email) for email in emails}
    assert set(run_due().values()) == {S.SUBMITTED}
    assert len(smtp_server.received) == len(emails)
    return enrollments


def reply_from(dovecot, email: str, enrollment: Enrollment) -> None:
    step1 = enrollment.jobs.get(step__position=1)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=step1.message_id, sender=email,
                                                 body="Thanks, but we are not interested."))


def held_for_replies(job_id: int) -> bool:
    return TimelineEvent.objects.filter(job_id=job_id, kind="job_deferred", data__reason="reply_view").exists()


def view_off(settings, mailbox) -> None:
    """What the final check did before it read the reply view: the mailbox counts as reading no replies and
    sends its follow-ups anyway."""
    settings.OUTREACH_REPLY_VIEW_MAX_AGE = 10**9
    mailbox.imap_host = ""
    mailbox.follow_ups_without_reply_view = True
    mailbox.save()


@pytest.mark.parametrize("guard", ["on", "off"])
def test_a_follow_up_waits_while_the_watcher_has_heard_of_mail_it_has_not_read(imap_mailbox, dovecot, smtp_server,
                                                                              settings, guard):
    enrollments = step_one_sent(imap_mailbox, smtp_server, ["ada@example.com"])
    reply_from(dovecot, "ada@example.com", enrollments["ada@example.com"])
    # The watcher hears EXISTS and marks the folder before it asks for the poll; the poll has not run yet.
    folder_unread_mark(mailbox_id=imap_mailbox.pk, folder="INBOX")
    if guard == "off":
        view_off(settings, imap_mailbox)
    outcome = run_due()
    if guard == "off":
        assert list(outcome.values()) == [S.SUBMITTED] and len(smtp_server.received) == 2  # after her reply
        return
    (job_id,) = outcome
    assert outcome[job_id] == "deferred" and held_for_replies(job_id)
    assert len(smtp_server.received) == 1
    # The poll reads the reply: it stops her, cancels the held follow-up and lifts the mark.
    assert poll(imap_mailbox).error == ""
    enrollment = Enrollment.objects.get(pk=enrollments["ada@example.com"].pk)
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    assert SendJob.objects.get(pk=job_id).state == S.CANCELED
    assert ImapCursor.objects.get(mailbox=imap_mailbox, folder="INBOX").unread_since is None
    assert len(smtp_server.received) == 1


@pytest.mark.parametrize("guard", ["on", "off"])
def test_a_mailbox_that_cannot_read_its_replies_holds_follow_ups_until_it_can(imap_mailbox, dovecot, smtp_server,
                                                                            settings, monkeypatch, guard):
    """The IMAP password is revoked after step 1; one of three people replies during the outage. Nobody gets
    step 2 while the mailbox is blind; once it reads again, the replier is stopped and the others get theirs."""
    people = ["ada@example.com", "bob@example.com", "cy@example.com"]
    enrollments = step_one_sent(imap_mailbox, smtp_server, people)
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "revoked")
    with pytest.raises(ImapError):
        poll(imap_mailbox)
    reply_from(dovecot, "bob@example.com", enrollments["bob@example.com"])
    # An outage longer than the view may be old: the read-through time stayed where the last good poll left it.
    ImapCursor.objects.filter(mailbox=imap_mailbox).update(
        read_through=ImapCursor.objects.get(mailbox=imap_mailbox).read_through - timedelta(hours=1))
    if guard == "off":
        view_off(settings, imap_mailbox)
        assert set(run_due().values()) == {S.SUBMITTED}
        assert "bob@example.com" in [m.recipients[0] for m in smtp_server.received[3:]]  # after his reply
        return
    outcome = run_due()
    assert set(outcome.values()) == {"deferred"} and all(held_for_replies(job_id) for job_id in outcome)
    assert len(smtp_server.received) == 3
    deferred = TimelineEvent.objects.filter(kind="job_deferred", data__reason="reply_view").first()
    # The refusal is the reason, in the server's words: not the age of the last read.
    assert deferred.data["detail"].startswith("waiting to read replies: credentials refused since")
    assert "AUTHENTICATIONFAILED" in deferred.data["detail"] and "revoked" not in deferred.data["detail"]

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")  # the operator fixed it ...
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=db_now())  # ... and the interval passed
    assert poll(imap_mailbox).error == ""
    SendJob.objects.filter(state=S.SCHEDULED).update(scheduled_at=db_now())  # their re-check is due now
    assert set(run_due().values()) == {S.SUBMITTED}
    assert sorted(m.recipients[0] for m in smtp_server.received[3:]) == ["ada@example.com", "cy@example.com"]
    assert Enrollment.objects.get(pk=enrollments["bob@example.com"].pk).stop_reason == "replied"


def test_the_first_message_to_a_new_person_needs_no_reply_view(imap_mailbox, smtp_server):
    """Nothing of ours went to the person: there is no reply to wait for, even before the first poll."""
    enroll(make_sequence(mailbox=imap_mailbox, steps=2, waits=(0, 3600)), "new@example.com")
    assert list(run_due().values()) == [S.SUBMITTED]


def test_a_mailbox_that_reads_no_replies_sends_follow_ups_only_when_allowed(mailbox, smtp_server):
    mailbox.follow_ups_without_reply_view = False
    mailbox.save()
    enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 0)), "ada@example.com")
    assert list(run_due().values()) == [S.SUBMITTED]
    (job_id, state), = run_due().items()
    assert state == "deferred" and held_for_replies(job_id)
    event = TimelineEvent.objects.filter(job_id=job_id, kind="job_deferred").last()
    assert event.data["detail"].startswith("this mailbox reads no replies")

    mailbox.follow_ups_without_reply_view = True
    mailbox.save()
    SendJob.objects.filter(pk=job_id).update(scheduled_at=db_now())  # due again now, not in an hour
    assert list(run_due().values()) == [S.SUBMITTED]


def test_the_authorization_records_how_fresh_the_view_was(imap_mailbox, smtp_server):
    step_one_sent(imap_mailbox, smtp_server, ["ada@example.com"])
    assert poll(imap_mailbox).error == ""
    (job_id,) = run_due()
    event = TimelineEvent.objects.get(job_id=job_id, kind="job_authorized")
    assert 0 <= event.data["replies_read_seconds_before"] < 60


def test_the_pages_say_when_a_mailbox_is_not_reading_its_replies(imap_mailbox, dovecot, smtp_server, monkeypatch,
                                                                 client, django_user_model):
    """The dashboard and the mailboxes page say the view in words: read recently, or not reading since T with
    its follow-ups held, and the server's words for why."""
    client.force_login(django_user_model.objects.create_superuser("boss", "boss@example.com", "pw"))
    assert poll(imap_mailbox).error == ""
    page = client.get("/mailboxes/").content.decode()
    assert "Replies: replies read up to" in page and "follow-ups held" not in page

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "revoked")
    with pytest.raises(ImapError):
        poll(imap_mailbox)
    ImapCursor.objects.filter(mailbox=imap_mailbox).update(read_through=db_now() - timedelta(hours=2))
    for url in ("/", "/mailboxes/"):
        page = client.get(url).content.decode()
        assert "not reading replies since" in page and "follow-ups held" in page, url
        assert "revoked" not in page  # the password itself never
