"""A real Dovecot for the IMAP suites (proving/harness/dovecot.py, the tests' own) and fast backlogs.

A backlog of tens of thousands of messages is written straight into the
user's Maildir (cur/, owned by nobody like Dovecot's own files, mtime =
INTERNALDATE), which Dovecot indexes at the first SELECT -- APPENDing them one
by one would take minutes and measure nothing we care about.
"""

from __future__ import annotations

import grp
import os
import pwd
import time
from collections.abc import Iterable
from contextlib import contextmanager

from proving.harness.dovecot import Dovecot, dovecot_available


def dovecot_class():
    if not dovecot_available():
        raise RuntimeError("dovecot is not installed (apt-get install -y dovecot-imapd)")
    return Dovecot


@contextmanager
def dovecot(ctx, users: dict[str, str], extra_config: str = ""):
    """A started Dovecot whose process group the outer bench kills should this process die."""
    server = dovecot_class()(users, extra_config)
    try:
        server.start()
        ctx.register_group(server.master_pid)
        yield server
    finally:
        server.cleanup()


def _nobody() -> tuple[int, int]:
    return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid


def write_maildir(server, user: str, messages: Iterable[bytes], *, newest: float | None = None) -> int:
    """Write *messages* into USER's INBOX as Maildir files; returns how many. INTERNALDATE: 1 s apart."""
    uid, gid = _nobody()
    home = server.root / "mail" / user
    base = server.maildir(user)
    for path in (home, base, base / "cur", base / "new", base / "tmp"):
        path.mkdir(mode=0o700, exist_ok=True)
        os.chown(path, uid, gid)
    messages = list(messages)
    newest = newest or time.time() - 60
    first = newest - len(messages)
    pid = os.getpid()
    for i, raw in enumerate(messages):
        when = first + i
        path = base / "cur" / f"{int(when)}.M{i}P{pid}.bench,S={len(raw)}:2,"
        path.write_bytes(raw)
        os.utime(path, (when, when))
        os.chown(path, uid, gid)
    return len(messages)


def imap_fields(server, user: str) -> dict:
    """Mailbox IMAP settings for USER on SERVER; the password is read from OUTREACH_SECRET_BENCH_IMAP."""
    return {"imap_host": server.host, "imap_port": server.port, "imap_username": user,
            "imap_password_env": "OUTREACH_SECRET_BENCH_IMAP", "imap_folders": ["INBOX"]}


def child_env(password: str) -> dict[str, str]:
    return dict(os.environ, OUTREACH_SECRET_BENCH_IMAP=password)


def first_select(server, user: str) -> tuple[int, float]:
    """(EXISTS, seconds) of the first SELECT: Dovecot indexes a freshly written Maildir here."""
    started = time.perf_counter()
    client = server.client(user)
    try:
        exists = client.select_folder("INBOX", readonly=True)[b"EXISTS"]
    finally:
        client.logout()
    return int(exists), time.perf_counter() - started

