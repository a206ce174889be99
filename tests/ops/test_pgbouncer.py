"""Behind a pooler: the two race fixtures through a real PgBouncer in transaction pooling.

Debian 12's PgBouncer is 1.18: in transaction mode a statement prepared on one server connection is unknown
to (or clashes with) the next client handed that connection, so psycopg's prepared statements
(`prepare_threshold`) fail there. `OUTREACH_DB_POOLER=transaction` (outreach.settings) turns them off. The
test points Django's connection at a PgBouncer started on a free loopback port (two server connections, used
in turn, for every client; auth trust) with the options `database_from_url` builds under that setting, and runs
reply-first and send-first: the worker thread and the test each have a client connection, and the pooler
hands them the same few server connections. Without the setting (prepare_threshold 5) they fail with
"prepared statement ... does not exist" or "already exists".
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from django.db import connection

from outreach.settings import database_from_url
from proving.harness.stack import database_url, free_port, make_tempdir, wait_for
from sequences.labels import job_label
from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_stop
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker

PGBOUNCER = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None)
pytestmark = [
    pytest.mark.postgresql("PgBouncer pools PostgreSQL connections"),
    pytest.mark.skipif(PGBOUNCER is None, reason="pgbouncer is not installed (apt-get install -y pgbouncer; "
                                                 "scripts/setup --test installs it)"),
    pytest.mark.django_db(transaction=True),
]
S = SendJob.State
CONFIG = """\
[databases]
{name} = host={host} port={port} dbname={name} user={user}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {root}/userlist.txt
pool_mode = transaction
default_pool_size = 2
min_pool_size = 2
server_round_robin = 1
max_client_conn = 50
logfile = {root}/pgbouncer.log
pidfile = {root}/pgbouncer.pid
"""


@pytest.fixture
def pooled(monkeypatch):
    """Django's connection through a PgBouncer in transaction mode, with the pooler's options."""
    s = connection.settings_dict
    root = make_tempdir("pgb-")
    listen = free_port()
    user = s.get("USER") or "postgres"
    (root / "userlist.txt").write_text(f'"{user}" ""\n')
    (root / "pgbouncer.ini").write_text(CONFIG.format(name=s["NAME"], host=s.get("HOST") or "127.0.0.1",
                                                      port=s.get("PORT") or 5432, user=user, listen=listen,
                                                      root=root))
    shutil.chown(root, "postgres")  # PgBouncer refuses to run as root: it runs as postgres and logs here
    proc = subprocess.Popen([PGBOUNCER, "-u", "postgres", str(root / "pgbouncer.ini")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    monkeypatch.setenv("OUTREACH_DB_POOLER", "transaction")
    pooler = database_from_url(database_url(s | {"HOST": "127.0.0.1", "PORT": str(listen)}))
    saved = {key: s.get(key) for key in ("HOST", "PORT", "OPTIONS", "DISABLE_SERVER_SIDE_CURSORS")}
    try:
        wait_for(lambda: _answers(listen), timeout=10, what="PgBouncer to listen")
        connection.close()
        s.update({key: pooler[key] for key in saved})
        yield listen, root / "pgbouncer.log"
    finally:
        connection.close()
        s.update(saved)
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)


def _answers(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_the_race_fixtures_hold_through_pgbouncer_in_transaction_mode(pooled, mailbox, smtp_server):
    port, log = pooled
    assert connection.settings_dict["PORT"] == str(port)
    # Two workers run the same reads for every message, turn by turn: past psycopg's prepare_threshold each
    # would prepare them on whichever server connection the pooler lent it, and the other would find that
    # name taken there, or its own missing.
    turn = [threading.Event(), threading.Event()]

    def reads(me: int) -> None:
        try:
            for _ in range(8):
                turn[me].wait(10)
                turn[me].clear()
                SendJob.objects.filter(pk=0).exists()
                turn[1 - me].set()
        finally:
            turn[1 - me].set()  # never leave the other waiting on a failed turn

    other = Worker(lambda: reads(1))
    other.start()
    turn[0].set()
    try:
        reads(0)
    finally:
        other.outcome()

    # reply-first: the stop commits while the worker holds its claim; nothing leaves.
    first = enroll(make_sequence(mailbox=mailbox, steps=2), "first@example.com")
    (job_id,) = dispatch_due()
    gate = Gate("claimed")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    worker.start()
    gate.wait()
    enrollment_stop(enrollment_id=first.pk, reason="replied")
    gate.release()
    assert worker.outcome().state == "lost"
    assert smtp_server.received == []
    assert SendJob.objects.values_list("state", "cancel_reason").get(pk=job_id) == (S.CANCELED, "replied")

    # send-first: authorized before the stop; one message leaves, labelled, and no later step.
    second = enroll(make_sequence(mailbox=mailbox, steps=3), "second@example.com")
    (job_id,) = dispatch_due()
    gate = Gate("authorized")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w2"))
    worker.start()
    gate.wait()
    enrollment_stop(enrollment_id=second.pk, reason="replied")
    gate.release()
    assert worker.outcome().state == S.SUBMITTED
    assert len(smtp_server.received) == 1
    job = SendJob.objects.select_related("enrollment").get(pk=job_id)
    assert job_label(job).startswith("Already submitted at ") and job_label(job).endswith("cannot recall")
    assert dispatch_due() == []
    assert not SendJob.objects.filter(enrollment=second).exclude(pk=job_id).exists()
    assert "login attempt" in log.read_text()  # the connections went through the pooler
