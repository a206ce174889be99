"""MIME nesting is bounded: a message nested beyond what is read is judged on its header alone, so nesting can
neither exhaust the parser's recursion nor hide a reply behind the part that is read; its In-Reply-To still ties
it to our message.
"""

from __future__ import annotations

import pytest

from inbound.classify import classify
from inbound.models import InboundMessage
from proving.harness import mails
from sequences.models import SendJob
from tests.inbound.test_ingest import poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)


def nested(levels: int, innermost: str) -> str:
    """*innermost* (a part, its header included) inside `levels` multiparts."""
    part = innermost
    for level in range(levels):
        part = (f'Content-Type: multipart/mixed; boundary="level-{level}"\r\n\r\n'
                f"--level-{level}\r\n{part}\r\n--level-{level}--\r\n")
    return part


def reply(*, in_reply_to: str, body: str) -> bytes:
    return (f"From: Ada <ada@example.com>\r\nTo: {mails.OURS}\r\nSubject: Re: Hello\r\n"
            f"Message-ID: {mails.new_id()}\r\nIn-Reply-To: {in_reply_to}\r\nMIME-Version: 1.0\r\n{body}").encode()


def test_a_reply_nested_a_thousand_levels_deep_stops_the_sequence(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox)
    text = "Content-Type: text/plain\r\n\r\nPlease take me off your list.\r\n"
    dovecot.append("alice", "INBOX", reply(in_reply_to=job.message_id, body=nested(1000, text)))

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 1

    row = InboundMessage.objects.get()
    assert (row.kind, row.correlation_rule, row.job_id, row.parse_error) == ("human_reply", "in_reply_to", job.pk, "")
    assert "nested deeper than 20 levels: only the header was read" in row.classification_reason
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    follow_up = enrollment.jobs.exclude(pk=job.pk).get()
    assert (follow_up.state, follow_up.cancel_reason) == (SendJob.State.CANCELED, "replied")


@pytest.mark.one_database("a parser: no database")
def test_nesting_cannot_hide_a_reply_behind_an_out_of_office_text():
    """Read up to the bound, the visible part would make it an auto-reply (a hold, no stop)."""
    away = "Content-Type: text/plain\r\n\r\nI am out of the office until Monday.\r\n"
    hidden = nested(25, "Content-Type: text/plain\r\n\r\nYes, let's talk on Tuesday.\r\n")
    body = ('Content-Type: multipart/mixed; boundary="top"\r\n\r\n'
            f"--top\r\n{away}\r\n--top\r\n{hidden}\r\n--top--\r\n")

    verdict = classify(reply(in_reply_to="<job.1@outreach.test>", body=body))

    assert (verdict.kind, verdict.rule) == ("human_reply", "human"), verdict
    assert verdict.reason.endswith("(MIME parts nested deeper than 20 levels: only the header was read)")
    # Within the bound, every part is read as before.
    within = reply(in_reply_to="<job.1@outreach.test>",
                   body=nested(19, "Content-Type: text/plain\r\n\r\nPlease take me off your list.\r\n"))
    assert classify(within).kind == "unsubscribe_request"


@pytest.mark.one_database("a parser: no database")
def test_deep_nesting_of_a_returned_message_or_message_parts_is_bounded_too():
    """message/rfc822 inside message/rfc822, and multipart/digest (whose parts are messages by default)."""
    chain = "Subject: inner\r\n\r\nPlease take me off your list.\r\n"
    for _ in range(1000):
        chain = "Content-Type: message/rfc822\r\n\r\n" + chain
    digest = "Subject: inner\r\n\r\ntext\r\n"
    for level in range(600):
        digest = (f'Content-Type: multipart/digest; boundary="d{level}"\r\n\r\n'
                  f"--d{level}\r\n\r\n{digest}\r\n--d{level}--\r\n")
    for body in (chain, digest):
        verdict = classify(reply(in_reply_to="<job.1@outreach.test>", body=body))
        assert verdict.kind == "human_reply" and "only the header was read" in verdict.reason, verdict
