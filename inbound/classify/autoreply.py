"""3. Auto-replies (RFC 3834) and challenge-response systems.

Calling a person's reply "automatic" would let the next follow-up go out
after a real answer, the one failure this product exists to prevent. So
every rule here needs a machine-only signal; wording alone must be strong.
"""

from __future__ import annotations

import re

from ..kinds import Kind
from .evidence import embedded_message_ids, is_null_sender, own_reply_ids, unique
from .inbound import Inbound
from .mime import header_of
from .result import Classification
from .stop_wording import OOO_BODY_RE

# Markers an autoresponder puts into the subject, in the common languages.
_OOO_SUBJECT_RE = re.compile(
    r"out of (the )?office|auto(matic|matische|matisch|matica|mática|matyczna|matická|matique)?[ _-]?"
    r"(reply|response|respons|antwort|antwoord|risposta|respuesta|resposta|odpowied|réponse|odpověď|svar)"
    r"|autorespon|réponse automatique|abwesenheitsnotiz|fuera de la oficina|fuori ufficio|buiten kantoor"
    r"|fora do escritório|poza biurem|自動返信|自动回复|автоответ|автоматический ответ|otomatik yanıt",
    re.I,
)
# Words that also occur in ordinary subjects ("absence management"): only as
# the marker in front of the quoted subject, e.g. "Abwesend: Re: ...".
_OOO_SUBJECT_PREFIX_RE = re.compile(
    r"^\s*[\[(]?\s*(out of office|ooo|away|absent|absence|abwesend|abwesenheit|urlaub|vacation|holiday|on leave"
    r"|absent\(e\)|absence|congés|ausente|assente|afwezig|niet aanwezig|nieobecn\w*|frånvaro|fravær|poissa"
    r"|nepřítom\w*|不在|вне офиса)\s*[\]):-]",
    re.I,
)
_AUTOREPLY_HEADERS = ("X-Autoreply", "X-Autorespond", "X-Autoresponder", "X-Auto-Reply")


OOO_WORDING = "ooo_wording"  # the words alone say "away": no header, subject or return path does


def check_auto_reply(mail: Inbound) -> Classification | None:
    rule, reason = _auto_reply_reason(mail)
    if not reason:
        return None
    ids = tuple(unique(own_reply_ids(mail.msg) + embedded_message_ids(mail.msg)))
    return Classification(kind=Kind.AUTO_REPLY, original_message_ids=ids, reason=reason, rule=rule)


def _auto_reply_reason(mail: Inbound) -> tuple[str, str]:
    """(rule, reason), or ("", "") when nothing marks the mail as automatic."""
    msg = mail.msg
    if mail.challenge_response:
        return "challenge_response", "challenge-response system"
    auto_submitted = header_of(msg, "Auto-Submitted").lower()
    # RFC 3834 §5: any value other than "no" marks an automatic message.
    if auto_submitted and not auto_submitted.startswith("no"):
        return "auto_submitted", f"RFC 3834 Auto-Submitted: {auto_submitted}"
    for name in _AUTOREPLY_HEADERS:
        value = header_of(msg, name).lower()
        if value and value not in {"no", "false", "0"}:
            return "autoreply_header", f"{name} header"
    # X-Auto-Response-Suppress is deliberately not a signal on its own: it
    # asks *other* servers not to auto-reply ([MS-OXCMAIL] §2.1.3.2.20) and
    # Exchange puts it on plenty of mail written by people.
    subject = header_of(msg, "Subject")
    if _OOO_SUBJECT_RE.search(subject) or _OOO_SUBJECT_PREFIX_RE.search(subject):
        return "ooo_subject", f"out-of-office subject: {subject[:80]}"
    precedence = header_of(msg, "Precedence").lower()
    is_list = bool(header_of(msg, "List-Id") or header_of(msg, "List-Unsubscribe"))
    # Autoresponders mark their own mail Precedence: bulk/junk (RFC 3834 §3.1.8
    # asks responders to honour it); with list headers it is a newsletter.
    if precedence in {"bulk", "junk", "auto_reply", "auto-reply"} and not is_list:
        return "precedence", f"Precedence: {precedence}"
    if OOO_BODY_RE.search(mail.reply_text[:3000]):
        return OOO_WORDING, "out-of-office wording"
    # RFC 3834 §3.3 / RFC 5321 §4.5.5: automatic mail goes out with a null
    # return path; a person's mail never does.
    if is_null_sender(msg):
        return "null_sender", "null return path (Return-Path: <>)"
    return "", ""
