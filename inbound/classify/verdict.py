"""2d. Hard or soft: each failed recipient judged on its own, and the bounce they make together."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mailboxes.status_codes import HARD_STATUS_CODES

from ..kinds import BounceType, Kind
from .evidence import REPLY_CODE_RE, on_lowered, unique
from .result import Classification


@dataclass
class Failure:
    recipient: str
    status: str  # RFC 3463 code or ""
    text: str  # the diagnostic for this recipient (Diagnostic-Code or its prose)
    context: str = ""  # surrounding prose: which SMTP command failed, etc.
    action: str = ""  # RFC 3464 Action, "" outside a DSN
    whole: str = ""  # all the prose, when this is the only failure
    dsn_status: str = ""  # the DSN's own per-recipient Status field (RFC 3464 §2.3.4), "" outside a DSN


def attach_prose(failures: list[Failure], notification: str) -> None:
    """Give each failure the prose about its recipient.

    The stretch runs from the line naming the recipient to the line naming the
    next one, so boilerplate above the list is left out; a lone recipient
    whose address the prose never repeats gets all of it.
    """
    recipients = [f.recipient for f in failures if f.recipient]
    segments = _segments(notification, recipients)
    for failure in failures:
        prose = segments.get(failure.recipient, "")
        if len(failures) == 1:
            failure.whole = notification
            prose = prose or notification
        failure.context = prose
        if not failure.text:
            failure.text = prose


def _segments(text: str, recipients: list[str]) -> dict[str, str]:
    """One stretch of prose per recipient: from its first mention to the next one's."""
    lowered = text.lower()
    starts = []
    for recipient in unique(recipients):
        position = lowered.find(recipient)
        if position >= 0:
            # Start at the beginning of that line: "RCPT TO:<x>" context.
            line_start = lowered.rfind("\n", 0, position) + 1
            starts.append((line_start, recipient))
    starts.sort()
    segments = {}
    for index, (position, recipient) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        segments[recipient] = text[position : min(max(end, position + 1), position + 3000)]
    return segments


@dataclass(frozen=True)
class _Verdict:
    bounce_type: str
    why: str


