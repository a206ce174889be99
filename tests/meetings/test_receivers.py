"""The booking webhooks over HTTP (urllib against the live server), as Calendly and Cal.com post them: what is
refused, what is recorded, what stops whom. The real send worker's side: test_worker.py."""

from __future__ import annotations

import time

import pytest
from django.db import transaction
from django.test import Client

from api.routes.replies import reply_out
from inbound.models import Conversation, InboundMessage
from inbound.replies.services import conversation_record_in_transaction
from meetings.models import BookingEvent
from sequences.booking_token import booking_token
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.meetings.conftest import receiving_url
from tests.meetings.payloads import (
    body_of,
    calcom_event,
    calcom_headers,
    calendly_event,
    calendly_headers,
    post,
)
from tests.ui.conftest import roles, users  # noqa: F401 - the UI's role fixtures

pytestmark = pytest.mark.django_db(transaction=True)
E, S = Enrollment.Status, SendJob.State


def untouched(people) -> None:
    """Nothing of the people changed: every enrollment active, every job still scheduled, nothing booked."""
    assert set(Enrollment.objects.values_list("status", flat=True)) == {E.ACTIVE}
    assert set(SendJob.objects.values_list("state", flat=True)) == {S.SCHEDULED}
    assert not TimelineEvent.objects.filter(kind__in=("meeting_booked", "meeting_canceled")).exists()
    assert not Conversation.objects.exists()


def ada_token(people) -> str:
    return booking_token(people.ada[0].contact_id)


def test_a_bad_signature_and_a_stale_one_are_refused_and_change_nothing(live_server, people, calendly):
    url = receiving_url(live_server, calendly)
    body = body_of(calendly_event("invitee.created", "ada@acme.test", token=ada_token(people)))

    status, words = post(url, body, calendly_headers(body, key="somebody-elses-key-1234567890"))
    assert status == 403 and "does not match" in words
    status, words = post(url, body, calendly_headers(body, at=int(time.time()) - 301))
    assert status == 403 and "more than 5 minutes" in words
    status, words = post(url, body, {"Content-Type": "application/json"})
    assert status == 403 and "Calendly-Webhook-Signature" in words

    untouched(people)
    assert not BookingEvent.objects.exists()  # refused requests are never stored
    calendly.refresh_from_db()
    assert calendly.last_refused_at is not None and "header" in calendly.last_refusal


def test_a_replay_of_an_event_applied_changes_nothing_again(live_server, people, calendly):
    url = receiving_url(live_server, calendly)
    body = body_of(calendly_event("invitee.created", "ada@acme.test", token=ada_token(people)))
    status, words = post(url, body, calendly_headers(body))
    assert status == 200 and "booked a meeting" in words
    stopped_at = {e.pk: e.stopped_at for e in Enrollment.objects.filter(status=E.STOPPED)}
    events = TimelineEvent.objects.count()

    # The same event, signed again within the five minutes (a replay, or Calendly's retry): recorded once.
    status, words = post(url, body, calendly_headers(body))
    assert status == 200 and words.startswith("replay: this event (invitee.created) was received already")
    assert BookingEvent.objects.count() == 1
    assert TimelineEvent.objects.count() == events
    assert {e.pk: e.stopped_at for e in Enrollment.objects.filter(status=E.STOPPED)} == stopped_at


def test_calcom_refuses_a_bad_signature_and_records_a_booking_once(live_server, people, calcom):
    url = receiving_url(live_server, calcom)
    body = body_of(calcom_event("BOOKING_CREATED", "ada@acme.test", token=ada_token(people)))
    unsigned = {"X-Cal-Signature-256": "no-secret-provided"}  # what Cal.com sends for a webhook without a secret
    for headers in (calcom_headers(body, secret="a-wrong-secret-000000"), unsigned):
        status, _ = post(url, body, headers)
        assert status == 403
    untouched(people)

    assert post(url, body, calcom_headers(body))[0] == 200
    status, words = post(url, body, calcom_headers(body))
    assert status == 200 and "replay" in words
    assert BookingEvent.objects.count() == 1
    assert TimelineEvent.objects.filter(kind="meeting_booked").count() == 1


