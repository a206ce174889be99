"""Enhanced status codes (RFC 3463) that mark a refusal as permanent for the address: what an SMTP transport
reads at RCPT TO and what the bounce classifier reads in a DSN."""

# RFC 3463 codes that name the address or its domain as permanently bad: a hard bounce,
# whether the classifier reads it in a DSN or an SMTP transport gets it at RCPT TO.
HARD_STATUS_CODES = {
    "5.1.0": "other address status",
    "5.1.1": "bad destination mailbox address",
    "5.1.2": "bad destination system address",
    "5.1.3": "bad destination mailbox address syntax",
    "5.1.6": "destination mailbox has moved",
    "5.1.10": "recipient address has null MX (RFC 7505)",
    "5.4.4": "unable to route (no such domain)",
}
