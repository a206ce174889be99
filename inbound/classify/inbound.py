"""One parsed message plus the texts several checks read, each computed once."""

from __future__ import annotations

from email.message import Message
from functools import cached_property

from .challenge import is_challenge_response
from .evidence import decode_local_parts
from .mime import parts_not_read
from .quotes import extract_reply_text
from .text import body_text, notification_text


class Inbound:
    """One parsed message plus the texts several checks read (computed once)."""

    def __init__(self, msg: Message) -> None:
        self.msg = msg

    @cached_property
    def notification(self) -> str:
        # Encoded-word local parts decoded once, so the prose names the same
        # address as the DSN fields.
        return decode_local_parts(notification_text(self.msg))

    @cached_property
    def challenge_response(self) -> bool:
        return is_challenge_response(self.msg, self.notification)

    @cached_property
    def body_not_read(self) -> bool:
        """The body's parts are beyond the bounds read (mime.parse_for_classify): an empty text says nothing."""
        return bool(parts_not_read(self.msg))

    @cached_property
    def whole_text(self) -> str:
        """The body's text with the quote it carries: what reply_text answers."""
        return body_text(self.msg)

    @cached_property
    def reply_text(self) -> str:
        return extract_reply_text(self.whole_text)
