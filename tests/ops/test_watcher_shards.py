"""Several IDLE watchers, each folder watched once: real `manage.py watch_mailboxes` processes (inbound.leases).

Twenty mailboxes, one Dovecot account each (INBOX), on one real Dovecot. Two watcher processes share the
twenty folders: together they hold twenty IMAP connections to the server, not forty (counted from each
process's sockets: the `ingest` worker's polls connect too). One watcher is killed (SIGKILL: it gives
nothing up); the other, on the same machine, sees at its next lease round that the process is gone and takes
its folders over (a watcher on another host would wait for the leases to expire), and a reply delivered into
one of them after the kill stops its person. A third watcher started afterwards takes its share from the
survivor, which gives its surplus up: still one connection per folder. Leases live 6 s here (15 s by
default).

Without the leases (each process watching every folder, as `watch_mailboxes` did) the first count is 40.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from db.clock import db_now
from inbound.leases import LeaseKeeper, account_of, holder_gone, holder_name, pid_space
from inbound.models import WatcherProcess, WatchLease
from mailboxes.bound import bind
from mailboxes.models import ImapCursor
from proving.bench.watcher import tcp_connections
from proving.harness import data, mails
from proving.harness.dovecot import Dovecot
from proving.harness.stack import Process, database_url, stop_all, wait_for
from sequences.models import Enrollment, SendJob

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
MAILBOXES = 20
LEASE = 6.0
TAG = "sh"
PASSWORD = "shardpw"


@pytest.fixture
def server():
    with Dovecot({f"u{i}": PASSWORD for i in range(MAILBOXES)}) as dovecot:
        yield dovecot


def watch_connections(port: int, watchers: list[Process], *, seconds: float = 2.0) -> int:
    """IMAP connections the watcher processes hold together, once the count has held still for `seconds`
    (read from each process's sockets in /proc; the `ingest` worker's polls hold connections of their own)."""
    def count() -> int:
        return sum(tcp_connections(p.pid, port) for p in watchers)

    wait_for(lambda: count() >= MAILBOXES, timeout=40, what=f"{MAILBOXES} IMAP connections")
    while True:
        seen, started = count(), time.monotonic()
        while time.monotonic() - started < seconds and count() == seen:
            time.sleep(0.1)
        if count() == seen:
            return seen


def held_by(pid: int) -> int:
    return WatchLease.objects.filter(holder__contains=f":{pid}:").count()


def watcher(name: str, env: dict[str, str], log_dir) -> Process:
    """A watcher as production runs it: it asks for polls on the `ingest` queue, which a worker serves."""
    return Process(name, ["watch_mailboxes", "--refresh", "1"], env=env, log_dir=log_dir)


def test_watchers_share_the_folders_and_take_over_a_killed_ones(server, redis_conn, tmp_path):
    boxes = data.mailboxes_create(MAILBOXES, smtp_port=2, tag=TAG, imap_host=server.host, imap_port=server.port,
                                  imap_password_env="OUTREACH_SECRET_SHARD_IMAP", imap_folders=["INBOX"])
    for i, box in enumerate(boxes):
        box.imap_username = f"u{i}"
        bind(box, "imap_password")  # the variable is named for this account (mailboxes.bound)
        box.save(update_fields=["imap_username", "secret_endpoints"])
    data.followups_create(MAILBOXES, sequences=data.sequences_create(boxes), tag=TAG,
                          state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
               OUTREACH_SECRET_SHARD_IMAP=PASSWORD, OUTREACH_WATCHER_LEASE_SECONDS=str(LEASE), PYTHONUNBUFFERED="1")
    ingest = Process("ingest", ["rqworker", "ingest", "-v", "0"], env=env, log_dir=tmp_path)
    first, second = watcher("first", env, tmp_path), watcher("second", env, tmp_path)
    third = None
    try:
        wait_for(lambda: held_by(first.pid) + held_by(second.pid) == MAILBOXES and held_by(first.pid)
                 and held_by(second.pid), timeout=40, what="the two watchers to share the folders")
        assert watch_connections(server.port, [first, second]) == MAILBOXES, "a folder is watched twice"
        assert held_by(first.pid) == held_by(second.pid) == MAILBOXES // 2

        # SIGKILL the first: it gives nothing up; the survivor sees at its next round that the process is gone.
        theirs = sorted(WatchLease.objects.filter(holder__contains=f":{first.pid}:").values_list("mailbox_id",
                                                                                                 flat=True))
        first.kill()
        killed_at = time.time()
        index = next(i for i, box in enumerate(boxes) if box.pk == theirs[0])
        server.append(f"u{index}", "INBOX", mails.bench_reply(sender=f"p{index}.{TAG}@prospects.test",
                                                              to_message_id=data.first_message_id(TAG, index)))
        enrollment = Enrollment.objects.get(contact__email=f"p{index}.{TAG}@prospects.test")
        wait_for(lambda: Enrollment.objects.filter(pk=enrollment.pk, status="stopped").exists(), timeout=45,
                 what="the reply in a folder of the killed watcher to stop its person")
        assert time.time() - killed_at < 45
        wait_for(lambda: held_by(second.pid) == MAILBOXES, timeout=30, what="the survivor to hold every folder")
        assert watch_connections(server.port, [second]) == MAILBOXES
        # The take-over's catch-up polls moved the reply view of the killed watcher's folders past the kill.
        views = ImapCursor.objects.filter(mailbox_id__in=theirs, folder="INBOX").values_list("read_through",
                                                                                            flat=True)
        wait_for(lambda: all(v and v.timestamp() > killed_at for v in views.all()), timeout=20,
                 what="the reply view of the taken-over folders to be read after the kill")

        # A new watcher takes its share; the survivor gives its surplus up.
        third = watcher("third", env, tmp_path)
        wait_for(lambda: held_by(third.pid) == MAILBOXES // 2 == held_by(second.pid), timeout=30,
                 what="the new watcher to take its share")
        assert watch_connections(server.port, [second, third]) == MAILBOXES
    finally:
        stop_all([p for p in (first, second, third, ingest) if p is not None])


def test_the_connection_limit_of_an_account_holds_across_watchers():
    """Fifteen folders of one account, a limit of ten: two watchers together hold ten leases, never more;
    a live lease is never taken, an expired one is."""
    box = data.mailbox_create(name="shared", address="s@shared.test", smtp_port=2, display_name="S", daily_cap=1,
                              imap_host="imap.shared.test", imap_username="team",
                              imap_folders=[f"F{i}" for i in range(15)])
    folders = {(box.pk, folder): account_of(box) for folder in box.reply_folders}
    a = LeaseKeeper(holder="host:1:a", seconds=60, per_account=10)
    b = LeaseKeeper(holder="host:2:b", seconds=60, per_account=10)
    for _ in range(3):
        held = [a.round(folders).mine, b.round(folders).mine]
    assert len(held[0]) + len(held[1]) == 10 and not held[0] & held[1]
    assert WatchLease.objects.exclude(holder="").count() == 10

    WatchLease.objects.filter(holder=a.holder).update(expires_at=db_now() - timedelta(seconds=1))  # a died
    WatcherProcess.objects.filter(name=a.holder).update(expires_at=db_now() - timedelta(seconds=1))
    taken = b.round(folders).mine
    assert len(taken) == 10 and taken >= held[1]


def test_a_round_takes_for_at_most_a_third_of_a_lease_and_the_next_rounds_go_on():
    """Forty accounts, a lease of 60 ms: a round stops taking after 20 ms, so a first round over many accounts
    never outlasts the leases it took at its start (each take's lease counts from its own moment)."""
    folders = {}
    for i in range(40):
        box = data.mailbox_create(name=f"acct{i}", address=f"a@acct{i}.test", smtp_port=2, display_name="A",
                                  daily_cap=1, imap_host=f"imap{i}.acct.test", imap_username="u",
                                  imap_folders=["INBOX"])
        folders[(box.pk, "INBOX")] = account_of(box)
    keeper = LeaseKeeper(holder="host:1:a", seconds=0.06, per_account=10)
    first = keeper.round(folders)
    assert 0 < first.taken < 40, first.taken
    rows = WatchLease.objects.filter(holder=keeper.holder)
    assert rows.count() == first.taken and all(r.expires_at - r.taken_at == timedelta(seconds=0.06) for r in rows)


def test_the_leases_of_a_watcher_of_this_machine_whose_process_is_gone_are_taken_at_once_and_no_others():
    """Five holders of two folders each, their leases good for another minute: one whose process ended, one
    killed and not yet reaped (a zombie), one still running, one of another host and one of another PID
    namespace with the ended process's PID. A watcher's round takes the folders of the first two only, without
    waiting for their leases to expire; the others' leases stay as they were."""
    host, space = socket.gethostname(), pid_space()
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # not waited for until the end
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        wait_for(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z", timeout=20,
                 what="the unreaped process to be a zombie")
        holders = {"ended": f"{host}:{ended.pid}:{space}.aaaaaa", "zombie": f"{host}:{zombie.pid}:{space}.bbbbbb",
                   "running": f"{host}:{running.pid}:{space}.cccccc",
                   "other host": f"{host}-other:{ended.pid}:{space}.dddddd",
                   "other namespace": f"{host}:{ended.pid}:1.eeeeee"}
        box = data.mailbox_create(name="gone", address="g@gone.test", smtp_port=2, display_name="G", daily_cap=1,
                                  imap_host="imap.gone.test", imap_username="team",
                                  imap_folders=[f"F{i}" for i in range(10)])
        folders = {(box.pk, folder): account_of(box) for folder in box.reply_folders}
        until = db_now() + timedelta(minutes=1)
        for i, name in enumerate(holders.values()):
            WatcherProcess.objects.create(name=name, expires_at=until)
            for folder in (f"F{2 * i}", f"F{2 * i + 1}"):
                WatchLease.objects.create(mailbox=box, folder=folder, account=folders[box.pk, folder], holder=name,
                                          expires_at=until, taken_at=db_now())
        assert [h for h, name in holders.items() if holder_gone(name)] == ["ended", "zombie"]
        assert not holder_gone(holder_name())

        survivor = LeaseKeeper(seconds=60, per_account=20)
        taken = survivor.round(folders)
        # Four live watchers now (the three left and this one): a share of three, all of it from the gone two.
        assert (taken.watchers, taken.share, len(taken.mine)) == (4, 3, 3)
        assert {f for _, f in taken.mine} <= {"F0", "F1", "F2", "F3"}
        for name in (holders["running"], holders["other host"], holders["other namespace"]):
            assert list(WatchLease.objects.filter(holder=name).values_list("expires_at", flat=True)) == [until] * 2
        assert not WatchLease.objects.filter(holder__in=[holders["ended"], holders["zombie"]],
                                             expires_at__gt=db_now()).exists()
    finally:
        running.kill()
        for process in (zombie, running):
            process.wait()
