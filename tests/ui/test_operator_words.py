"""Pages and messages speak the form's words: the riskiest reply-view setting wears the warning colour, held
follow-ups and refused logins name the field to change (never a column or TOML key), a conversation shows the
subject that left, and an enrollment page gives one next-send time."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from mailboxes.transports.base import MailboxRefused
from mailboxes.transports.smtp import SmtpConfig, SmtpTransport
from sequences.models import SendJob
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_operations import reply_to, submit

pytestmark = pytest.mark.django_db


def test_a_mailbox_that_sends_follow_ups_without_reading_replies_wears_the_warning_colour(client, users):
    MailboxFactory(name="blind", follow_ups_without_reply_view=True)  # no IMAP
    client.force_login(users["operator"])
    for url in ("/mailboxes/", "/"):
        page = client.get(url).content.decode()
        assert ('<span class="label stale-view">Replies: reads no replies: follow-ups are sent without reading '
                'replies') in page, url
        assert '<span class="label sent">Replies: reads no replies' not in page, url


def test_the_mailboxes_page_says_no_encryption_not_none(client, users):
    MailboxFactory(name="relay", smtp_port=2531, smtp_security="none")
    client.force_login(users["operator"])
    page = client.get("/mailboxes/").content.decode()
    assert "127.0.0.1:2531 (no encryption)" in page and "(none)" not in page


def test_a_follow_up_held_for_want_of_a_reply_view_names_the_forms_checkbox(client, users):
    mailbox = MailboxFactory(follow_ups_without_reply_view=False)  # no IMAP: it reads no replies
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])
    (follow_up,) = dispatch_due()
    job = send_job_claim(job_id=follow_up, worker_id="w2")
    assert send_job_authorize(job_id=follow_up, worker_id="w2", version=job.version).outcome == "deferred"
    client.force_login(users["operator"])
    page = unescape(client.get(reverse("enrollment_detail", args=[ada.pk])).content.decode())
    assert 'connect its inbox, or tick "Follow-ups without reply view" on its Edit page' in page
    assert "follow_ups_without_reply_view" not in page


def test_a_missing_smtp_password_names_the_password_and_where_to_type_it():
    for config, words in (
        (SmtpConfig(host="127.0.0.1", port=9, username="sam@outreach.test"),
         "no SMTP password is stored — type the SMTP password on the mailbox's Edit page"),
        (SmtpConfig(host="127.0.0.1", port=9, username="sam@outreach.test", password_env="OUTREACH_SECRET_SAM"),
         "the environment variable OUTREACH_SECRET_SAM is not set (the mailbox's SMTP password variable) — set it "
         "where the workers run, or type the SMTP password"),
    ):
        with pytest.raises(MailboxRefused) as excinfo:
            SmtpTransport(config)._open()
        text = str(excinfo.value)
        assert words in text
        assert "password_env" not in text and "environment of the worker" not in text


def test_the_conversation_shows_the_subjects_that_left_not_their_templates(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 0))
    ada = enroll(sequence, "ada@example.com", first_name="Ada")
    submit(dispatch_due()[0])
    submit(dispatch_due()[0])
    reply_to(SendJob.objects.get(enrollment=ada, step__position=2))
    client.force_login(users["operator"])
    conversation = ada.contact.conversations.get()
    page = unescape(client.get(reverse("reply_detail", args=[conversation.pk])).content.decode())
    assert "Subject: Hello Ada</p>" in page and "Subject: Re: Hello Ada</p>" in page
    assert "{{ first_name }}" not in page and "Subject template" not in page


def test_an_enrollment_page_gives_one_next_send_time_and_says_the_gap_in_a_sentence(client, users):
    mailbox = MailboxFactory(min_gap=3600)
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])  # the next message of this mailbox may leave an hour later
    client.force_login(users["operator"])
    page = unescape(client.get(reverse("enrollment_detail", args=[ada.pk])).content.decode())
    table = re.search(r'data-label="Next send">([^<]+)</td>', page).group(1)
    assert f'<dd id="next-send">not before {table}</dd>' in page
    assert f"Next send {table} — not sent yet" in page  # the step's own line in Messages
    assert "The mailbox keeps at least 1 hour between two messages (its minimum gap): the next may leave at" in page
    assert "spaces its messages" not in page


def test_the_login_page_gives_the_command_as_the_readme_does(client):
    page = client.get(reverse("login")).content.decode()
    assert "<code>.venv/bin/python manage.py add_user NAME --role operator</code>" in page
