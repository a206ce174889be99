"""Backup and restore (docs/operations.md#backup-and-restore): a restored copy never sends again what had left.

Step 1 of an enrollment is handed off to a real SMTP server (aiosmtpd); then the database is backed up as
the operations guide says (PostgreSQL: `pg_dump -Fc`, restored with `pg_restore` into a new database;
SQLite: the backup API of Python's sqlite3) and the app is pointed at the restored copy. There the job says
`submitted` ("Submitted at …"), the dispatcher finds nothing due, and a worker handed
the job again (a duplicated RQ job) sends nothing: the server still holds one message.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from django.db import connection

from proving.harness.stack import Database, _pg_admin, database_url
from sequences.labels import job_label
from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def restored_copy(tmp_path: Path) -> Database:
    """Back the test database up and restore it into a new one, with the commands of the operations guide."""
    s = dict(connection.settings_dict)
    if connection.vendor == "sqlite":
        copy = tmp_path / "restored.sqlite3"
        with contextlib.closing(sqlite3.connect(s["NAME"])) as source, \
                contextlib.closing(sqlite3.connect(copy)) as target:
            source.backup(target)  # a consistent copy while the app runs
        return Database("sqlite", str(copy), {"NAME": str(copy)}, f"sqlite:///{copy}")
    if not shutil.which("pg_dump") or not shutil.which("pg_restore"):
        pytest.skip("pg_dump and pg_restore are not installed (the postgresql client package)")
    server = ["-h", s.get("HOST") or "127.0.0.1", "-p", str(s.get("PORT") or 5432), "-U", s.get("USER") or "postgres"]
    env = os.environ | ({"PGPASSWORD": str(s["PASSWORD"])} if s.get("PASSWORD") else {})
    dump = tmp_path / "outreach.dump"
    subprocess.run(["pg_dump", "-Fc", *server, "-f", str(dump), s["NAME"]], env=env, check=True, timeout=120)
    name = f"outreach_restored_{secrets.token_hex(4)}"
    _pg_admin(s, f'CREATE DATABASE "{name}"')
    subprocess.run(["pg_restore", "--no-owner", *server, "-d", name, str(dump)], env=env, check=True, timeout=120)
    return Database("postgresql", name, {"NAME": name}, database_url(s | {"NAME": name}),
                    drop=lambda: _pg_admin(s, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_a_restored_copy_does_not_send_again_what_was_handed_off(mailbox, smtp_server, tmp_path):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "prospect@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    assert len(smtp_server.received) == 1

    restored = restored_copy(tmp_path)
    try:
        with restored.active():
            job = SendJob.objects.select_related("enrollment").get(pk=job_id)
            assert job.state == S.SUBMITTED and job.submitted_at is not None
            assert job_label(job).startswith("Submitted at ")  # "already submitted" once the person stops
            assert dispatch_due() == []  # the follow-up waits its hour; step 1 is not due again
            outcome = send_job_process(job_id=job_id, worker_id="w2")  # a duplicated RQ job of step 1
            assert outcome.state == "noop", outcome  # "not queued (duplicate or stale delivery)"
            assert SendJob.objects.get(pk=job_id).state == S.SUBMITTED
            assert SendJob.objects.filter(enrollment_id=enrollment.pk, state=S.SCHEDULED).count() == 1
    finally:
        restored.drop()
    assert len(smtp_server.received) == 1  # nothing left the restored copy