# Soft even with a 5.x.x code: a full mailbox empties (RFC 3463 X.2.2 is
# "persistent transient" in practice, and some MTAs send 5.x.x for it).
_MAILBOX_FULL_RE = re.compile(
    r"mailbox (is )?full|mailbox.{0,30}\bis full|over ?quota|quota (exceeded|full)"
    r"|exceed(s|ed)? (the |his |her |their |its )?(storage|quota|mailbox)|insufficient (system )?storage"
    r"|disk quota|mail ?(box|folder) (is )?full|mailfolder is full|not enough (storage|space)"
    r"|out of (storage|space)|storage (limit|full)|mailbox size limit"
    r"|boîte (aux lettres )?pleine|postfach (ist )?voll|buzón lleno|casella .{0,20}piena|caixa .{0,20}cheia",
    re.I,
)
# The failure is about us (sender address, HELO name, relaying for us), not
# about the recipient's address.
_ABOUT_US_RE = re.compile(
    r"sender (address |domain )?(rejected|denied|unknown|invalid|verify|not)|sender's (address|domain)"
    r"|(unroutable|invalid|unknown|bad) sender|after mail from|my name was rejected"
    r"|(helo|ehlo) (command )?(rejected|refused|denied)|(invalid|bad) (helo|ehlo)"
    r"|reverse (dns|lookup)|open relay|client host",
    re.I,
)
# Permanent reasons tied to the address or its domain: suppress after one event.
_HARD_STRONG_RE = re.compile(
    r"user ?unknown|unknown (user|recipient|local[- ]part|mailbox|address|e-?mail)|recipient unknown"
    r"|address unknown|addressee unknown"
    r"|no such (user|recipient|mailbox|account|address|local user|person)"
    r"|no (such )?(user|account|mailbox) (by|with|of) that name"
    r"|(user|recipient|mailbox|account|address)( name)? (is )?(not found|not recogni[sz]ed|invalid)"
    r"|(user|recipient|mailbox|account|address) .{0,40}(does not|doesn't|did not) exist"
    r"|(couldn't|could not|cannot|can't) be found|not listed in (the )?(domino )?directory"
    r"|not a valid (mailbox|recipient|user)|invalid (recipient|mailbox|user)|unknown or illegal alias"
    r"|no mailbox here|mailbox not found|not our customer|recipient address rejected: access denied"
    r"|(doesn't|does not) have an? .{1,40} account"
    r"|host (or domain name )?(not found|unknown)|unknown host|domain (not found|does not exist|unknown)"
    r"|no such domain|invalid domain|unrouteable address|unroutable address|domain name not found|nxdomain"
    r"|no mx (record|host)"
    r"|has moved|no longer (valid|active|available|in use|exists|with|employed|accepts?)"
    r"|does not accept (e-?)?mail|null mx|no smtp service"
    r"|(utilisateur|adresse|destinataire|compte) (inconnu|introuvable)"
    r"|(benutzer|empfänger|adresse|postfach) (ist )?(unbekannt|existiert nicht)"
    r"|usuario (desconocido|no existe)|(utente|indirizzo) (sconosciuto|inesistente|non esiste)"
    r"|(usuário|endereço) (desconhecido|não existe|inexistente)|(gebruiker|adres) (onbekend|bestaat niet)",
    re.I,
)
MAILBOX_FULL_LOWER = on_lowered(_MAILBOX_FULL_RE)
HARD_STRONG_LOWER = on_lowered(_HARD_STRONG_RE)
# Reasons that may heal or are about content, reputation, rate or route.
_SOFT_RE = re.compile(
    r"too (large|big)|size (limit|exceed)|exceeds? (the )?(maximum )?(message )?size|message size"
    r"|spam|junk|blocked|block ?list|black ?list|blacklisted|listed (in|on|at|by)|\brbl\b|dnsbl|spamhaus"
    r"|reputation|policy|prohibited|not (allowed|permitted|authorized)|relay(ing)? (access )?denied"
    r"|relay not permitted|no relaying|unauthenticated|authentication|\bspf\b|\bdkim\b|\bdmarc\b|\bptr\b"
    r"|rdns|greylist|gr[ae]ylisted|try (again )?later|temporar|rate limit|too many|exceeded (the )?(rate|limit)"
    r"|expired|time ?out|timed out|retry time|deferred|delayed|connection (refused|reset|lost)|network"
    r"|name ?server|servfail|\btls\b|starttls|virus|malware|content (rejected|filter)|suspicious"
    r"|loop|hop count|service unavailable|system (error|busy)|resources|not member|refused|mailer error"
    r"|dns (error|failure)|lookup fail|not accepting (network )?messages",
    re.I,
)
# Weaker permanent wording; only after the soft reasons have had their say.
# An account that is gone (closed, deleted) is hard. A disabled, inactive or
# suspended one (RFC 3463 X.2.1) can be switched back on, so it stays soft:
# one such bounce must not suppress the address for good.
_HARD_WEAK_RE = re.compile(
    r"mailbox (is )?(unavailable|not available)|account (is |has been )?"
    r"(closed|terminated|discontinued|removed|deleted)",
    re.I,
)
# RFC 3463 X.1.1 (bad mailbox) / X.1.6 (moved): a DSN Status naming the address itself.
_ADDRESS_CODES = {"5.1.1", "5.1.6"}
# RFC 3463 X.1.7 / X.1.8: the *sender's* address is bad.
_SENDER_CODES = {"5.1.7", "5.1.8", "4.1.7", "4.1.8"}
# RFC 5321 §3.3: addresses are judged at RCPT TO. A "user unknown" returned
# for the end of DATA is a content decision worded as an address problem
# (common with mobile carriers' filters), so it must not suppress.
_AFTER_DATA_RE = re.compile(
    r"in reply to end of\s+data\s+command|after end of data|after data command|failed after i sent the message"
    r"|>>> data\s*\n\s*<<< 5\d\d(?! 5\.0\.0 need)",
    re.I,
)
# With PIPELINING (RFC 2920) Sendmail logs the RCPT replies after ">>> DATA";
# "no valid recipients" as the DATA reply shows the rejection was at RCPT.
_AT_RCPT_RE = re.compile(
    r"in reply to rcpt to\s+command|after rcpt to|does not like recipient|did not like our rcpt to"
    r"|>>> rcpt to:[^\n]*\n\s*<<< [45]\d\d|no valid recipients|need rcpt|all rcpt commands were rejected",
    re.I,
)


def _bounce_verdict(failure: Failure) -> _Verdict:
    verdict = _judge(failure, failure.text[:20_000], failure.context[:20_000])
    if verdict is _UNEXPLAINED and failure.whole and failure.whole != failure.text:
        # The reason may sit above the recipient line ("Mailbox full: <addr>").
        verdict = _judge(failure, failure.whole[:20_000], failure.whole[:20_000])
    return verdict


# Permanent but unexplained (5.0.0, 5.5.x, 5.7.x, ...): one such event is not
# enough to suppress an address.
_UNEXPLAINED = _Verdict(BounceType.SOFT, "permanent failure without a recognised address reason")


