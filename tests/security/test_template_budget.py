"""Bounded templates (issue 40, finding 2): a short step template cannot make a process build hundreds of MB.

The red team's 975-character step of 25 nested `{% with a=a|add:a %}` passed validation, then took a web worker to
483 MB when saved and 429 MB in a preview: each level doubles the value, and send workers render it too. Every
rendering now runs within a budget (sequences/template_budget.py: characters written, characters of values made,
loop bodies, time; block nesting when compiled); saving a step renders it for a worst-case contact, so a text that
could pass the budget is refused then, and a text saved around that check fails its job once, with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlencode

import django_rq
import pytest
from django.test import Client
from django.urls import reverse
from rq.registry import FailedJobRegistry
from rq.worker import SimpleWorker

from sequences import contact_rows, messages
from sequences.messages import step_validate
from sequences.models import SendJob, Step
from sequences.services.sending import leases_sweep
from sequences.tasks import dispatch
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence

ROOT = Path(__file__).resolve().parents[2]
S = SendJob.State

# The red team's template: 25 levels, each doubling the one before, from a five-letter word (~975 characters).
BOMB = ('Hi {{ first_name|default:"there" }},\n{% with a="hello" %}\n' + "{% with a=a|add:a %}\n" * 25
        + "{{ a|length }}\n" + "{% endwith %}\n" * 26)
# The same doubling within the nesting bound, from a contact's value: refused by the values the filters make.
FIELD_BOMB = "{% with a=notes|add:notes %}" + "{% with a=a|add:a %}" * 15 + "{{ a|length }}" + "{% endwith %}" * 16
OVER_BUDGET = [
    # one join squares a length: sized before it is built
    ("{% with a=first_name|join:first_name %}{% with b=a|join:a %}{{ b|length }}{% endwith %}{% endwith %}",
     "filters make more than"),
    # no nesting at all: many values side by side
    ("{% with " + " ".join(f"v{i}=notes|add:notes" for i in range(60)) + " %}x{% endwith %}",
     "filters make more than"),
    # a refusal inside {% if %} (which turns an error in its condition into False) stays a refusal
    ('{% if notes|join:notes == "x" %}yes{% endif %}', "filters make more than"),
    # a loop that writes a long value again and again
    ("{% for c in notes %}{{ notes }}{% endfor %}", "renders to more than"),
    # an expression Django's parser reads recursively (was a RecursionError: a 500 on save)
    ("{% if " + "not " * 600 + "first_name %}x{% endif %}", "nested too deeply"),
]
# Short values, much work: only the time bound stops it (about 9 s of filters on a 10,000-character value).
SLOW = "{% for c in notes %}" + '{{ notes|truncatechars:"1" }}' * 10 + "{% endfor %}"

MEASURE = """
import json, re, sys, time, tracemalloc
from pathlib import Path
import django
django.setup()
from sequences.messages import step_validate


def peak_rss():  # this process's own high-water mark (getrusage's ru_maxrss carries the forking parent's)
    return int(re.search(r"VmHWM:\\s*(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024


body = sys.stdin.read()
step_validate(subject="Hi", body="Hi {{ first_name }}", position=1)  # imports and caches warmed
rss = peak_rss()
started = time.perf_counter()
errors = step_validate(subject="Hi", body=body, position=1)
seconds = time.perf_counter() - started
tracemalloc.start()
step_validate(subject="Hi", body=body + " ", position=1)  # a text not compiled before
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"errors": errors, "seconds": seconds, "peak": peak, "rss_grown": peak_rss() - rss}))
"""


def measured_validation(body: str) -> dict:
    """step_validate(body) in a fresh interpreter: its errors, seconds, tracemalloc peak and growth of the
    process's peak RSS (bytes)."""
    result = subprocess.run([sys.executable, "-c", MEASURE], input=body, cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "outreach.test_settings"}, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.one_database("validation reads no database")
@pytest.mark.parametrize(("body", "words"), [(BOMB, "blocks nested more than 16 deep"),
                                             (FIELD_BOMB, "filters make more than")], ids=["25-levels", "field"])
def test_the_doubling_template_is_refused_when_saved_in_under_1_s_and_100_mb(body, words):
    assert body is not BOMB or 950 <= len(BOMB) <= 1000
    run = measured_validation(body)
    assert any(words in e for e in run["errors"].get("body", [])), run
    assert run["seconds"] < 1, run
    assert run["peak"] < 100 * 2**20 and run["rss_grown"] < 100 * 2**20, run


