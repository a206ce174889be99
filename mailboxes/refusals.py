"""Refusals that name the sender's authentication or a blocklist: pure reading of a server's reply, no I/O.

Such a refusal says nothing about the recipient and much about the mailbox: Gmail's 550 5.7.26 (unauthenticated
mail, DMARC), Outlook's 550 5.7.515 (the domain does not meet the required authentication level), and a
5.7.1 or 5.7.x reply that says the sender is blocked or on a blocklist (Spamhaus, "poor reputation"). The
deliverability guardrail counts them against the mailbox and pauses it at a rate, as it does for hard bounces.
"""

from __future__ import annotations

import re

AUTH_CODES = re.compile(r"\b5\.7\.(?:26|515|23|27)\b")  # DMARC/unauthenticated, MS auth level, SPF fail
POLICY_CODE = re.compile(r"\b5\.7\.\d{1,3}\b")
BLOCK_WORDS = re.compile(r"block(?:ed|list|listed)?\b|blacklist|reputation|spamhaus|\bRBL\b|\bDNSBL\b",
                         re.IGNORECASE)
AUTH_WORDS = re.compile(r"unauthenticated|DMARC|SPF|DKIM|authentication level|not authenticated", re.IGNORECASE)

AUTHENTICATION = "authentication"
BLOCKLIST = "blocklist"


def refusal_reason(text: str) -> str:
    """"authentication", "blocklist" or '' for a 5xx reply's text (enhanced status code and words)."""
    if not text.lstrip().startswith("5") and not POLICY_CODE.search(text):
        return ""
    if AUTH_CODES.search(text):
        return AUTHENTICATION
    if POLICY_CODE.search(text):
        if BLOCK_WORDS.search(text):
            return BLOCKLIST
        if AUTH_WORDS.search(text):
            return AUTHENTICATION
    return ""


def refusal_words(reason: str) -> str:
    return {AUTHENTICATION: "refused for the sending domain's authentication (SPF, DKIM or DMARC)",
            BLOCKLIST: "refused because the sender is on a blocklist or has a poor reputation"}.get(reason, "")
