"""Held follow-ups follow the fix: when the cause of a reply-view hold is lifted, the jobs it held are due at once.

The lift and the release are one transaction (an operator's change of the mailbox's reply-view settings, the
view reading again); then the real dispatcher and an RQ worker take the jobs, and the final check decides: it
sends, or holds again with the reason of the moment. A job held since for another reason (out of office) keeps
its time. Real SMTP and Dovecot servers, the real pipeline.
"""

from __future__ import annotations

from datetime import timedelta

import django_rq
import pytest
from django.db import transaction
from rq import SimpleWorker
from rq.job import Job

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from mailboxes.imap.errors import ImapError
from mailboxes.models import ImapCursor, Mailbox
from sequences.models import Enrollment, OperatorAction, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.holds import ReturnStated, person_hold_for_auto_reply
from sequences.services.mailbox_setup import mailbox_save
from sequences.services.reply_view_episodes import reply_view_episodes_sweep
from sequences.services.sending import dispatch_due
from sequences.tasks import dispatch
from tests.factories import enroll, make_sequence
from ui.hold_words import holds_of

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def run_due() -> dict[int, str]:
    return {job_id: send_job_process(job_id=job_id, worker_id="w1").state for job_id in dispatch_due()}


def dispatcher_and_worker() -> None:
    """One dispatcher pass (the scheduler's task), then an RQ worker runs what it queued."""
    dispatch()
    queue = django_rq.get_queue("send")
    worker = SimpleWorker([queue], connection=queue.connection)
    for job_id in queue.job_ids:
        job = Job.fetch(job_id, connection=queue.connection)
        queue.remove(job)
        worker.execute_job(job, queue)


def held(emails: list[str], mailbox, smtp_server) -> dict[str, SendJob]:
    """Step 1 sent to each person; each one's step 2 held by the final check for the reply view."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    for email in emails:
        enroll(sequence, email)
    assert set(run_due().values()) == {S.SUBMITTED}
    assert set(run_due().values()) == {"deferred"}
    jobs = {job.enrollment.contact.email: job for job in
            SendJob.objects.filter(state=S.SCHEDULED).select_related("enrollment__contact")}
    assert sorted(jobs) == sorted(emails) and len(smtp_server.received) == len(emails)
    assert all(job.scheduled_at > db_now() for job in jobs.values())
    return jobs


def due_now(job: SendJob) -> bool:
    job.refresh_from_db()
    return job.state == S.SCHEDULED and job.scheduled_at <= db_now() and job.error == ""


def save(mailbox, **fields) -> None:
    """The mailbox form's save (its connection check passed)."""
    mailbox_save(mailbox_id=mailbox.pk, fields=fields, sealed={}, actor="boss", check="ok", check_passed=True)


def test_allowing_follow_ups_without_a_reply_view_releases_the_held_ones_at_once(mailbox, smtp_server, redis_conn):
    mailbox.follow_ups_without_reply_view = False
    mailbox.save()
    jobs = held(["ada@example.com", "bob@example.com", "cy@example.com"], mailbox, smtp_server)
    words = holds_of(list(jobs.values()))
    assert "tick \"Follow-ups without reply view\" on its Edit page" in words[jobs["ada@example.com"].pk].text
    # Cy's auto-reply says she is away: her follow-up waits for her return, whatever the mailbox's settings.
    now = db_now()
    with transaction.atomic():
        person_hold_for_auto_reply(addresses=["cy@example.com"], received=now,
                                   found=ReturnStated(date=(now + timedelta(days=5)).date(), sentence="back in 5 days"),
                                   source="inbound:1")
    away_until = SendJob.objects.get(pk=jobs["cy@example.com"].pk).scheduled_at

    save(mailbox, follow_ups_without_reply_view=True)

    assert due_now(jobs["ada@example.com"]) and due_now(jobs["bob@example.com"])
    assert holds_of([jobs["ada@example.com"]]) == {}  # the page no longer asks to allow what was allowed
    assert SendJob.objects.get(pk=jobs["cy@example.com"].pk).scheduled_at == away_until
    released = TimelineEvent.objects.filter(kind="job_scheduled", data__reason="mailbox_changed")
    assert sorted(released.values_list("job_id", flat=True)) == sorted(
        [jobs["ada@example.com"].pk, jobs["bob@example.com"].pk])
    assert OperatorAction.objects.get(action="mailbox_changed").result["released"] == 2

    dispatcher_and_worker()
    assert sorted(m.recipients[0] for m in smtp_server.received[3:]) == ["ada@example.com", "bob@example.com"]
    assert SendJob.objects.get(pk=jobs["cy@example.com"].pk).state == S.SCHEDULED


