"""A sequence's unsubscribe style: one-click List-Unsubscribe headers (the default), or a plain line at the end of
the text and no List-* header, so that auto-responders that skip list mail (Sieve vacation) answer.

Messages are plain text only (no HTML part), so "the text" is the one body. The real Pigeonhole check is in
tests/inbound/test_vacation_reply.py.
"""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from sequences.config.apply import config_apply
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.messages import message_prepare
from sequences.models import OperatorAction, SendJob, Sequence, Suppression
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.tokens import unsubscribe_url
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui import conftest as ui_fixtures

pytestmark = pytest.mark.django_db
roles, users = ui_fixtures.roles, ui_fixtures.users  # the role groups and one user per role
LINE, HEADERS = Sequence.UnsubscribeStyle.LINE, Sequence.UnsubscribeStyle.HEADERS


def prepared(style: str, *, body: str = "Hi {{ first_name }},\n\nShall we talk?\n"):
    """Step 1 of a new sequence of that style, as message_prepare builds it for ada@example.com; and its job."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, body=body)
    Sequence.objects.filter(pk=sequence.pk).update(unsubscribe_style=style)
    job = enroll(sequence, "ada@example.com").jobs.get()
    message = message_from_bytes(message_prepare(job_id=job.pk).data, policy=policy.default)
    return message, job


def text(message) -> str:
    return message.get_content().replace("\r\n", "\n")


def unsigned(url: str) -> str:
    """An unsubscribe link without its signing time and signature: a second may pass between two signings of the
    same link (the page itself checks the signature)."""
    return url.rsplit(":", 2)[0]


def test_a_new_sequence_sends_the_one_click_headers():
    assert make_sequence(mailbox=MailboxFactory(), steps=1).unsubscribe_style == HEADERS


def test_headers_style_has_both_list_headers_and_no_line_in_the_text():
    message, job = prepared(HEADERS)
    url = unsubscribe_url(job_id=job.pk, email="ada@example.com")
    assert message["List-Unsubscribe"].startswith(f"<{unsigned(url)}:")
    assert "/>, <mailto:" in message["List-Unsubscribe"]
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert text(message) == "Hi Ada,\n\nShall we talk?\n"


@pytest.mark.parametrize(("body", "written"), [
    ("Hi {{ first_name }},\n\nShall we talk?\n\n\n", "Hi Ada,\n\nShall we talk?"),  # ASCII: written directly
    ("Grüße, {{ first_name }}", "Grüße, Ada"),  # written by the email package
])
def test_line_style_has_no_list_header_and_ends_the_text_with_the_link(body, written):
    message, job = prepared(LINE, body=body)
    url = unsubscribe_url(job_id=job.pk, email="ada@example.com")
    assert [name for name in message.keys() if name.lower().startswith("list-")] == []
    body, _, link = text(message).rpartition("To unsubscribe: ")
    assert body == f"{written}\n\n" and link.endswith("/\n") and unsigned(link) == unsigned(url)
    assert message["X-Outreach-Job"] == str(job.pk)  # the other headers as with the one-click style


@pytest.mark.django_db(transaction=True)
def test_the_line_of_a_sent_email_unsubscribes_through_the_same_page(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Sequence.objects.filter(pk=sequence.pk).update(unsubscribe_style=LINE)
    enroll(sequence, "ada@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == SendJob.State.SUBMITTED
    (received,) = smtp_server.received
    line = text(message_from_bytes(received.data, policy=policy.default)).splitlines()[-1]
    assert unsigned(line) == f"To unsubscribe: {unsigned(unsubscribe_url(job_id=job_id, email='ada@example.com'))}"
    path = urlsplit(line.removeprefix("To unsubscribe: ")).path
    client = Client()
    assert b'<form method="post">' in client.get(path).content  # a person confirms with the page's button
    assert client.post(path).status_code == 200
    assert Suppression.objects.get(value="ada@example.com").reason == Suppression.Reason.UNSUBSCRIBE


# --- where it is set: the sequence form, the TOML file -------------------------------------------------------------


def test_the_sequence_form_offers_the_choice_and_explains_the_trade_off(users):
    client = Client()
    client.force_login(users["operator"])
    page = client.get(reverse("sequence_new")).content.decode()
    assert 'name="unsubscribe_style" value="line"' in page
    assert "5,000 emails a day" in page and "Sieve “vacation”" in page
    mailbox = MailboxFactory()
    response = client.post(reverse("sequence_new"), {"name": "Quiet", "mailbox": mailbox.pk,
                                                     "unsubscribe_style": "line"})
    assert response.status_code == 302
    sequence = Sequence.objects.get(name="Quiet")
    assert sequence.unsubscribe_style == LINE

    edit = reverse("sequence_edit", args=[sequence.pk])
    assert re.search(r'value="line"[^>]*\bchecked', client.get(edit).content.decode())  # the edit page shows it
    client.post(edit, {"name": "Quiet", "mailbox": mailbox.pk})  # a post without it leaves it as it is
    sequence.refresh_from_db()
    assert sequence.unsubscribe_style == LINE
    response = client.post(edit, {"name": "Quiet", "mailbox": mailbox.pk, "unsubscribe_style": "headers"})
    assert response.status_code == 302
    sequence.refresh_from_db()
    assert sequence.unsubscribe_style == HEADERS
    logged = OperatorAction.objects.filter(target_id=sequence.pk, result__has_key="unsubscribe_style")
    assert [a.result["unsubscribe_style"] for a in logged.order_by("pk")] == ["headers → line", "line → headers"]


TOML = """
[[mailbox]]
name = "sales"
address = "sales@acme.test"
smtp = { host = "127.0.0.1", port = 2525, security = "none" }
follow_ups_without_reply_view = true

[[sequence]]
name = "Intro"
mailbox = "sales"
%s

[[sequence.step]]
subject = "Hi {{ first_name }}"
body = "Hello {{ first_name }}"
"""


def styled(line: str) -> str:
    """A file whose sequence's table holds LINE."""
    return TOML % line


def test_the_toml_file_reads_and_writes_the_style():
    (entry,) = parse(styled('unsubscribe_style = "line"')).sequences
    assert entry["unsubscribe_style"] == "line"
    (entry,) = parse(styled("")).sequences
    assert entry["unsubscribe_style"] is None  # not named: a new sequence gets the headers, one loaded keeps its own
    with pytest.raises(ConfigError) as refused:
        parse(styled('unsubscribe_style = "footer"'))
    assert "sequence[0].unsubscribe_style (line 11): must be one of headers, line" in str(refused.value)

    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    assert 'unsubscribe_style = "headers"' in sequence_export_toml(sequence)
    Sequence.objects.filter(pk=sequence.pk).update(unsubscribe_style=LINE)
    sequence.refresh_from_db()
    assert 'unsubscribe_style = "line"' in sequence_export_toml(sequence)


def test_loading_the_file_creates_and_changes_the_style_and_a_file_without_it_keeps_it():
    config_apply(parse(styled('unsubscribe_style = "line"')))
    assert Sequence.objects.get(name="Intro").unsubscribe_style == LINE
    result = config_apply(parse(styled('unsubscribe_style = "headers"')))
    assert "sequence Intro: unsubscribe_style 'line' -> 'headers'" in result.changes
    assert Sequence.objects.get(name="Intro").unsubscribe_style == HEADERS
    Sequence.objects.filter(name="Intro").update(unsubscribe_style=LINE)
    config_apply(parse(styled("")))
    assert Sequence.objects.get(name="Intro").unsubscribe_style == LINE
