"""The incident page orders causes by what really allowed a send: a reply received but not yet committed first,
a stale (or absent) reply view next; a pause lifted before the job existed is no guard violation.

Built through the real services and the real ingestion's record path (no network: the transitions of the
pipeline, as tests/ui/test_operations.py drives them)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from db.clock import db_now
from inbound.ingest.record import inbound_record
from inbound.ingest.view import folder_read_through
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.models import ImapCursor
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim, send_job_record_submitted
from sequences.services.stops import sequence_pause, sequence_resume
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db


def submit(job_id: int) -> None:
    job = send_job_claim(job_id=job_id, worker_id="w1")
    assert send_job_authorize(job_id=job_id, worker_id="w1", version=job.version).outcome == "authorized"
    assert send_job_record_submitted(job_id=job_id, worker_id="w1", smtp_reply="250 2.0.0 Ok: queued")


def assistant_reply(step1: SendJob, *, received, uid: int = 1):
    """The assistant answers in the thread of step 1 (In-Reply-To), received at `received`; recorded now."""
    raw = (f"From: Assistant <assistant@acme.test>\r\nSubject: Re: Hello\r\nMessage-ID: <r{step1.pk}@acme.test>\r\n"
           f"In-Reply-To: {step1.message_id}\r\n\r\nPia is not interested, thanks.\r\n").encode()
    fetched = FetchedMessage(uid=uid, internaldate=received, raw=raw, size=len(raw), flags=())
    return inbound_record(mailbox_id=step1.enrollment.sequence.mailbox_id, folder="INBOX", uidvalidity=1,
                          fetched=fetched)


def follow_up_sent_before_the_reply_was_committed(mailbox, *, view: bool) -> tuple[Enrollment, SendJob]:
    """The sequence paused and resumed before step 2 existed; step 1 sent; the assistant's reply reaches the
    inbox; step 2 passes its final check (the reply not yet read); then the reply is committed."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    person = enroll(sequence, "p03@acme.test", first_name="Pia")
    sequence_pause(sequence_id=sequence.pk, actor="ops")
    sequence_resume(sequence_id=sequence.pk, actor="ops")
    (step1_id,) = dispatch_due()
    submit(step1_id)
    if view:  # the replies were read through two seconds before the reply arrived
        ImapCursor.objects.create(mailbox=mailbox, folder="INBOX")
        folder_read_through(mailbox_id=mailbox.pk, folder="INBOX", at=db_now() - timedelta(seconds=2))
    received = db_now()
    (step2_id,) = dispatch_due()
    submit(step2_id)
    step1 = SendJob.objects.select_related("enrollment__sequence").get(pk=step1_id)
    assert "stopped (replied)" in assistant_reply(step1, received=received).effect
    return person, SendJob.objects.get(pk=step2_id)


def test_a_reply_not_yet_committed_comes_first_then_no_view_and_a_lifted_pause_is_no_violation(client, users):
    mailbox = MailboxFactory()  # reads no replies; its follow-ups are allowed without a view
    person, step2 = follow_up_sent_before_the_reply_was_committed(mailbox, view=False)
    client.force_login(users["staff"])
    response = client.get(reverse("incident_job", args=[step2.pk]))
    html = response.content.decode()

    verdict = response.context["verdict"]
    assert verdict["tone"] == "cannot-recall", verdict["text"]
    assert "Guard violation" not in html
    assert [c.tone for c in response.context["causes"]] == ["reply-pending", "stale-view", "not-a-cause"]
    pending, view, lifted = response.context["causes"]
    assert "assistant@acme.test" in pending.text and "the final check could not see it" in pending.text
    assert "no reply view" in view.text
    assert lifted.text.startswith(f"Sequence paused ({person.sequence.name})")
    assert "before this job existed" in lifted.text
    assert html.index('id="causes"') < html.index("<h2>Picture</h2>")
    # The stop names who replied, on the enrollment page and its timeline.
    because = TimelineEvent.objects.get(enrollment=person, kind="enrollment_stopped").data["because"]
    assert because.startswith("assistant@acme.test replied for p03@acme.test in sequence")
    page = client.get(reverse("enrollment_detail", args=[person.pk])).content.decode()
    assert "Stopped because assistant@acme.test replied for p03@acme.test" in page


def test_the_page_shows_the_reply_views_age_at_the_authorization(client, users, settings):
    settings.OUTREACH_REPLY_VIEW_MAX_AGE = 300
    mailbox = MailboxFactory(imap_host="127.0.0.1", imap_username="alice", follow_ups_without_reply_view=False)
    _, step2 = follow_up_sent_before_the_reply_was_committed(mailbox, view=True)
    client.force_login(users["staff"])
    response = client.get(reverse("incident_job", args=[step2.pk]))

    age = TimelineEvent.objects.get(job=step2, kind="job_authorized").data["replies_read_seconds_before"]
    view = response.context["reply_view"]
    assert view.age == age and not view.stale and view.max_age == 300
    assert [c.tone for c in response.context["causes"]] == ["reply-pending", "not-a-cause"]
    assert "The reply view had read the folders only through" in response.context["causes"][0].text
    assert "(max age 300 s)" in response.content.decode().split('id="reply-view-age"')[1].split("</dd>")[0]
    # Read against a max age shorter than the view's age, the same view is stale, and says so next.
    settings.OUTREACH_REPLY_VIEW_MAX_AGE = 1
    response = client.get(reverse("incident_job", args=[step2.pk]))
    assert [c.tone for c in response.context["causes"]] == ["reply-pending", "stale-view", "not-a-cause"]
    assert response.context["causes"][1].title == "Stale reply view" and "(max age 1 s: stale)" in (
        response.context["causes"][1].text)


def test_a_pause_still_in_force_at_the_final_check_is_a_guard_violation(client, users):
    """The same page still says "Guard violation" when a stop in force preceded the authorization."""
    mailbox = MailboxFactory()
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enroll(sequence, "p04@acme.test")
    (job_id,) = dispatch_due()
    submit(job_id)
    # What a broken guard would leave: the pause's event committed before the authorization it did not stop.
    authorized_at = SendJob.objects.get(pk=job_id).authorized_at
    TimelineEvent.objects.create(kind="sequence_paused", data={"sequence": sequence.name},
                                 at=authorized_at - timedelta(milliseconds=1), version_seen=1)
    client.force_login(users["staff"])
    response = client.get(reverse("incident_job", args=[job_id]))
    assert response.context["verdict"]["tone"] == "violation"
    assert [c.tone for c in response.context["causes"]] == ["violation"]