def test_a_change_that_does_not_lift_the_cause_holds_again_with_the_reason_of_the_moment(mailbox, smtp_server,
                                                                                        redis_conn):
    mailbox.follow_ups_without_reply_view = False
    mailbox.save()
    job = held(["ada@example.com"], mailbox, smtp_server)["ada@example.com"]
    before = SendJob.objects.get(pk=job.pk).scheduled_at

    save(mailbox, reply_view_max_age=600)  # still no IMAP, still not allowed: released, and the check decides

    assert due_now(job)
    dispatcher_and_worker()
    job.refresh_from_db()
    assert job.state == S.SCHEDULED and job.scheduled_at >= before and len(smtp_server.received) == 1
    again = TimelineEvent.objects.filter(job=job, kind="job_deferred").order_by("pk").last()
    assert again.data["reason"] == "reply_view" and again.data["detail"].startswith("this mailbox reads no replies")


def test_a_reply_view_that_reads_again_releases_the_held_follow_ups(imap_mailbox, smtp_server, monkeypatch,
                                                                    settings, redis_conn):
    """The IMAP password is revoked for over an hour; when the mailbox reads again, the sweep that ends the blind
    episode makes its held follow-ups due in the same transaction."""
    settings.OUTREACH_REPLY_VIEW_RECHECK_SECONDS = 600  # the held jobs' own next check is well after the test
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "revoked")
    with pytest.raises(ImapError):
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    ImapCursor.objects.filter(mailbox=imap_mailbox).update(read_through=db_now() - timedelta(hours=1))
    reply_view_episodes_sweep()  # blind
    jobs = held(["ada@example.com", "bob@example.com"], imap_mailbox, smtp_server)

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")  # the operator fixed it
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=None)  # ... and the interval passed
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    assert all(not due_now(job) for job in jobs.values())  # reading again alone does not move them

    reply_view_episodes_sweep()

    assert all(due_now(job) for job in jobs.values())
    restored = TimelineEvent.objects.get(kind="mailbox_reply_view_restored")
    assert restored.data["released"] == 2
    dispatcher_and_worker()
    assert sorted(m.recipients[0] for m in smtp_server.received[2:]) == ["ada@example.com", "bob@example.com"]
    assert Enrollment.objects.filter(status=Enrollment.Status.COMPLETED).count() == 2


def test_a_configuration_file_that_allows_follow_ups_releases_the_held_ones(mailbox, smtp_server, tmp_path):
    from django.core.management import call_command

    mailbox.follow_ups_without_reply_view = False
    mailbox.save()
    jobs = held(["ada@example.com"], mailbox, smtp_server)
    path = tmp_path / "mailboxes.toml"
    path.write_text(f'[[mailbox]]\nname = "{mailbox.name}"\naddress = "{mailbox.address}"\n'
                    "follow_ups_without_reply_view = true\n")
    call_command("load_sequences", str(path), stdout=open(tmp_path / "out", "w"))
    assert due_now(jobs["ada@example.com"])
    assert run_due() == {jobs["ada@example.com"].pk: S.SUBMITTED}
