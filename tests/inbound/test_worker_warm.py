"""The ingest worker loads, before it forks, everything reading a reply loads on first use (inbound.tasks.warm):
a work horse starts with it, so no reply's transaction waits for scikit-learn's import or the phrase tables'
compilation. In a fresh interpreter, as a worker starts: a test process has long imported all of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proving.harness import mails

pytestmark = pytest.mark.one_database("what a worker process imports: no database is read")

ROOT = Path(__file__).resolve().parents[2]
READ_AFTER_WARM = """
import json, sys
import django
django.setup()
from inbound.tasks import warm
warm()
loaded = set(sys.modules)
from inbound.classify import classify
from inbound.classify.intent import suggest
raw = sys.stdin.buffer.read()
kinds = [classify(raw).kind]
suggestions = [str(suggest(text).category) for text in ("Sounds good, does Thursday at 3 work?",
                                                         "Nicht mehr schreiben bitte.", "Not now, maybe in Q3.")]
print(json.dumps({"new_modules": sorted(set(sys.modules) - loaded), "kinds": kinds, "suggestions": suggestions}))
"""


def test_after_warm_reading_replies_imports_nothing_more():
    raw = mails.reply(to_message_id="<ours.1@outreach.test>", body="Interesting - can we talk next week?")
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "outreach.settings"}
    done = subprocess.run([sys.executable, "-c", READ_AFTER_WARM], input=raw, capture_output=True, cwd=ROOT,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    read = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert read["kinds"] == ["human_reply"] and len(read["suggestions"]) == 3, read
    assert read["new_modules"] == [], "loaded by the first reply, in every work horse: " + ", ".join(
        read["new_modules"][:20])
