"""A small `manage.py drill faults --quick` subset: one SIGKILL per checkpoint, the SMTP faults, IMAP, 500 fuzz."""

from __future__ import annotations

import json
import sqlite3

import pytest
from django.conf import settings

from proving.bench.env import PgServer

pytestmark = [pytest.mark.slow, pytest.mark.own_postgresql]


def test_quick_subset_loses_nothing_duplicates_nothing_reopens_nothing(run_drill, tmp_path):
    """In a database of the drill's own on the PostgreSQL server the benchmarks use (a copy of the run's
    migrated template): the private cluster a configured SQLite brings is the next test's."""
    out = tmp_path / "faults.json"

    done = run_drill("faults", "--quick", "--only", "kill,smtp,imap,fuzz", "--kills", "1", "--fuzz", "500",
                     "--json", str(out), timeout=400,
                     DATABASE_URL=PgServer.from_settings(settings.DATABASES).url("postgres"))

    assert done.returncode == 0
    data = json.loads(out.read_text())
    rows = {row["drill"]: row for row in data["drills"]}
    assert {"kill at claimed", "kill at prepared", "kill at authorized", "kill at SMTP DATA", "kill at submitted",
            "smtp 451, then accepted", "smtp 550 at RCPT", "smtp closed mid-DATA", "smtp DATA stalled past timeout",
            "imap kill/uidvalidity/dups", "fuzz inbound"} <= set(rows)
    for name, row in rows.items():
        audit = row["audit"]
        assert row["status"] == "PASS", (name, row["problems"], audit["problems"])
        assert (audit["lost"], audit["duplicated"], audit["reopened"], audit["sent_after_stop"],
                audit["non_final"]) == (0, 0, 0, 0, 0), name
        assert audit["unknown_labelled"] == audit["unknown"], name
    # Killed before authorization: sent exactly once. After: unknown, labelled, never resent.
    for point in ("claimed", "prepared"):
        assert (rows[f"kill at {point}"]["audit"]["submitted"], rows[f"kill at {point}"]["audit"]["received"]) == (1, 1)
    for point in ("authorized", "SMTP DATA", "submitted"):
        assert rows[f"kill at {point}"]["audit"]["unknown"] == 1
    assert rows["kill at authorized"]["audit"]["received"] == 0
    assert rows["kill at submitted"]["audit"]["received"] == 1
    assert rows["smtp 451, then accepted"]["audit"]["received"] == 1
    fuzz = rows["fuzz inbound"]
    assert (fuzz["recorded"], fuzz["crashes"]) == (500, 0)
    assert "drill faults: PASS" in done.stdout


def test_with_sqlite_configured_the_drill_brings_its_own_postgresql(run_drill, tmp_path):
    """The out-of-the-box setup (SQLite): the drills run in a private PostgreSQL cluster, workers and all,
    and the restart drill brings a second one."""
    out = tmp_path / "faults.json"
    configured = tmp_path / "configured.sqlite3"

    done = run_drill("faults", "--quick", "--only", "postgres", "--kills", "2", "--sends", "60",
                     "--json", str(out), DJANGO_SETTINGS_MODULE="outreach.settings",
                     DATABASE_URL=f"sqlite:///{configured}")

    assert done.returncode == 0
    data = json.loads(out.read_text())
    assert data["database"].startswith("private PostgreSQL cluster")
    rows = {row["drill"]: row for row in data["drills"]}
    assert set(rows) == {"postgres restarted"}
    # A second private cluster, restarted; the workers send what the drill wrote (they saw the same tables). A job
    # authorized just before the crash is `unknown` (it may or may not have left, and is never resent): every job
    # was received once, except those, at most once.
    restarted = rows["postgres restarted"]["audit"]
    assert 50 - restarted["unknown"] <= restarted["received"] <= 50
    assert restarted["unknown_labelled"] == restarted["unknown"] and restarted["duplicated"] == 0
    assert all(row["status"] == "PASS" for row in rows.values())
    if configured.exists():  # Django's start-up checks may create the file; the drill writes nothing to it
        with sqlite3.connect(configured) as db:
            assert db.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
