"""Replies from colleagues (rule `quoted_text`): a mail from someone at the person's company, with none of our
Message-IDs, that answers our message by its subject and quoted text. Real Dovecot and the real send pipeline."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage, ReplyMatch
from proving.harness import data
from sequences.messages import contact_context, render
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State

SUBJECT = "Onboarding at {{ company }}"
BODY = ("Hi {{ first_name }},\n\nI noticed {{ company }} is hiring engineers in Berlin this spring. We help teams "
        "cut their onboarding time in half with a short weekly programme run by senior engineers.\n\n"
        "Would a fifteen minute call next week be useful?\n\nSam")
PLAIN_BODY = ("Hello,\n\nWe help engineering teams cut their onboarding time in half with a short weekly "
              "programme run by senior engineers. Would a fifteen minute call next week be useful?\n\nSam")


def sequence(mailbox, *, body=BODY, steps=3, name="Colleagues"):
    return data.sequence_create(mailbox=mailbox, name=name, waits=(0,) + (3600,) * (steps - 1), subject=SUBJECT,
                                body=body)


def send_step_one(*enrollments) -> dict[str, SendJob]:
    dispatch_due()
    sent = {}
    for enrollment in enrollments:
        job = enrollment.jobs.get(step__position=1)
        assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
        job.refresh_from_db()
        sent[enrollment.contact.email] = job
    return sent


def as_sent(job: SendJob) -> tuple[str, str]:
    context = contact_context(job.enrollment.contact)
    return render(job.step.subject, context), render(job.step.body, context)


def colleague_mail(*, sender: str, subject: str, new_text: str, quoted: str = "", name: str = "Assistant") -> bytes:
    """A reply written as a new mail: no In-Reply-To or References, our text quoted under theirs."""
    quote = "".join(f"> {line}\r\n" for line in quoted.splitlines())
    history = f"\r\nOn Mon, 30 Nov 2026 at 09:12, Sam <sender0@outreach.test> wrote:\r\n{quote}" if quoted else ""
    return (f"From: {name} <{sender}>\r\nTo: Sam <sender0@outreach.test>\r\nSubject: {subject}\r\n"
            f"Message-ID: <colleague-{abs(hash((sender, subject, new_text)))}@acme.test>\r\n"
            "Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"{new_text}\r\n{history}").encode()


def test_a_colleague_quoting_our_message_stops_the_person(imap_mailbox, dovecot, client, admin_user):
    """The issue's example: "Re: <our subject>", our text quoted, from a colleague, no In-Reply-To."""
    person = enroll(sequence(imap_mailbox), "p03@acme.test", first_name="Pia", company="Acme")
    job = send_step_one(person)["p03@acme.test"]
    subject, body = as_sent(job)
    dovecot.append("alice", "INBOX", colleague_mail(
        sender="assistant@acme.test", subject=f"Re: {subject}", quoted=body,
        new_text="Not interested, please stop emailing our team."))

    mailbox_poll(mailbox_id=imap_mailbox.pk)

    person.refresh_from_db()
    assert (person.status, person.stop_reason) == ("stopped", "replied")
    follow_ups = person.jobs.exclude(pk=job.pk)
    assert {(j.state, j.cancel_reason) for j in follow_ups} == {(S.CANCELED, "replied")}
    inbound = InboundMessage.objects.get()
    assert (inbound.correlation_rule, inbound.job_id, inbound.enrollment_id) == ("quoted_text", job.pk, person.pk)
    assert inbound.effect.startswith("stopped (assistant@acme.test replied for p03@acme.test: it quotes 100% of "
                                     "our message to p03@acme.test")
    match = ReplyMatch.objects.get()
    assert (match.status, match.job_id, match.replier, match.subject_match) == (
        "stopped", job.pk, "assistant@acme.test", True)
    assert match.quoted_share == 1.0 and match.quoted_chars > 200
    stop = TimelineEvent.objects.get(enrollment=person, kind="enrollment_stopped")
    assert stop.data["because"] == "assistant@acme.test replied for p03@acme.test in sequence 'Colleagues' " \
                                   f"(mailbox {imap_mailbox.name})"
    client.force_login(admin_user)
    page = client.get(reverse("enrollment_detail", args=[person.pk])).content.decode()
    assert "Stopped because assistant@acme.test replied for p03@acme.test" in page