def test_a_booking_stops_the_person_in_every_sequence_and_nobody_else(live_server, people, calcom):
    status, words = post(receiving_url(live_server, calcom), *_signed_calcom(people))
    assert status == 200
    for enrollment in people.ada:
        enrollment.refresh_from_db()
        assert (enrollment.status, enrollment.stop_reason) == (E.STOPPED, "meeting_booked")
        assert set(enrollment.jobs.values_list("state", "cancel_reason")) == {(S.CANCELED, "meeting_booked")}
    people.bob.refresh_from_db()
    assert people.bob.status == E.ACTIVE
    assert "ada@acme.test booked a meeting for 2026-12-10 15:00 UTC through Cal.com 'Demo Cal.com'" in words
    assert "found by the booking link" in words and "2 enrollments stopped" in words
    assert "no message of ours had left for them: no conversation" in words  # nothing was sent yet
    row = BookingEvent.objects.get()
    assert (row.result, row.contact.email, row.matched_by) == ("stopped", "ada@acme.test", "booking link")
    stop = TimelineEvent.objects.filter(kind="enrollment_stopped", enrollment=people.ada[0]).get()
    assert stop.data["reason"] == "meeting_booked" and "booked a meeting" in stop.data["because"]


def _signed_calcom(people, trigger="BOOKING_CREATED", **kw):
    body = body_of(calcom_event(trigger, kw.pop("email", "ada@acme.test"), token=kw.pop("token", ada_token(people)),
                                **kw))
    return body, calcom_headers(body)


def test_an_unknown_invitee_is_recorded_without_effect(live_server, people, calendly):
    url = receiving_url(live_server, calendly)
    body = body_of(calendly_event("invitee.created", "stranger@elsewhere.test"))
    status, words = post(url, body, calendly_headers(body))
    assert status == 200
    assert words.startswith("unknown invitee: no booking token") and "no contact has the address" in words
    untouched(people)
    assert BookingEvent.objects.get().result == "unknown_invitee"

    # A token we did not sign is no token: the address decides (here: nobody either).
    body = body_of(calendly_event("invitee.created", "stranger@elsewhere.test", token="1:forged-signature"))
    status, words = post(url, body, calendly_headers(body))
    assert status == 200 and "the booking link's token is not one of ours" in words
    untouched(people)


def test_without_a_token_the_address_finds_the_person_and_a_token_wins_over_it(live_server, people, calendly):
    url = receiving_url(live_server, calendly)
    body = body_of(calendly_event("invitee.created", "ADA@acme.test"))
    status, words = post(url, body, calendly_headers(body))
    assert status == 200 and "found by the address" in words
    assert set(Enrollment.objects.filter(contact__email="ada@acme.test").values_list("status", flat=True)) == {
        E.STOPPED}

    # Bob's link, booked under his assistant's address: Bob is the person.
    body = body_of(calendly_event("invitee.created", "assistant@acme.test", token=booking_token(people.bob.contact_id)))
    status, words = post(url, body, calendly_headers(body))
    assert status == 200 and "(booked as assistant@acme.test)" in words and "found by the booking link" in words
    people.bob.refresh_from_db()
    assert people.bob.stop_reason == "meeting_booked"


def test_a_cancellation_is_recorded_and_changes_nothing_else(live_server, people, calendly, calcom):
    body = body_of(calendly_event("invitee.canceled", "ada@acme.test", token=ada_token(people)))
    status, words = post(receiving_url(live_server, calendly), body, calendly_headers(body))
    assert status == 200 and "canceled a booking" in words and "nothing else changes" in words
    status, words = post(receiving_url(live_server, calcom), *_signed_calcom(people, "BOOKING_CANCELLED"))
    assert status == 200 and "canceled a booking" in words
    assert set(Enrollment.objects.values_list("status", flat=True)) == {E.ACTIVE}
    assert set(SendJob.objects.values_list("state", flat=True)) == {S.SCHEDULED}
    assert TimelineEvent.objects.filter(kind="meeting_canceled").count() == 2
    assert set(BookingEvent.objects.values_list("result", flat=True)) == {"recorded"}


def test_a_reschedule_at_calcom_is_a_booking(live_server, people, calcom):
    status, words = post(receiving_url(live_server, calcom), *_signed_calcom(people, "BOOKING_RESCHEDULED"))
    assert status == 200 and "rescheduled a meeting" in words
    assert set(Enrollment.objects.filter(contact__email="ada@acme.test").values_list("stop_reason", flat=True)) == {
        "meeting_booked"}


def test_a_ping_a_wrong_address_and_a_get(live_server, people, calcom):
    body = body_of({"triggerEvent": "PING", "createdAt": "2026-12-06T10:15:02.538Z", "payload": {}})
    assert post(receiving_url(live_server, calcom), body, calcom_headers(body)) == (
        200, "ping received: the signature checks out\n")
    status, words = post(live_server.url + "/webhooks/bookings/no-such-source/", body, calcom_headers(body))
    assert status == 404 and "no booking source" in words
    assert not BookingEvent.objects.exists()
    untouched(people)


