"""Reply ingestion: poll IMAP folders, record each message once, correlate, and stop what must stop.

The IMAP conversation happens with no transaction open. Mail that may act
(tied to something we sent, or machine-generated) is committed in its own
short durable transaction that writes the inbound ledger row, its effects
(through the send side's stop and suppression services) and the folder
cursor together; mail that cannot act is written as metadata-only rows, a
batch per transaction with the cursor. A crash loses nothing and a re-fetch
changes nothing.

One module per step: triage (pure: which headers leave it open that a mail
acts), parse (pure: raw -> fields and classification), correlate (reads:
which job and enrollment it answers), effects (a table kind -> action),
record (the transactions: rows, effects, cursor), batch (one batch of UIDs:
sizes, headers, bodies only where needed), poll (the folders, their cursors
and where a first sync starts), retention (raw source past its time).
"""