def test_a_quote_of_one_persons_own_words_stops_only_that_person(imap_mailbox, dovecot):
    """Two people at the company got the same template; the quote holds one first name: that person stops.
    The colleague writes from another domain of the company (eu.acme.test)."""
    steps = sequence(imap_mailbox)
    ada, bob = enroll(steps, "ada@acme.test", first_name="Ada"), enroll(steps, "bob@acme.test", first_name="Bob")
    sent = send_step_one(ada, bob)
    subject, body = as_sent(sent["bob@acme.test"])
    dovecot.append("alice", "INBOX", colleague_mail(sender="office@eu.acme.test", subject=f"AW: {subject}",
                                                    quoted=body, new_text="Bob is away; we are not interested."))

    mailbox_poll(mailbox_id=imap_mailbox.pk)

    ada.refresh_from_db(), bob.refresh_from_db()
    assert (bob.status, ada.status) == ("stopped", "active")
    assert ReplyMatch.objects.get().enrollment_id == bob.pk


def test_a_quote_sent_alike_to_two_people_is_a_probable_reply_an_operator_stops(imap_mailbox, dovecot, client,
                                                                               admin_user):
    steps = sequence(imap_mailbox, body=PLAIN_BODY)
    ada, bob = enroll(steps, "ada@acme.test"), enroll(steps, "bob@acme.test")
    sent = send_step_one(ada, bob)
    subject, body = as_sent(sent["ada@acme.test"])
    dovecot.append("alice", "INBOX", colleague_mail(sender="cto@acme.test", subject=f"Re: {subject}", quoted=body,
                                                    new_text="Not for us, thanks."))

    mailbox_poll(mailbox_id=imap_mailbox.pk)

    ada.refresh_from_db(), bob.refresh_from_db()
    assert (ada.status, bob.status) == ("active", "active"), "an ambiguous match stops nobody"
    inbound = InboundMessage.objects.get()
    assert inbound.correlation_rule == "quoted_text" and inbound.content == "full" and inbound.job_id is None
    assert "probable reply from cto@acme.test for" in inbound.effect and "nothing stopped" in inbound.effect
    matches = {m.enrollment.contact.email: m for m in ReplyMatch.objects.select_related("enrollment__contact")}
    assert set(matches) == {"ada@acme.test", "bob@acme.test"}
    assert {m.status for m in matches.values()} == {"probable"}

    client.force_login(admin_user)
    page = client.get(reverse("inbound_probable")).content.decode()
    assert "cto@acme.test" in page and "ada@acme.test" in page and "bob@acme.test" in page
    response = client.post(reverse("inbound_probable_stop", args=[matches["ada@acme.test"].pk]), follow=True)
    assert response.status_code == 200
    ada.refresh_from_db(), bob.refresh_from_db()
    assert (ada.status, ada.stop_reason, bob.status) == ("stopped", "replied", "active")
    assert {(j.state, j.cancel_reason) for j in ada.jobs.exclude(pk=sent["ada@acme.test"].pk)} == {
        (S.CANCELED, "replied")}
    stop = TimelineEvent.objects.get(enrollment=ada, kind="enrollment_stopped")
    assert stop.data["because"].startswith("cto@acme.test replied for ada@acme.test")
    assert stop.data["source"] == f"inbound:{inbound.pk}"
    match = ReplyMatch.objects.get(pk=matches["ada@acme.test"].pk)
    assert (match.status, match.decided_by) == ("operator_stopped", admin_user.username)
    # A second click decides nothing twice.
    again = client.post(reverse("inbound_probable_stop", args=[match.pk]), follow=True).content.decode()
    assert "decided already" in again
    assert Enrollment.objects.get(pk=bob.pk).status == "active"


def test_a_subject_alone_is_probable_and_free_mail_is_nobodys_company(imap_mailbox, dovecot):
    steps = sequence(imap_mailbox)
    person = enroll(steps, "p03@acme.test", first_name="Pia")
    gmail = enroll(steps, "someone@gmail.com", first_name="Gil")
    sent = send_step_one(person, gmail)
    subject, _ = as_sent(sent["p03@acme.test"])
    gmail_subject, gmail_body = as_sent(sent["someone@gmail.com"])
    dovecot.append("alice", "INBOX", colleague_mail(sender="assistant@acme.test", subject=f"Re: {subject}",
                                                    new_text="Please take us off your list."))
    dovecot.append("alice", "INBOX", colleague_mail(sender="friend@gmail.com", subject=f"Re: {gmail_subject}",
                                                    quoted=gmail_body, new_text="No thanks."))

    mailbox_poll(mailbox_id=imap_mailbox.pk)

    person.refresh_from_db(), gmail.refresh_from_db()
    assert (person.status, gmail.status) == ("active", "active")
    match = ReplyMatch.objects.get()
    assert (match.enrollment_id, match.status, match.subject_match, match.quoted_share) == (
        person.pk, "probable", True, 0.0)
    free = InboundMessage.objects.get(uid__gt=InboundMessage.objects.get(reply_matches=match).uid)
    assert free.correlation_rule == "none" and free.content == "metadata"
