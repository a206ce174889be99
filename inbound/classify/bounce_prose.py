"""2c. Non-standard bounces (prose from qmail, Exim, Postfix, Sendmail, ...)."""

from __future__ import annotations

import email
import email.policy
import re
from email.message import Message

from .evidence import (
    EMAIL_RE,
    addresses_in,
    embedded_message_ids,
    embedded_recipients,
    is_null_sender,
    on_lowered,
    own_reply_ids,
    status_codes_in,
    unique,
)
from .mime import MAX_SCAN, header_of, headers_of
from .result import Classification
from .text import returned_copy_text
from .verdict import HARD_STRONG_LOWER, MAILBOX_FULL_LOWER, Failure, attach_prose, bounce_result

_DAEMON_SENDER_RE = re.compile(
    r"mailer-daemon|mail-daemon|mailerdaemon|postmaster|post_master|mail delivery (subsystem|system)"
    r"|mail administrator|ndr administrator",
    re.I,
)
_BOUNCE_SUBJECT_RE = re.compile(
    r"undeliver|undelivered|returned mail|returning message|mail delivery fail|delivery (status )?notification"
    r"|delivery fail|failure notice|failed delivery|delivery failure|non[- ]?delivery|could not be delivered"
    r"|not delivered|delivery problem|mail system error|delivery status|delayed mail|mail failure"
    r"|returned to sender|error sending your mail|unzustellbar|nicht zustellbar|non remis|non recapitabile"
    r"|could not send message for past|still undelivered|delivery delayed|delayed delivery|message delayed"
    r"|no entregado|onbestelbaar|não entregue",
    re.I,
)
# Wording only an MTA writes: enough on its own.
_MTA_SIGNATURE_RE = re.compile(
    r"this is the qmail-send program"
    r"|created automatically by mail delivery software"
    r"|this is the mail system at host"
    r"|this is the mailer-daemon"
    r"|this is the dragonfly mail agent"
    r"|transcript of session follows"
    r"|following addresses had (permanent|transient) (fatal |delivery )?errors"
    r"|smtp error from remote mail server"
    r"|remote host said:"
    r"|delivery has failed to these recipients"
    r"|i'm afraid i wasn't able to deliver",
    re.I,
)
# Wording a bounce uses but a person might too: needs another signal.
_BOUNCE_BODY_RE = re.compile(
    r"(permanent|temporary|transient) (fatal )?errors?"
    r"|could not be delivered"
    r"|(message|mail) (could not|couldn't|cannot|can't|was not|wasn't) (be )?deliver"
    r"|delivery to the following recipients? (failed|has been delayed)"
    r"|did not reach the following recipient"
    r"|was not delivered to"
    r"|(unable|failed) to deliver"
    r"|an error (has occurred|occurred) while attempting to deliver"
    r"|there was an error delivering your mail"
    r"|rcpt to:"
    r"|your message was rejected"
    r"|delivery (to .{1,80} )?(has been )?delayed"
    r"|(still being|will be) retried"
    r"|not yet been delivered"
    r"|still undelivered after|will keep trying until|this is a warning message only|could not send message for past"
    r"|following recipients? (could not|cannot) be reached",
    re.I,
)


def prose_bounce(msg: Message, notification: str) -> Classification | None:
    failed_header = ",".join(headers_of(msg, "X-Failed-Recipients"))
    if not (failed_header or looks_like_bounce(msg, notification)):
        return None
    failures = _prose_failures(msg, notification, failed_header)
    ids = unique(embedded_message_ids(msg, returned_copy_text(msg)) + own_reply_ids(msg))
    source = "X-Failed-Recipients" if failed_header else "bounce prose"
    rule = "x_failed_recipients" if failed_header else "bounce_prose"
    if not failures:
        recipients = _flufl_recipients(msg) or embedded_recipients(msg) or _inline_original_to(msg)
        failures = [Failure(recipient=r, status="", text=notification, context=notification) for r in recipients]
        source += " (recipient from fallback)"
        rule += "_fallback"
    if not failures:
        failures = [Failure(recipient="", status="", text=notification, context=notification)]
    delay = _is_delay_warning(notification)
    for failure in failures:
        failure.status = failure.status or _pick_status(status_codes_in(failure.text))
        if delay:
            failure.action = "delayed"
    if delay:
        source, rule = f"{source} (delay warning)", f"{rule}_delay"
    return bounce_result(failures, ids, source=source, rule=rule, extra_codes=status_codes_in(notification))


