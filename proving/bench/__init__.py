"""Benchmarks of the guarded pipeline and of reply ingestion: `python manage.py bench SUITE`.

Every figure is printed next to its baseline measured in the same run (the
pipeline without its final check, a bare IMAP fetch, pgbench, RQ's no-op job
rate, the lock-held design the product rejects). Nothing here asserts a time:
the suites print tables and write JSON.

Isolation: the command (the "outer" process, `runner.outer`) creates a
database `outreach_bench_<pid>` on the configured PostgreSQL server, migrates
it, starts a private redis-server on a free loopback port, and re-runs itself
("inner", `runner.inner`) with DATABASE_URL/REDIS_URL pointing at them, so the
inner process and every worker, poller and child it starts can only see
bench data. The outer process always drops the database and stops Redis.

This package imports no Django models at module level: `proving.bench.child`
runs the bare-IMAP baseline without Django.
"""