def test_a_person_who_replied_then_booked_has_their_conversation_say_meeting_booked(live_server, people, calendly):
    first = people.ada[0]
    dispatch_due()
    job = first.jobs.get(step__position=1)
    assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
    with transaction.atomic():
        reply = InboundMessage.objects.create(
            mailbox=people.mailbox, folder="INBOX", uidvalidity=1, uid=1, message_id="<reply-1@acme.test>",
            from_address="ada@acme.test", subject="Re: Hello", kind="human_reply", reply_text="Tell me more",
            job=job, enrollment=first, correlation_rule="in_reply_to")
        conversation_record_in_transaction(row=reply)
    Conversation.objects.filter(pk=first.pk).update(handled=True)
    body = body_of(calendly_event("invitee.created", "ada@acme.test", token=ada_token(people)))
    status, words = post(receiving_url(live_server, calendly), body, calendly_headers(body))
    assert status == 200 and f"conversation #{first.pk} set to Meeting booked" in words
    conversation = Conversation.objects.get()
    assert (conversation.category, conversation.chosen, conversation.handled) == ("meeting", "meeting", False)
    assert conversation.chosen_by == "Calendly booking (Sales Calendly)"
    assert conversation.latest_id == reply.pk  # the reply stays the latest


def test_signed_bodies_of_every_wrong_shape_are_answered_in_words_never_a_5xx(live_server, people, calendly,
                                                                              calcom):
    """A signature says who sent it, not that it is well formed: the shapes a buggy or hostile sender could sign."""
    calendly_url, calcom_url = receiving_url(live_server, calendly), receiving_url(live_server, calcom)
    odd = [b"not json", b"[1, 2]", b'"text"', b"{}", b'{"event": 7}', b'{"event": "invitee.created", "payload": "x"}',
           b'{"event": "invitee.created", "payload": {"email": ["a"], "tracking": "x", "uri": 5}}',
           b'{"event": "invitee.created", "payload": {"email": "ada\\u0000@acme.test", "uri": "\\ud800"}}',
           b'{"event": "invitee.created", "payload": {"email": "' + b"x" * 5000 + b'@acme.test"}}']
    answers = [post(calendly_url, body, calendly_headers(body)) for body in odd]
    odd_calcom = [b'{"triggerEvent": "BOOKING_CREATED", "payload": {"attendees": "x", "metadata": [1]}}',
                  b'{"triggerEvent": "BOOKING_CREATED", "payload": {"attendees": [7], "uid": 5, "startTime": "x"}}']
    answers += [post(calcom_url, body, calcom_headers(body)) for body in odd_calcom]
    big = b"{" + b" " * 1_000_001 + b"}"
    answers.append(post(calendly_url, big, calendly_headers(big)))
    assert all(status < 500 for status, _ in answers), answers
    assert [status for status, _ in answers[:4]] == [400, 400, 400, 400] and answers[-1][0] == 413
    assert all(words.strip() for _, words in answers)
    untouched(people)


def test_a_conversation_made_by_a_booking_shows_in_the_inbox_and_cannot_be_answered(live_server, people, calcom,
                                                                                   users):
    for job_id in dispatch_due():  # step 1 leaves in both sequences (Ada) and the first (Bob)
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    status, words = post(receiving_url(live_server, calcom), *_signed_calcom(people))
    assert status == 200 and "set to Meeting booked" in words
    conversation = Conversation.objects.get()
    assert conversation.latest_id is None and conversation.suggested_phrase == "booked through Cal.com booking " \
                                                                               "(Demo Cal.com)"
    client = Client()
    client.force_login(users["operator"])
    listing = client.get("/replies/?category=meeting")
    assert listing.status_code == 200 and "ada@acme.test" in listing.content.decode()
    page = client.get(f"/replies/{conversation.pk}/")
    assert page.status_code == 200
    assert "They booked a meeting without writing to us" in page.content.decode()
    assert client.post(f"/replies/{conversation.pk}/category/", {"category": "interested"}).status_code == 302
    conversation.refresh_from_db()
    assert conversation.category == "interested"  # an operator's choice still wins afterwards
    response = client.post(f"/replies/{conversation.pk}/answer/", {"body": "Thanks!"})
    assert response.status_code in (302, 400) and not conversation.answers.exists()
    assert reply_out(conversation)["text"] == ""  # the API's conversation: no reply text
