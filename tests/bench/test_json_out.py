"""--json of the bench and drill commands: a missing folder is made, a target that cannot be written is refused
before the run starts (a run takes minutes; its figures must not be lost at the end)."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from proving.jsonout import json_target


def test_a_missing_folder_is_made(tmp_path):
    target = json_target(str(tmp_path / "var" / "bench" / "guard.json"))
    assert target == tmp_path / "var" / "bench" / "guard.json"
    assert target.parent.is_dir() and not target.exists(), "the folder is made; the file is the run's to write"


def test_no_json_asked_for_is_none():
    assert json_target(None) is None and json_target("") is None


def test_a_folder_given_as_the_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="is a folder"):
        json_target(str(tmp_path))


@pytest.mark.parametrize("command", [("bench", "guard", "--quick"), ("drill", "faults", "--quick"),
                                     ("bench_classifier", "/nonexistent-corpus")])
def test_a_target_that_cannot_be_written_stops_the_command_before_it_runs(command, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    started = time.monotonic()
    with pytest.raises(CommandError, match="cannot create its folder"):
        call_command(*command, "--json", str(blocker / "out.json"))
    assert time.monotonic() - started < 5, "refused before any work"
