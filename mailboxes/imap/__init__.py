"""IMAP client at the network edge: config in, network I/O, values out.

Knows nothing about Django or our models. The poller owns the cursor
(UIDVALIDITY, last UID) and the transactions; this package only talks IMAP.

``session.ImapSession`` is the one class callers use; its commands are
grouped by job: ``connection`` (connect, log in with a password or an OAuth2
token, translate failures), ``folders`` (LIST, EXAMINE, the configured
folders' check), ``fetch`` (UIDs after a cursor, messages and their sizes),
``idle`` (wait for new mail, or hand a session in IDLE over to ``idle_line``, which a multiplexing watcher
drives without blocking); ``errors`` holds what they raise.

Invariants this package keeps for the poller:
- Folders are opened with EXAMINE (read-only) and bodies fetched with
  BODY.PEEK[]: reading a mailbox never marks a human's mail as \\Seen.
- UIDs handed out are strictly greater than the cursor: a "N:*" search
  returns the highest message even when its UID is below N (RFC 3501 6.4.8),
  so the result is filtered here, not trusted.
- Every imapclient/socket failure surfaces as ImapError (or a subclass), so
  callers can tell "wrong password" from "server gone" without knowing
  imaplib's exception tree.
"""