# RFC 3463 codes that name a mailbox which exists but cannot take this mail
# now; the code outranks wording such as "user unknown" elsewhere in the
# report (Sendmail, for one, adds its own "User unknown" line to any refusal).
_MAILBOX_STATE_CODES = {
    "5.2.1": "mailbox disabled (RFC 3463 X.2.1)",
    "5.2.2": "mailbox full / over quota",
    "5.2.3": "message too large",
    "5.3.4": "message too large",
}


def _code_overrides_text(status: str, text: str) -> bool:
    """True unless the reply carrying *status* itself gives an address reason.

    Codes first, prose as the tie-breaker (RFC 3463): only the words of the
    very reply that holds the code ("550 5.2.1 <x>... User Unknown") can
    contradict it; a "user unknown" on another line cannot.
    """
    if status not in _MAILBOX_STATE_CODES or status == "5.2.2":
        return status in _MAILBOX_STATE_CODES
    for line in text.splitlines():
        if status in line:
            reply = line[line.index(status) :]
            if _HARD_STRONG_RE.search(reply):
                return False
    return True


def _judge(failure: Failure, text: str, context: str) -> _Verdict:
    status, action = failure.status, failure.action
    context = context or text
    if action == "delayed":
        return _Verdict(BounceType.SOFT, "DSN Action: delayed")
    # RFC 3463 §3.1: class 4 is a transient condition, even when the MTA has
    # given up (Action: failed) - still a failed delivery, never a hard one.
    if status.startswith("4") or _only_transient_replies(text, status):
        return _Verdict(BounceType.SOFT, "transient (4.x.x) failure")
    if status in _SENDER_CODES or _ABOUT_US_RE.search(text):
        return _Verdict(BounceType.SOFT, "rejected because of the sender, not the address")
    if _code_overrides_text(status, text):
        return _Verdict(BounceType.SOFT, _MAILBOX_STATE_CODES[status])
    if _MAILBOX_FULL_RE.search(text):
        return _Verdict(BounceType.SOFT, "mailbox full / over quota")
    hard = _HARD_STRONG_RE.search(text)
    # An explicit per-recipient DSN Status naming a bad address outranks the
    # transcript: with PIPELINING the RCPT replies are printed after ">>> DATA".
    explicit = failure.dsn_status in _ADDRESS_CODES
    if hard and not explicit and _AFTER_DATA_RE.search(context) and not _AT_RCPT_RE.search(context):
        return _Verdict(BounceType.SOFT, f"'{hard.group(0).lower()}' after DATA: content filter, not the address")
    if hard:
        return _Verdict(BounceType.HARD, hard.group(0).lower())
    soft = _SOFT_RE.search(text)
    if soft:
        return _Verdict(BounceType.SOFT, soft.group(0).lower())
    weak = _HARD_WEAK_RE.search(text)
    if weak:
        return _Verdict(BounceType.HARD, weak.group(0).lower())
    if status in HARD_STATUS_CODES:
        return _Verdict(BounceType.HARD, HARD_STATUS_CODES[status])
    return _UNEXPLAINED


def _only_transient_replies(text: str, status: str) -> bool:
    if status:
        return False
    codes = {m.group(1)[0] for m in REPLY_CODE_RE.finditer(text[:20_000])}
    return codes == {"4"}


def bounce_result(
    failures: list[Failure], ids: list[str], *, source: str, rule: str, extra_codes: list[str] | None = None
) -> Classification:
    verdicts = [_bounce_verdict(f) for f in failures]
    recipients, types = [], []
    for failure, verdict in zip(failures, verdicts, strict=True):
        if failure.recipient and failure.recipient not in recipients:
            recipients.append(failure.recipient)
            types.append(verdict.bounce_type)
    all_hard = verdicts and all(v.bounce_type == BounceType.HARD for v in verdicts)
    overall = BounceType.HARD if all_hard else BounceType.SOFT
    codes = unique([f.status for f in failures] + (extra_codes or []))
    first = failures[0]
    action = f" Action: {first.action}" if first.action else ""
    status = f" Status: {first.status}" if first.status else ""
    return Classification(
        kind=Kind.BOUNCE,
        bounce_type=overall,
        recipients=tuple(recipients),
        status_codes=tuple(c for c in codes if c[:1] in {"4", "5"}),
        original_message_ids=tuple(ids),
        reason=f"{source}{action}{status} ({verdicts[0].why})",
        recipient_types=tuple(types),
        rule=rule,
    )
