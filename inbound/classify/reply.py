"""5. Human replies and unsubscribe requests."""

from __future__ import annotations

import re

from mailboxes.kinds import Kind

from .evidence import own_reply_ids
from .inbound import Inbound
from .mime import header_of
from .result import Classification

# An unsubscribe request suppresses the address for good, so only clear
# requests count: imperative "remove me" wording, in a few languages.
# The whole subject, not a word in it: "Re: Stop losing leads" is a reply.
_UNSUBSCRIBE_SUBJECT_RE = re.compile(
    r"^\W*((re|aw|sv|fw|fwd|wg|tr|rv)\s*:\s*)*(unsubscribe|remove me|remove|opt[ -]?out|stop)\W*$", re.I
)
_UNSUBSCRIBE_RE = re.compile(
    r"\bunsubscribe\b|\bremove me\b|\bremove (my|our) (e-?mail|address|name|contact)"
    r"|\bremove (us|me) from\b|\btake (me|us|my (e-?mail|address)) off\b"
    r"|\bstop (e-?mailing|emailing|sending|contacting|writing to)\b"
    r"|\b(do not|don't|dont|never) (e-?mail|contact|write to|message) (me|us)( again)?\b"
    r"|\bopt (me|us) out\b|\b(want|like|wish) to opt[ -]?out\b|^\W*opt[ -]?out\W*$"
    r"|\bplease remove (me|us|my|our|this (e-?mail|address))\b|\bno more e-?mails\b"
    r"|\b(abmelden|austragen|abbestellen)\b|keine (weiteren )?(e-?mails|nachrichten) mehr"
    r"|désabonn|désinscri|retirez[- ]moi|ne plus recevoir"
    r"|dar(me)? de baja|no me (envíe|envíen|escriba|contacte)|eliminar(me)? de (su|la|vuestra) lista"
    r"|cancellami|disiscriv|rimuovetemi|rimuovermi|non (scrivermi|contattarmi)"
    r"|uitschrijven|afmelden|verwijder (mij|me)|descadastr|remover da lista|cancelar (a )?inscrição"
    r"|wypisz mnie|usuń mnie|wypisać",
    re.I,
)
# Footers that mention unsubscribing are not a request.
_FOOTER_LINE_RE = re.compile(
    r"https?://|mailto:|to unsubscribe from|you received this|click here|manage (your )?subscription", re.I
)


# Mail clients' one-click unsubscribe (Apple Mail and others answer a
# List-Unsubscribe mailto: for the user, RFC 2369 / RFC 8058's intent) is
# machine-sent and marked Auto-Submitted, but it is the person's request.
_CLIENT_UNSUBSCRIBE_BODY_RE = re.compile(
    r"(generated|sent) (automatically )?(by|from) .{0,60}\bto unsubscribe\b"
    r"|\bto unsubscribe (you |this address )?from (this|the|a|your) (mailing )?list"
    r"|\bunsubscribe request\b|\brequest(ed)? to unsubscribe\b",
    re.I,
)
_LIST_HEADERS = {"list-unsubscribe", "list-unsubscribe-post", "list-id"}


def check_client_unsubscribe(mail: Inbound) -> Classification | None:
    """An unsubscribe mail a client sent on the person's behalf: before the auto-reply check claims it."""
    msg = mail.msg
    auto_submitted = header_of(msg, "Auto-Submitted").lower()
    if not auto_submitted or auto_submitted.startswith("no") or header_of(msg, "List-Id"):
        return None
    subject = header_of(msg, "Subject")
    names = {str(name).lower() for name in msg.keys()}
    unsubscribe_header = any("unsubscribe" in name for name in names - _LIST_HEADERS)
    if not (
        _UNSUBSCRIBE_SUBJECT_RE.search(subject)
        or _CLIENT_UNSUBSCRIBE_BODY_RE.search(mail.reply_text[:3000])
        or (unsubscribe_header and "unsubscribe" in subject.lower())
    ):
        return None
    return Classification(
        kind=Kind.UNSUBSCRIBE_REQUEST,
        original_message_ids=tuple(own_reply_ids(msg)),
        reason=f"unsubscribe mail sent by the person's mail client (Auto-Submitted: {auto_submitted})",
        reply_text=mail.reply_text,
        rule="client_unsubscribe",
    )


def check_human(mail: Inbound) -> Classification:
    msg, text = mail.msg, mail.reply_text
    ids = tuple(own_reply_ids(msg))
    subject = header_of(msg, "Subject")
    rule = reason = ""
    if _UNSUBSCRIBE_SUBJECT_RE.search(subject):
        rule, reason = "unsubscribe_subject", f"subject asks to unsubscribe: {subject[:80]}"
    elif phrase := _unsubscribe_phrase(text):
        rule, reason = "unsubscribe_text", f"reply asks to stop: {phrase!r}"
    if reason:
        return Classification(
            kind=Kind.UNSUBSCRIBE_REQUEST, original_message_ids=ids, reason=reason, reply_text=text, rule=rule
        )
    return Classification(
        kind=Kind.HUMAN_REPLY, original_message_ids=ids, reason="person's mail", reply_text=text, rule="human"
    )


def _unsubscribe_phrase(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    # Requests to stop are short and come first; signatures and disclaimers
    # further down often mention "unsubscribe" without asking for anything.
    for line in lines[:8]:
        if line.strip() in {"--", "-- "} or _FOOTER_LINE_RE.search(line):
            continue
        match = _UNSUBSCRIBE_RE.search(line)
        if match:
            return match.group(0)
    return ""
