"""Opt-outs the classifier is unsure of, data-protection requests and the labels operators give, end to end:
a real reply in a real Dovecot mailbox, polled by ingestion; the Replies page's Needs review and Data-protection
requests lists; the final check of the person's step in another sequence; the exported labels.

Where the flow, not the model's reading, is under test, the model's answer is fixed (``unsure``); the model's
own reading is scored by ``bench_replies`` and tested in tests/inbound/test_learned_replies.py.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse

from db.clock import db_now
from inbound.classify import learned
from inbound.data_requests import one_month_after
from inbound.kinds import Kind
from inbound.models import DataRequest, InboundMessage, ReplyLabel
from proving.bench.replies import load_corpus
from sequences.models import OperatorAction, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.sending import dispatch_due
from sequences.timeline import Event
from tests.factories import enroll, make_sequence
from tests.inbound.test_ingest import poll, send_first_step
from tests.inbound.test_optouts import DSGVO_ERASURE, message

S = SendJob.State
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def unsure(monkeypatch):
    """The model reads every reply as perhaps asking to stop: above OPTOUT_UNSURE, below OPTOUT_SURE."""
    share = (learned.OPTOUT_UNSURE + learned.OPTOUT_SURE) / 2
    rest = (1 - share) / 6
    answer = learned.Prediction("unsubscribe", share, {name: rest for name in (
        "interested", "meeting", "not_interested", "wrong_person", "out_of_office", "other")} | {"unsubscribe": share})
    monkeypatch.setattr(learned, "predict", lambda text: answer)


def sent_and_replied(imap_mailbox, dovecot, email: str, text: str):
    enrollment, job = send_first_step(imap_mailbox, email=email)
    dovecot.append("alice", "INBOX", message(text, to_message_id=job.message_id, sender=email))
    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 1
    return enrollment, job


def latest_entry(value: str) -> Suppression:
    return Suppression.objects.filter(value=value).order_by("-id").first()


def step_sends(imap_mailbox, email: str) -> SendJob:
    """Enroll the address in another sequence and run its first step through the worker's path."""
    other = enroll(make_sequence(mailbox=imap_mailbox, steps=1), email)
    job = other.jobs.get()
    dispatch_due()
    send_job_process(job_id=job.pk, worker_id="w2")
    job.refresh_from_db()
    return job


def test_a_dsgvo_erasure_reply_suppresses_opens_a_task_and_the_person_is_not_mailed_in_another_sequence(
        imap_mailbox, dovecot, client, users, smtp_server):
    second = enroll(make_sequence(mailbox=imap_mailbox, steps=1, waits=(3600,)), "weber@example.de")
    _, job = sent_and_replied(imap_mailbox, dovecot, "weber@example.de", DSGVO_ERASURE)

    row = InboundMessage.objects.get()
    assert row.kind == Kind.UNSUBSCRIBE_REQUEST and row.classification_reason.startswith("data-protection request")
    assert latest_entry("weber@example.de").reason == Suppression.Reason.UNSUBSCRIBE
    task = DataRequest.objects.get()
    received = (row.internaldate or row.committed_at).date()
    assert (task.address, task.inbound_id, task.due_on) == ("weber@example.de", row.pk, one_month_after(received))
    assert "DSGVO" in task.words or "löschen" in task.words, task.words
    assert "data-protection request #" in row.effect and "due" in row.effect

    # The person's step in the second sequence does not leave, whenever it comes due.
    pending = second.jobs.get()
    SendJob.objects.filter(pk=pending.pk).update(scheduled_at=row.committed_at)
    sent_before = smtp_server.count
    dispatch_due()
    send_job_process(job_id=pending.pk, worker_id="w2")
    pending.refresh_from_db()
    assert pending.state == S.CANCELED and smtp_server.count == sent_before
    with pytest.raises(ServiceError, match="suppressed"):
        step_sends(imap_mailbox, "weber@example.de")

    # Admins see the task with its deadline on the dashboard and the Replies page; operators do not.
    client.force_login(users["admin"])
    page = client.get(reverse("reply_list")).content.decode()
    assert 'id="data-requests"' in page and "weber@example.de" in page and f"{task.due_on:%Y-%m-%d}" in page
    dashboard = " ".join(client.get(reverse("dashboard")).content.decode().split())
    assert "1</span> data-protection request open" in dashboard
    client.force_login(users["operator"])
    assert 'id="data-requests"' not in client.get(reverse("reply_list")).content.decode()


