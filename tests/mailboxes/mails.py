"""Inbound mails written for the project's tests (not taken from the corpus)."""

from __future__ import annotations

import uuid


def _id() -> str:
    return f"<{uuid.uuid4().hex}@prospect.example>"


def reply(*, to_message_id: str, sender: str = "ada@example.com", body: str = "Thanks, not now.",
          message_id: str | None = None, in_reply_to: bool = True, subject: str = "Re: Hello Ada") -> bytes:
    threading = f"In-Reply-To: {to_message_id}\r\nReferences: {to_message_id}\r\n" if in_reply_to else ""
    return (
        f"From: Ada <{sender}>\r\nTo: sender0@outreach.test\r\nSubject: {subject}\r\n"
        f"Message-ID: {message_id or _id()}\r\nDate: Sun, 29 Nov 2026 10:00:00 +0000\r\n{threading}"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n\r\nOn Sun, Nov 29, 2026, Sales wrote:\r\n> Hello\r\n"
    ).encode()


def dsn(*, original_message_id: str, recipient: str, status: str = "5.1.1", action: str = "failed",
        diagnostic: str = "550 5.1.1 user unknown") -> bytes:
    boundary = "dsn-" + uuid.uuid4().hex
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.example>\r\nTo: sender0@outreach.test\r\n"
        f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {_id()}\r\nAuto-Submitted: auto-replied\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n"
        f"--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: {action}\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; {diagnostic}\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: sender0@outreach.test\r\nTo: {recipient}\r\n"
        f"Subject: Hello\r\nMessage-ID: {original_message_id}\r\n\r\n--{boundary}--\r\n"
    ).encode()


def arf(*, original_message_id: str, recipient: str) -> bytes:
    boundary = "arf-" + uuid.uuid4().hex
    return (
        f"From: feedback@isp.example\r\nTo: abuse@outreach.test\r\nSubject: Abuse report\r\nMessage-ID: {_id()}\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=feedback-report; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n"
        f"--{boundary}\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nUser-Agent: ISP-FBL/1.0\r\n"
        f"Version: 1\r\nOriginal-Rcpt-To: {recipient}\r\nOriginal-Mail-From: sender0@outreach.test\r\n\r\n"
        f"--{boundary}\r\nContent-Type: message/rfc822\r\n\r\nFrom: sender0@outreach.test\r\nTo: {recipient}\r\n"
        f"Subject: Hello\r\nMessage-ID: {original_message_id}\r\n\r\nHi\r\n--{boundary}--\r\n"
    ).encode()


def out_of_office(*, to_message_id: str, sender: str = "ada@example.com") -> bytes:
    return (
        f"From: {sender}\r\nTo: sender0@outreach.test\r\nSubject: Out of Office: Hello Ada\r\n"
        f"Message-ID: {_id()}\r\nAuto-Submitted: auto-replied\r\nIn-Reply-To: {to_message_id}\r\n\r\n"
        "I am away until Monday.\r\n"
    ).encode()
