"""Reply ingestion: poll IMAP folders, record each message once, correlate, and stop what must stop.

The IMAP conversation happens with no transaction open. Each fetched message
is then committed in its own short durable transaction that writes the inbound
ledger row, its effects (through the send side's stop and suppression
services) and the folder cursor together: a crash between messages loses
nothing and a re-fetch changes nothing.

One module per step: parse (pure: raw -> fields and classification),
correlate (reads: which job and enrollment it answers), effects (a table
kind -> action), record (one transaction: the inbound row and its effect),
poll (the IMAP cursor loop, no transaction across IMAP).
"""
