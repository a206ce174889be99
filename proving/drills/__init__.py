"""Drills: the product's promise shown on a real stack, with evidence.

`python manage.py drill race` runs the two race fixtures (docs/architecture.md) with a
real `manage.py rqworker send` process paused at a checkpoint
(sequences.checkpoints' file protocol) and a stop committed through the same
path a real reply takes (inbound.ingest.inbound_record).
`python manage.py drill faults` kills workers, flushes and restarts Redis,
restarts PostgreSQL, breaks SMTP and IMAP and fuzzes ingestion, then audits
the database and the SMTP server's log.

Where a drill writes, and why (the choices this package makes):

- Database: never the configured one. A drill creates a dedicated database
  next to it (`outreach_drill_<pid>_<hex>` on the same PostgreSQL server, with
  the same credentials; a temp file for SQLite), migrates it, and drops it at
  the end. The drill process switches its own default connection to it (as
  Django's test runner does) and hands it to its subprocesses as
  DATABASE_URL. So the dispatcher a drill runs sees only drill jobs, and a
  drill worker can never pick up a real prospect's job. The configured
  database is only read, to look up `--mailbox`.
- Redis: the race drill uses the configured Redis server, on a database index
  it finds empty and claims (a key with a token), and deletes its keys at the
  end; production workers listening on `send` never see drill jobs, and the
  drill worker never sees theirs. The fault drills start a private
  redis-server on a free loopback port (they flush and restart it).
- PostgreSQL restart: only ever a private cluster the drill initdb's in a
  temp dir and starts with pg_ctl on a free loopback port.
- SMTP: by default a capture server the drill starts on a free loopback port;
  `--mailbox NAME` (race only) uses that mailbox's SMTP settings, and only if
  it is marked `is_drill_target`. Recipients are under drill.invalid.
- Processes: every subprocess runs in its own process group and is killed by
  its own pid/group; temp dirs are removed (kept with --keep).

The servers, mail and data builders are the ones the tests use
(proving.harness); `drill faults` also needs `dovecot` for its IMAP drills.
"""