@pytest.mark.one_database("validation reads no database")
@pytest.mark.parametrize(("body", "words"), OVER_BUDGET, ids=["join", "assignments", "if", "loop", "not-chain"])
def test_validation_refuses_what_a_worst_case_contact_makes_too_big(body, words):
    tracemalloc.start()
    try:
        errors = step_validate(subject="Hi", body=body, position=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert any(words in e for e in errors.get("body", [])), errors
    assert peak < 20 * 2**20, peak


@pytest.mark.one_database("validation reads no database")
def test_validation_refuses_a_template_that_takes_too_long():
    started = time.perf_counter()
    errors = step_validate(subject="Hi", body=SLOW, position=1)
    assert any("takes more than 2 s to render" in e for e in errors.get("body", [])), errors
    assert time.perf_counter() - started < 4


@pytest.mark.one_database("validation reads no database")
def test_the_worst_case_contact_has_the_longest_values_an_import_allows_and_ordinary_templates_pass_for_it():
    assert messages.WORST_FIELD_VALUE == contact_rows.MAX_FIELD_VALUE
    assert messages.WORST_FIELDS == contact_rows.MAX_FIELDS
    for body in [
        'Hi {{ first_name|default:"there"|title }},\n\n{% if company %}I saw {{ company }} is hiring.{% endif %}\n'
        '{% for tag in fields.tags %}{{ tag|first }}{% endfor %}{{ fields.city|default:"" }}\n'
        '{% spin "Best|Cheers|Thanks" %},\nSam',
        '{% with name=first_name|add:" "|add:last_name %}{{ name|truncatechars:"60" }}{% endwith %}',
        '{{ fields.notes|wordwrap:"72" }}\n{{ fields.notes|upper }}\n{{ email|join:"." }}',
        '{% for i in "12345" %}{% cycle "a" "b" %}{% endfor %}{% now "Y" %}{% firstof company "you" %}',
        "{% if first_name %}" * 16 + "deep" + "{% endif %}" * 16,
        "{% comment %}" + "{% if first_name %}" * 40 + "{% endcomment %}ok",
    ]:
        assert step_validate(subject="Hi {{ first_name }}", body=body, position=1) == {}, body


# --- the page that saves a step --------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_editor_refuses_the_template_in_words(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    # People waiting for the step: the editor renders a new text for them before it is saved (who lacks a value).
    enroll(sequence, "dan@example.com", first_name="Dan")
    client = Client(raise_request_exception=False)
    client.force_login(users["operator"])
    response = client.post(reverse("step_new", args=[sequence.pk]), {"subject": "Hi", "body": BOMB, "wait": "1 day",
                                                                     "thread": "on"})
    assert response.status_code == 400
    assert "blocks nested more than 16 deep" in response.content.decode()
    assert sequence.steps.count() == 1


# --- a template saved around validation: its send and its preview ---------------------------------------------------


def work_sends() -> None:
    queue = django_rq.get_queue("send")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("body", "notes", "words"), [
    (BOMB, "n", "blocks nested more than 16 deep"),
    (FIELD_BOMB, "n" * 20, "filters make more than 1,000,000 characters"),
    ("{% for c in notes %}{{ notes }}{% endfor %}", "n" * 3000, "renders to more than 500,000 characters"),
], ids=["25-levels", "field", "loop"])
def test_a_send_over_the_budget_fails_its_job_once_and_the_preview_says_why(mailbox, smtp_server, redis_conn, users,
                                                                           body, notes, words):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(body=body)
    enroll(sequence, "dan@example.com", first_name="Dan", notes=notes)
    assert dispatch()["queued"] == 1
    tracemalloc.start()
    try:
        work_sends()  # a real RQ worker, in this process
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    job = SendJob.objects.get()
    assert peak < 5 * 2**20, peak  # what is written is refused as it grows, not once it is whole
    assert job.state == S.FAILED, job.error
    assert job.error.startswith("could not prepare: template error in step 1: ") and words in job.error, job.error
    assert job.events.filter(kind=Event.JOB_PREPARE_FAILED).count() == 1
    assert smtp_server.received == []
    # Once: the RQ job ended normally, and neither the sweeper nor the dispatcher brings the job back.
    assert FailedJobRegistry(queue=django_rq.get_queue("send")).count == 0
    assert leases_sweep()["requeued"] == 0
    assert dispatch() == {"queued": 0, "re_enqueued": 0, "marked_unknown": 0, "probes": 0}
    assert SendJob.objects.get().state == S.FAILED
    client = Client(raise_request_exception=False)
    client.force_login(users["operator"])
    query = urlencode({"contact": "dan@example.com"})
    response = client.get(f"{reverse('step_preview', args=[sequence.steps.get().pk])}?{query}")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="preview-errors"' in page and words in page
