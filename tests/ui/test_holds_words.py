"""Holds say what they are: out of office (with the auto-reply's words), a mailbox that cannot read its replies,
a blocked mailbox; on the enrollment's status, in "why it waits" and in the sequence's "what will send when"."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

from django.db import transaction
from django.urls import reverse

from db.clock import db_now
from inbound.classify.return_date import return_date
from mailboxes.models import Mailbox
from sequences.services.holds import ReturnStated, person_hold_for_auto_reply
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_operations import submit
from ui.hold_words import quoted_tail


def _pages(client, enrollment) -> tuple[str, str]:
    return (unescape(client.get(reverse("enrollment_detail", args=[enrollment.pk])).content.decode()),
            unescape(client.get(reverse("sequence_detail", args=[enrollment.sequence_id])).content.decode()))


def test_an_out_of_office_hold_says_until_when_and_quotes_the_auto_reply(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])
    now = db_now()
    back = (now + timedelta(days=10)).date()
    sentence = f"Thank you for your email. I am out of the office and will be back on {back.day} {back:%B}."
    with transaction.atomic():
        person_hold_for_auto_reply(addresses=["ada@example.com"], received=now,
                                   found=ReturnStated(date=back, sentence=sentence), source="inbound:1")
    words = f"On hold until {back + timedelta(days=1):%a %-d %b} (out of office: '…back on {back.day} {back:%B}')"
    client.force_login(users["staff"])
    enrollment_page, sequence_page = _pages(client, ada)
    assert f'<span class="label pending" id="hold">{words}</span>' in enrollment_page
    assert enrollment_page.count(words) == 2  # the status, and why step 2 waits
    assert f"{words}." in sequence_page  # what will send when


def test_a_mailbox_that_cannot_read_its_replies_holds_follow_ups_and_says_so(client, users):
    mailbox = MailboxFactory(follow_ups_without_reply_view=False)  # no IMAP: it reads no replies
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])  # a first message needs no reply view
    (follow_up,) = dispatch_due()
    job = send_job_claim(job_id=follow_up, worker_id="w2")
    decision = send_job_authorize(job_id=follow_up, worker_id="w2", version=job.version)
    assert (decision.outcome, decision.reason) == ("deferred", "reply_view")
    client.force_login(users["operator"])
    enrollment_page, sequence_page = _pages(client, ada)
    words = f"On hold: the mailbox {mailbox.name} cannot read its replies right now, so follow-ups wait until it can"
    assert f'id="hold">{words} (this mailbox reads no replies (no IMAP)' in enrollment_page
    assert words in sequence_page


def test_a_blocked_mailbox_holds_its_emails_and_says_until_when_it_looks_again(client, users):
    mailbox = MailboxFactory()
    sequence = make_sequence(mailbox=mailbox, steps=1)
    ada = enroll(sequence, "ada@example.com")
    now = db_now()
    Mailbox.objects.filter(pk=mailbox.pk).update(blocked_at=now, blocked_reason="535 authentication failed",
                                                 next_probe_at=now + timedelta(minutes=10))
    client.force_login(users["staff"])
    enrollment_page, sequence_page = _pages(client, ada)
    words = (f"On hold: the mailbox {mailbox.name} cannot send since {now:%a %-d %b %H:%M} UTC "
             "(535 authentication failed)")
    assert f'id="hold">{words}; the next connection check is at ' in enrollment_page
    assert words in sequence_page


GERMAN_MONTHS = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
                 "November", "Dezember")


def test_a_german_out_of_office_hold_quotes_the_date_in_whole_words(client, users):
    """The quote starts at the words that announce the end of the absence, never mid-word without the date."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])
    now = db_now()
    back = (now + timedelta(days=10)).date()
    month = GERMAN_MONTHS[back.month - 1]
    text = (f"Vielen Dank für Ihre Nachricht. Ich bin bis zum {back.day}. {month} nicht im Büro und lese meine "
            "E-Mails nicht. In dringenden Fällen wenden Sie sich bitte an meine Kollegin.")
    found = return_date(text, received=now.date())
    assert found is not None and found.date == back
    with transaction.atomic():
        person_hold_for_auto_reply(addresses=["ada@example.com"], received=now, source="inbound:1",
                                   found=ReturnStated(date=found.date, sentence=found.sentence, quote=found.quote))
    client.force_login(users["staff"])
    enrollment_page, _ = _pages(client, ada)
    quoted = enrollment_page.split("(out of office: '", 1)[1].split("')", 1)[0]
    assert quoted.startswith(f"…bis zum {back.day}. {month} nicht im Büro")
    assert quoted.endswith("…") and all(word in text for word in quoted.strip("…").split())


def test_a_quote_recorded_without_its_words_is_cut_at_a_word_never_inside_one():
    sentence = "Ich bin diese Woche nicht im Büro und lese meine E-Mails nicht"
    tail = quoted_tail(sentence)
    assert tail.startswith("…") and tail.removeprefix("…").split()[0] in sentence.split()