# A warning while the MTA is still retrying: the prose counterpart of RFC 3464
# "Action: delayed" (Sendmail's "THIS IS A WARNING MESSAGE ONLY", Postfix's
# "Delayed Mail (still being retried)", Exim's "has not yet been delivered").
_DELAY_RE = re.compile(
    r"warning message only|you do not need to resend|still undelivered after|will keep trying until"
    r"|could not send message for past|still being retried|has not yet been delivered|will be retried"
    r"|delivery (to .{1,80} )?(has been )?delayed|will (continue to )?(retry|try again) (for|until)",
    re.I,
)
# Wording that the MTA gave up: a failure, even if it also mentions retrying.
_GAVE_UP_RE = re.compile(
    r"permanent(ly)? (fatal )?(error|failure|failed)|given up|giving up|gave up|fatal error"
    r"|could not be delivered|was not delivered|undeliverable|returned to sender|delivery has failed",
    re.I,
)


def _is_delay_warning(notification: str) -> bool:
    head = notification[:20_000]
    return bool(_DELAY_RE.search(head)) and not _GAVE_UP_RE.search(head)


def looks_like_bounce(msg: Message, notification: str) -> bool:
    head = notification[:20_000].lower()
    if _MTA_SIGNATURE_LOWER.search(head):
        return True
    sender = header_of(msg, "From") + " " + header_of(msg, "Sender")
    daemon = bool(_DAEMON_SENDER_RE.search(sender))
    # RFC 5321 §4.5.5: DSNs go out with a null reverse-path, but so do
    # RFC 3834 auto-replies; it only supports other evidence.
    null_sender = is_null_sender(msg)
    subject = bool(_BOUNCE_SUBJECT_RE.search(header_of(msg, "Subject")))
    body = bool(_BOUNCE_BODY_LOWER.search(head))
    # One weak signal alone is not enough: a person may write "returned mail"
    # in a subject, and an out-of-office may say "no longer with the company".
    # A person's reply to us carries In-Reply-To; a bounce does not.
    if ((daemon or null_sender) and (subject or body)) or (subject and body):
        return True
    replying = bool(header_of(msg, "In-Reply-To"))
    if not (daemon or (body and not replying)):
        return False
    # A failure reason backs the one signal; it is the costliest test, so it runs last.
    return bool(MAILBOX_FULL_LOWER.search(head) or HARD_STRONG_LOWER.search(head))


_MTA_SIGNATURE_LOWER = on_lowered(_MTA_SIGNATURE_RE)
_BOUNCE_BODY_LOWER = on_lowered(_BOUNCE_BODY_RE)


def _inline_original_to(msg: Message) -> list[str]:
    copy = returned_copy_text(msg)
    match = re.search(r"^To:[ \t]*([^\r\n]{1,500})", copy, re.M | re.I)
    return unique(addresses_in(match.group(1))) if match else []


def _prose_failures(msg: Message, notification: str, failed_header: str) -> list[Failure]:
    ours = _our_addresses(msg)
    if failed_header:
        recipients = [a for a in addresses_in(failed_header) if a not in ours]
    else:
        recipients = _prose_recipients(notification, ours)
    failures = [Failure(recipient=r, status="", text="") for r in unique(recipients)]
    attach_prose(failures, notification)
    return failures


