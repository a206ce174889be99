"""The systemd units under deploy/ are valid units (`systemd-analyze verify`, with /srv/outreach pointed at this
checkout so their programs exist), and they run what the Procfile runs (tests/ops/test_procfile.py runs that)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANALYZE = shutil.which("systemd-analyze")
UNITS = sorted((ROOT / "deploy").glob("*.service"))


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.name)
def test_each_unit_is_valid(unit, tmp_path):
    name = unit.name.replace("@.", "@send.")  # a template is verified through an instance
    (tmp_path / name).write_text(unit.read_text().replace("/srv/outreach", str(ROOT)))
    verified = subprocess.run([ANALYZE, "verify", "--man=no", str(tmp_path / name)], capture_output=True,
                              text=True, timeout=60)
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, "")


def test_the_units_run_the_procfile_s_programs():
    def program(command: str) -> str:  # the program and its first two words, without the path of the venv
        return " ".join(command.replace("/srv/outreach/", "").split()[:3])

    starts = [line.split("=", 1)[1] for unit in UNITS for line in unit.read_text().splitlines()
              if line.startswith("ExecStart=")]
    procfile = [line.split(":", 1)[1] for line in (ROOT / "Procfile").read_text().splitlines()
                if re.match(r"^[a-z]+:", line)]
    assert {program(c) for c in procfile if "rqworker" not in c} <= {program(c) for c in starts}
    # The workers: one template unit whose instance names the queues (outreach-worker@ingest,default).
    assert any("rqworker" in c for c in procfile) and any("manage.py rqworker" in c for c in starts)
