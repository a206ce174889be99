"""The replies inbox: a correlated reply makes a conversation in ingestion's transaction; an operator's category,
with its timeline event and operator-log row; answering from the app through the mailbox's real SMTP server."""

from __future__ import annotations

import itertools

import pytest

from inbound.ingest.record import inbound_record
from inbound.kinds import Category
from inbound.models import Answer, Conversation
from inbound.replies.answer import answer_send, answer_subject
from inbound.replies.services import conversation_categorize
from mailboxes.transports.base import OutcomeUnknown
from proving.harness import mails
from proving.harness.smtp import Behaviour
from sequences.models import Enrollment, OperatorAction, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.sending import dispatch_due
from sequences.services.suppressions import suppression_add, suppression_lift
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
_uid = itertools.count(1)


def sent(mailbox, email="ada@example.com"):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), email)
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == SendJob.State.SUBMITTED
    job.refresh_from_db()
    return enrollment, job


def ingest(mailbox, raw: bytes):
    return inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1,
                          fetched=mails.fetched(raw, uid=next(_uid)))


def test_a_correlated_reply_makes_one_conversation_and_unrelated_mail_none(mailbox):
    enrollment, job = sent(mailbox)
    ingest(mailbox, mails.reply(to_message_id=job.message_id, body="Thanks, but we're not interested."))
    ingest(mailbox, mails.reply(to_message_id="<stranger@elsewhere.example>", sender="x@elsewhere.example"))

    conversation = Conversation.objects.get()
    assert (conversation.enrollment_id, conversation.mailbox_id, conversation.replies) == (enrollment.pk,
                                                                                           mailbox.pk, 1)
    assert not conversation.handled and conversation.chosen == ""
    assert conversation.category == conversation.suggested
    event = TimelineEvent.objects.get(kind="reply_received")
    assert event.enrollment_id == enrollment.pk and event.data["suggested"] == conversation.suggested

    # A second reply joins the same conversation and makes it unhandled again.
    Conversation.objects.update(handled=True)
    ingest(mailbox, mails.reply(to_message_id=job.message_id, body="One more thing."))
    conversation.refresh_from_db()
    assert (Conversation.objects.count(), conversation.replies, conversation.handled) == (1, 2, False)


def test_an_out_of_office_reply_is_categorized_as_ingestion_decided(mailbox):
    _, job = sent(mailbox)
    ingest(mailbox, mails.out_of_office(to_message_id=job.message_id))
    conversation = Conversation.objects.get()
    assert (conversation.suggested, conversation.suggested_confidence) == (Category.OUT_OF_OFFICE, 1.0)


def test_the_operator_category_wins_and_is_on_the_timeline_and_in_the_log(mailbox):
    enrollment, job = sent(mailbox)
    ingest(mailbox, mails.reply(to_message_id=job.message_id))
    conversation = Conversation.objects.get()

    conversation_categorize(conversation_id=conversation.pk, category="meeting", actor="olga")
    conversation_categorize(conversation_id=conversation.pk, category="meeting", actor="olga")  # no-op

    conversation.refresh_from_db()
    assert (conversation.category, conversation.chosen, conversation.chosen_by) == ("meeting", "meeting", "olga")
    log = OperatorAction.objects.get(action="reply_categorize")
    assert (log.actor, log.target_id, log.result["category"]) == ("olga", enrollment.pk, "meeting")
    assert TimelineEvent.objects.filter(kind="reply_categorized", enrollment=enrollment).count() == 1
    # A later reply's suggestion does not override the operator's choice.
    ingest(mailbox, mails.reply(to_message_id=job.message_id, body="See you then."))
    conversation.refresh_from_db()
    assert conversation.category == "meeting"
    with pytest.raises(ServiceError):
        conversation_categorize(conversation_id=conversation.pk, category="keen", actor="olga")


def test_an_answer_leaves_the_mailbox_threaded_and_marks_the_conversation_handled(mailbox, smtp_server):
    enrollment, job = sent(mailbox)
    ingest(mailbox, mails.reply(to_message_id=job.message_id, subject="RE: Re: Hello Ada",
                                message_id="<ada-1@prospect.example>"))
    conversation = Conversation.objects.get()

    answer = answer_send(conversation_id=conversation.pk, body="Pricing attached.\n\nOlga", actor="olga")

    assert answer.state == Answer.State.SUBMITTED
    received = smtp_server.received[-1]
    msg = received.message
    assert received.sender == mailbox.address and received.recipients == ["ada@example.com"]
    assert msg["In-Reply-To"] == "<ada-1@prospect.example>"
    assert msg["References"] == f"{job.message_id} <ada-1@prospect.example>"
    assert msg["Subject"] == "Re: Hello Ada" and msg["Message-ID"] == answer.message_id
    conversation.refresh_from_db()
    enrollment.refresh_from_db()
    assert conversation.handled and conversation.handled_by == "olga"
    assert enrollment.status == Enrollment.Status.STOPPED  # the reply stopped it; the answer restarts nothing
    assert TimelineEvent.objects.get(kind="reply_answered").data["state"] == "submitted"


def test_what_may_not_be_answered_is_refused_in_words(mailbox, smtp_server):
    _, job = sent(mailbox)
    ingest(mailbox, mails.reply(to_message_id=job.message_id))
    conversation = Conversation.objects.get()
    before = len(smtp_server.received)

    mailbox.paused = True
    mailbox.save(update_fields=["paused"])
    with pytest.raises(ServiceError, match="paused"):
        answer_send(conversation_id=conversation.pk, body="Hi", actor="olga")
    mailbox.paused = False
    mailbox.save(update_fields=["paused"])

    suppression_add(value="ada@example.com", reason=Suppression.Reason.UNSUBSCRIBE, source="operator")
    with pytest.raises(ServiceError, match="suppressed"):
        answer_send(conversation_id=conversation.pk, body="Hi", actor="olga")
    assert answer_send(conversation_id=conversation.pk, body="Hi", actor="olga",
                       confirm_suppressed=True).state == Answer.State.SUBMITTED

    suppression_lift(value="ada@example.com", note="asked for pricing")
    suppression_add(value="ada@example.com", reason=Suppression.Reason.HARD_BOUNCE, source="operator")
    with pytest.raises(ServiceError, match="cannot be answered"):
        answer_send(conversation_id=conversation.pk, body="Hi", actor="olga", confirm_suppressed=True)
    assert len(smtp_server.received) == before + 1


def test_a_connection_lost_after_the_data_is_outcome_unknown(mailbox, smtp_server):
    _, job = sent(mailbox)
    ingest(mailbox, mails.reply(to_message_id=job.message_id))
    conversation = Conversation.objects.get()
    smtp_server.behaviour = Behaviour(drop_in_data=True)

    answer = answer_send(conversation_id=conversation.pk, body="Hi", actor="olga")

    assert answer.state == Answer.State.UNKNOWN and answer.error
    conversation.refresh_from_db()
    assert not conversation.handled  # it may not have left: the operator decides
    assert OutcomeUnknown  # the transport's outcome this maps


def test_subject_gets_one_re():
    assert answer_subject("Re: AW: Hello") == "Re: Hello"
    assert answer_subject("Pricing") == "Re: Pricing"
