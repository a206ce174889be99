"""A held email writes one timeline event per hold, not three every few seconds.

The final check looks at a held job again every few seconds (the reply view) or every minute (a blocked
mailbox): each look is a dispatch, a claim and a deferral. While they find the same hold they write nothing; a
new reason writes a new hold, and the look that lets the job go writes its dispatch and claim before the
authorization, so the job's timeline still shows who claimed what it sent. Real SMTP server, the real pipeline.
"""

from __future__ import annotations

import pytest

from db.clock import db_now
from inbound.ingest.view import folder_read_through
from mailboxes.models import ImapCursor, Mailbox
from sequences.models import SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.mailbox_health import mailbox_block
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def look_again(job_id: int) -> str:
    """The job's next check is due: the dispatcher and a worker take it again; the pipeline's outcome."""
    SendJob.objects.filter(pk=job_id).update(scheduled_at=db_now())
    assert dispatch_due() == [job_id]
    return send_job_process(job_id=job_id, worker_id="w2").state


def timeline(job_id: int) -> list[tuple[str, str]]:
    return [(kind, (data or {}).get("reason", "")) for kind, data in
            TimelineEvent.objects.filter(job_id=job_id).order_by("at", "id").values_list("kind", "data")]


def test_a_held_follow_up_writes_one_event_per_hold_and_its_claim_when_it_leaves(smtp_server):
    # An IMAP mailbox whose reply folder has never been read: its follow-ups are held for the reply view.
    mailbox = MailboxFactory(smtp_port=smtp_server.port, imap_host="127.0.0.1", imap_port=9,
                             follow_ups_without_reply_view=False)
    enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 0)), "ada@example.com")
    (first,) = dispatch_due()
    assert send_job_process(job_id=first, worker_id="w1").state == S.SUBMITTED  # a first message needs no view
    (follow_up,) = dispatch_due()
    assert send_job_process(job_id=follow_up, worker_id="w1").state == "deferred"
    held = [("job_scheduled", "previous_step_submitted"), ("job_queued", ""), ("job_claimed", ""),
            ("job_deferred", "reply_view")]
    assert timeline(follow_up) == held

    for _ in range(9):  # three minutes of looks every 20 s
        assert look_again(follow_up) == "deferred"
    assert timeline(follow_up) == held, "the same hold: nothing new to say"
    job = SendJob.objects.get(pk=follow_up)
    assert job.state == S.SCHEDULED and job.attempts == 0, "a look is not a sending attempt"

    # The hold's reason changes (the last poll failed, with the server's words): one new hold.
    Mailbox.objects.filter(pk=mailbox.pk).update(last_poll_error="ImapConnectionError: connection refused")
    for _ in range(3):
        assert look_again(follow_up) == "deferred"
    changed = held + [("job_queued", ""), ("job_claimed", ""), ("job_deferred", "reply_view")]
    assert timeline(follow_up) == changed
    words = [data["detail"] for data in TimelineEvent.objects.filter(job_id=follow_up, kind="job_deferred")
             .order_by("at", "id").values_list("data", flat=True)]
    assert words[0] == "waiting to read replies: the reply folders have not all been read yet"
    assert words[1].endswith("(ImapConnectionError: connection refused)")

    # The folder is read: the next look sends, and the timeline shows the claim that did it.
    ImapCursor.objects.create(mailbox=mailbox, folder="INBOX")
    folder_read_through(mailbox_id=mailbox.pk, folder="INBOX", at=db_now())
    assert look_again(follow_up) == S.SUBMITTED
    events = list(TimelineEvent.objects.filter(job_id=follow_up).order_by("at", "id"))
    assert [(e.kind, (e.data or {}).get("reason", "")) for e in events] == changed + [
        ("job_queued", ""), ("job_claimed", ""), ("job_authorized", ""), ("job_submitted", "")]
    queued, claimed, authorized = events[-4:-1]
    assert (queued.data["after_hold"], claimed.worker_id, claimed.version_seen + 1) == (True, "w2",
                                                                                          authorized.version_seen)
    job.refresh_from_db()
    assert queued.version_seen + 2 == claimed.version_seen + 1 == authorized.version_seen == job.version - 2
    assert claimed.data["moved_at"] == job.claimed_at.isoformat()
    assert len(smtp_server.received) == 2


def test_a_blocked_mailbox_holds_its_emails_with_one_event_each(smtp_server):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    enroll(make_sequence(mailbox=mailbox, steps=1), "bob@example.com")
    assert mailbox_block(mailbox_id=mailbox.pk, reason="535 5.7.8 authentication failed")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == "deferred"
    for _ in range(4):  # a look every minute
        assert look_again(job_id) == "deferred"
    assert timeline(job_id) == [("job_scheduled", "enrolled"), ("job_queued", ""), ("job_claimed", ""),
                                ("job_deferred", "mailbox_blocked")]
    assert SendJob.objects.get(pk=job_id).error == "mailbox blocked: 535 5.7.8 authentication failed"
    assert smtp_server.received == []
