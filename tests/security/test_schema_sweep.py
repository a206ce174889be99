"""Schemathesis (`--checks all`) against gunicorn, every API role, the id routes fed the ids of seeded rows, finds
nothing (issue 40): the quick mode of `python -m proving.schema_sweep` (`manage.py schema_sweep`), the command
whose full run docs/security.md reports. Its control: the same sweep, on URLs with one operation that answers a
real row outside its schema, fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.models import ApiToken
from proving.schema_sweep import ROLES, ST

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def sweep(tmp_path: Path, *args: str, settings_module: str = "outreach.settings") -> tuple[list[dict], str]:
    """The sweep in a process of its own (its database beside the suite's, as DATABASE_URL says); its results and
    output."""
    if not ST.exists():
        pytest.skip("schemathesis is not installed (pip install -e .[test])")
    out = tmp_path / "sweep.json"
    done = subprocess.run(
        [sys.executable, "-m", "proving.schema_sweep", "--quick", "--json", str(out), *args], cwd=ROOT,
        env=os.environ | {"DJANGO_SETTINGS_MODULE": settings_module}, capture_output=True, text=True, timeout=600)
    output = (done.stdout + done.stderr)[-12000:]
    return (json.loads(out.read_text()) if out.exists() else []), output


def test_every_role_meets_the_schema_on_real_rows(tmp_path):
    assert set(ROLES) == set(ApiToken.Role.values)  # every role the API knows
    results, output = sweep(tmp_path, "--roles", "all")
    assert [r["role"] for r in results] == list(ROLES), output
    for r in results:
        assert r["operations"] == 25 and r["test_cases"] > 50, output
        assert (r["failures"], r["errors"]) == (0, 0), output
        # The id routes met real rows, and answered them.
        assert r["on_seeded_rows"] >= 5, output
    assert "schema sweep: PASS" in output


@pytest.mark.one_database("a control of the sweep itself")
def test_the_sweep_fails_on_an_operation_that_answers_a_real_row_outside_its_schema(tmp_path):
    results, output = sweep(tmp_path, "--roles", "operator", "--only", "^/api/v1/broken/",
                            settings_module="tests.security.sweep_settings")
    assert [(r["role"], r["operations"]) for r in results] == [("operator", 1)], output
    assert results[0]["failures"] >= 1, output
    assert "GET /api/v1/broken/{sequence_id}" in results[0]["failure_text"], output
    assert "Response violates schema" in results[0]["failure_text"], output
    assert "schema sweep: FAIL (operator)" in output