def test_an_overdue_request_is_red_and_an_admin_exports_erases_or_closes(imap_mailbox, dovecot, client, users):
    sent_and_replied(imap_mailbox, dovecot, "weber@example.de", DSGVO_ERASURE)
    task = DataRequest.objects.get()
    DataRequest.objects.filter(pk=task.pk).update(due_on=db_now().date() - timedelta(days=3))
    client.force_login(users["admin"])

    page = " ".join(client.get(reverse("reply_list")).content.decode().split())
    assert "1 overdue" in page and "overdue by 3 days" in page
    assert "msg error" in client.get(reverse("dashboard")).content.decode().split('id="data-requests-due"')[1][:40]

    export = client.get(reverse("data_request_export", args=[task.pk]))
    assert export["Content-Disposition"] == f'attachment; filename="data-request-{task.pk}.json"'
    assert json.loads(export.content)["contact"]["email"] == "weber@example.de"

    refused = client.post(reverse("data_request_erase", args=[task.pk]), {"confirm": "yes"}, follow=True)
    assert "type erase to confirm" in refused.content.decode()
    client.post(reverse("data_request_erase", args=[task.pk]), {"confirm": "erase"})
    task.refresh_from_db()
    assert task.done_at is not None and task.outcome.startswith("erased") and task.address == "[erased]"
    assert OperatorAction.objects.filter(action="contact_export", target=f"data request {task.pk}").exists()


def test_closing_a_request_needs_words_and_an_operator_may_not(imap_mailbox, dovecot, client, users):
    sent_and_replied(imap_mailbox, dovecot, "weber@example.de", DSGVO_ERASURE)
    task = DataRequest.objects.get()
    client.force_login(users["operator"])
    assert client.post(reverse("data_request_close", args=[task.pk]), {"outcome": "done"}).status_code == 403
    client.force_login(users["admin"])
    assert "say what was done" in client.post(reverse("data_request_close", args=[task.pk]), {"outcome": " "},
                                              follow=True).content.decode()
    client.post(reverse("data_request_close", args=[task.pk]), {"outcome": "data exported and sent"})
    task.refresh_from_db()
    assert (task.outcome, task.done_by) == ("data exported and sent", users["admin"].username)
    assert 'id="data-requests"' not in client.get(reverse("reply_list")).content.decode()


def test_an_unsure_opt_out_is_suppressed_until_an_operator_lifts_it(imap_mailbox, dovecot, client, users, unsure):
    enrollment, _ = sent_and_replied(imap_mailbox, dovecot, "ada@example.com", "Hmm. We'll see about that.")

    row = InboundMessage.objects.get()
    assert row.kind == Kind.HUMAN_REPLY and "may be asking to stop" in row.classification_reason
    assert "Needs review" in row.effect
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == "replied"  # a reply stops its sequence, as every reply does
    assert latest_entry("ada@example.com").reason == Suppression.Reason.POSSIBLE_OPTOUT
    with pytest.raises(ServiceError, match="suppressed"):
        step_sends(imap_mailbox, "ada@example.com")

    client.force_login(users["staff"])
    page = client.get(reverse("reply_list")).content.decode()
    assert 'id="needs-review"' in page and "ada@example.com" in page and "Lift" not in page  # staff read only
    client.force_login(users["operator"])
    assert "1</span> may be asking to stop" in client.get(reverse("dashboard")).content.decode()
    client.post(reverse("reply_review"), {"address": "ada@example.com", "decision": "lift", "category": "other"})

    entry = latest_entry("ada@example.com")
    assert entry.action == Suppression.Action.LIFT and entry.actor == users["operator"].username
    assert OperatorAction.objects.filter(action="optout_lift", target="ada@example.com").exists()
    assert TimelineEvent.objects.filter(kind=Event.SUPPRESSION_LIFTED, email="ada@example.com").exists()
    assert list(ReplyLabel.objects.values_list("inbound_id", "category", "origin")) == [(row.pk, "other", "review")]
    assert 'id="needs-review"' not in client.get(reverse("reply_list")).content.decode()
    assert step_sends(imap_mailbox, "ada@example.com").state == S.SUBMITTED  # sending is restored


