"""The API answers as its OpenAPI schema says: Schemathesis (`--checks all`) against the live server, with an admin's
and a staff token, finds nothing (issue 34, item 12). The same command is in docs/api.md.

Bounded: a few examples per operation, the fuzzing and stateful phases.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.tokens import api_token_create
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.one_database("the API's answers against its schema")

CONFIG = Path(__file__).resolve().parents[1] / "api" / "schemathesis.toml"
ST = Path(sys.executable).with_name("st")


@pytest.fixture
def world(transactional_db, settings):
    settings.RQ_QUEUES = {name: {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 600}
                          for name in ("send", "ingest", "default")}
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    enroll(sequence, "ann@example.com", first_name="Ann")
    return sequence


# The fuzzing and stateful phases keep the run short; the coverage phase (every schema boundary, minutes) is the
# command in docs/api.md, run before a release.
@pytest.mark.parametrize("role", ["admin", "staff"])
def test_the_api_matches_its_schema(world, live_server, role, tmp_path):
    if not ST.exists():
        pytest.skip("schemathesis is not installed (pip install -e .[test])")
    _, token = api_token_create(name=f"schemathesis-{role}", role=role, rate_per_minute=1_000_000)
    result = subprocess.run(
        [str(ST), "--config-file", str(CONFIG), "run", f"{live_server.url}/api/openapi.json", "--checks", "all",
         "-H", f"Authorization: Bearer {token}", "--max-examples", "3", "--workers", "2", "--phases",
         "fuzzing,stateful", "--request-timeout", "60", "--no-color", "--seed", "34"],
        cwd=tmp_path, env=os.environ | {"SCHEMATHESIS_HOOKS": ""}, capture_output=True, text=True, timeout=600)
    failures = result.stdout.split("SUMMARY")[0]
    report = failures[-8000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert "failures" not in result.stdout.splitlines()[-1], report