def _our_addresses(msg: Message) -> set[str]:
    """Addresses on the bounce itself: the daemon and us, never the failed one."""
    found: set[str] = set()
    for name in ("From", "To", "Return-Path", "Delivered-To", "Reply-To", "Sender", "Errors-To"):
        for value in headers_of(msg, name):
            found.update(addresses_in(value))
    return found


# Where an MTA names the failed address. All of these are structural.
_RECIPIENT_PATTERNS = [
    # qmail / Postfix / Sendmail: "<user@example.com>:" or "<user@example.com>" alone on a line
    re.compile(r"^[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>[ \t]*(?::|\(expanded from|\.{3}|$)", re.M),
    # SMTP transcript: "RCPT TO:<user@example.com>"
    re.compile(r"RCPT TO:[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>", re.I),
    # "550 5.1.1 <user@example.com>... User unknown"
    re.compile(r"\b[45]\d\d[ -]+(?:[45]\.\d{1,3}\.\d{1,3}[ \t]+)?<(?P<a>[^<>\s]+@[^<>\s]+)>(?:\.{3}|:|[ \t])", re.I),
    # "user@example.com: 550 ..." / "user@example.com" alone (or "... on <date>") on a line
    re.compile(
        r"^[ \t]*(?P<a>[^<>\s:;,()\"\[\]]+@[^<>\s:;,()\"\[\]]+?)[ \t]*(?::|$| on | \(|<mailto:|\s+[45]\d\d[ -]|\s+\[)",
        re.M,
    ),
]
_LOOSE_RECIPIENT_CONTEXT = re.compile(
    r"(?:\bto|recipients?|address(?:es)?|user|for|mailbox|account)[\s:]{0,5}(?:\(s\))?[\s:]{0,5}[\"<(]?$", re.I
)


def _prose_recipients(notification: str, ours: set[str]) -> list[str]:
    text = notification[:MAX_SCAN]
    positioned: list[tuple[int, str]] = []
    for pattern in _RECIPIENT_PATTERNS:
        for match in pattern.finditer(text):
            address = _clean_address(match.group("a"))
            if address and address not in ours and not _is_daemon_address(address):
                positioned.append((match.start("a"), address))
    if positioned:
        return unique(address for _, address in sorted(positioned))
    # Last resort: an address right after "to" / "recipient" / "address".
    loose = []
    for match in EMAIL_RE.finditer(text):
        before = text[max(0, match.start() - 40) : match.start()]
        address = match.group(0).lower()
        if address not in ours and not _is_daemon_address(address) and _LOOSE_RECIPIENT_CONTEXT.search(before):
            loose.append(address)
    return unique(loose)


def _clean_address(value: str) -> str:
    found = EMAIL_RE.search(value.strip().strip("<>.,;:'\""))
    return found.group(0).lower() if found else ""


def _is_daemon_address(address: str) -> bool:
    local = address.split("@", 1)[0]
    return local in {"mailer-daemon", "postmaster", "mailerdaemon", "mail-daemon"}


def _pick_status(codes: list[str]) -> str:
    """Prefer a specific code (5.1.1) over a generic one (5.0.0)."""
    specific = [c for c in codes if not c.endswith(".0.0")]
    return (specific or codes or [""])[0]


def _flufl_recipients(msg: Message) -> list[str]:
    """flufl.bounce as a last resort for the address only, never for hard/soft.

    It reports mailbox-full as permanent, and some detectors raise on a
    message without From: (skipped here; the wide try covers the rest).
    """
    if not addresses_in(header_of(msg, "From")):
        return []
    try:
        from flufl.bounce import all_failures

        compat = email.message_from_bytes(msg.as_bytes(policy=email.policy.compat32))
        temporary, permanent = all_failures(compat)
    except Exception:
        return []
    found = []
    for value in list(permanent) + list(temporary):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        found.extend(addresses_in(text))
    return unique(found)