def test_a_confirmed_opt_out_unsubscribes_and_is_decided_once(imap_mailbox, dovecot, client, users, unsure):
    sent_and_replied(imap_mailbox, dovecot, "ada@example.com", "Hmm. We'll see about that.")
    client.force_login(users["operator"])

    client.post(reverse("reply_review"), {"address": "ada@example.com", "decision": "confirm"})
    again = client.post(reverse("reply_review"), {"address": "ada@example.com", "decision": "lift"}, follow=True)

    entry = latest_entry("ada@example.com")
    assert (entry.action, entry.reason, entry.source) == ("add", Suppression.Reason.UNSUBSCRIBE, "review")
    assert TimelineEvent.objects.filter(kind=Event.SUPPRESSION_ADDED, email="ada@example.com",
                                        data__reason="unsubscribe").exists()  # the webhook's contact.unsubscribed
    assert "no opt-out waiting for review" in again.content.decode()
    assert list(ReplyLabel.objects.values_list("category", flat=True)) == ["unsubscribe"]
    client.force_login(users["staff"])
    assert client.post(reverse("reply_review"), {"address": "ada@example.com", "decision": "lift"}).status_code == 403


def test_relabels_and_review_decisions_export_as_a_corpus_bench_replies_reads(imap_mailbox, dovecot, client, users,
                                                                              unsure, tmp_path):
    sent_and_replied(imap_mailbox, dovecot, "ada@example.com", "Hmm. We'll see about that.")
    client.force_login(users["operator"])
    client.post(reverse("reply_review"), {"address": "ada@example.com", "decision": "lift", "category": "interested"})
    conversation = InboundMessage.objects.get().enrollment.conversation
    client.post(reverse("reply_categorize", args=[conversation.pk]), {"category": "meeting"})

    out = tmp_path / "labels.jsonl"
    call_command("export_reply_labels", "--output", str(out))

    items = load_corpus(out)  # bench_replies' own reader accepts it
    assert [(i["expected"], i["split"], i["text"]) for i in items] == [("meeting", "install",
                                                                        "Hmm. We'll see about that.")]
    assert items[0]["note"].startswith(f"relabel by {users['operator'].username}")
    assert ReplyLabel.objects.count() == 2  # both decisions are kept; the export gives the latest per reply


def test_a_persons_away_note_holds_them_until_the_stated_day(imap_mailbox, dovecot, monkeypatch):
    away = learned.Prediction("out_of_office", 0.95, {"out_of_office": 0.95, "unsubscribe": 0.01})
    monkeypatch.setattr(learned, "predict", lambda text: away)
    enrollment, job = sent_and_replied(imap_mailbox, dovecot, "ada@example.com",
                                       "On holiday till the 18th of December, resend after.")

    row = InboundMessage.objects.get()
    assert row.kind == Kind.AUTO_REPLY and row.classification_reason.startswith("the person's own away note")
    assert row.effect.startswith("the person's away note: back on ") and "-12-18" in row.effect
    enrollment.refresh_from_db()
    follow_up = enrollment.jobs.exclude(pk=job.pk).get()
    assert enrollment.status == "active" and follow_up.state == S.SCHEDULED
    assert follow_up.scheduled_at.date().isoformat().endswith("-12-19")
