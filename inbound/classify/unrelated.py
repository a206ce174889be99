"""4. Unrelated traffic: newsletters, mailing lists, no-reply notifications, empty mail."""

from __future__ import annotations

import re

from ..kinds import Kind
from .evidence import addresses_in
from .inbound import Inbound
from .mime import header_of
from .result import Classification

_NO_REPLY_LOCAL_RE = re.compile(r"^(no-?reply|do-?not-?reply|donotreply|notifications?|newsletter|news)@", re.I)


def check_unrelated(mail: Inbound) -> Classification | None:
    msg = mail.msg
    if header_of(msg, "In-Reply-To"):
        # Anything answering a thread is left to the human check, so that
        # correlation can still match it to one of our messages.
        return None
    # Decision: newsletters and mailing-list posts (List-Id / List-Unsubscribe,
    # RFC 2919 / RFC 2369, or Precedence: list) are "unrelated", not
    # auto-replies: they answer nothing we sent and must not stop a sequence.
    # (Precedence: bulk/junk *without* list headers is an autoresponder's
    # mark and was claimed by the auto-reply check.)
    listed = header_of(msg, "List-Id") or header_of(msg, "List-Unsubscribe")
    if listed or header_of(msg, "Precedence").lower() == "list":
        return Classification(kind=Kind.UNRELATED, reason="newsletter / mailing-list traffic", rule="list_traffic")
    sender = ",".join(addresses_in(header_of(msg, "From")))
    if _NO_REPLY_LOCAL_RE.search(sender):
        return Classification(
            kind=Kind.UNRELATED, reason=f"notification from a no-reply sender ({sender})", rule="no_reply_sender"
        )
    if not mail.reply_text.strip() and not header_of(msg, "Subject") and not mail.body_not_read:
        return Classification(kind=Kind.UNRELATED, reason="empty message", rule="empty")
    return None
