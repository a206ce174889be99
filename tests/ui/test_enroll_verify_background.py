"""The dry run's address check looks up DNS in a background job within a total time budget (issue 40, finding 7):
with a resolver that never answers, 40 domains neither hold the page nor the run (each answers at once), the job
ends within its budget, and every domain is "could not verify" or "not checked (time budget)", enrolled and said
so, never a 500."""

from __future__ import annotations

import re
import time

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from proving.harness.dns import DnsServer
from sequences.models import Enrollment
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_contacts import run_job
from ui import enroll_upload

pytestmark = pytest.mark.django_db
SILENT = tuple(f"d{i}.test" for i in range(40))
BUDGET = 1.5
LOOKUP_TIMEOUT = 1.0  # 40 domains one by one in the request would hold it 40 s; eight at a time, 5 s


@pytest.fixture
def silent_resolver(settings, monkeypatch):
    """A DNS server on loopback that receives every query and answers none."""
    with DnsServer({}, silent=SILENT) as server:
        settings.OUTREACH_DNS_RESOLVER = server.address
        settings.OUTREACH_DNS_TIMEOUT = LOOKUP_TIMEOUT
        monkeypatch.setattr(enroll_upload, "VERIFY_BUDGET_SECONDS", BUDGET)
        yield server


def timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def test_verification_waits_in_the_background_and_ends_within_its_budget(silent_resolver, client, users,
                                                                        redis_conn):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    client.force_login(users["operator"])
    text = "email,first_name,company\n" + "".join(f"ann@{domain},Ann,Acme\n" for domain in SILENT)
    map_url = client.post(reverse("enroll_upload", args=[sequence.pk]), {
        "file": SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")})["Location"]
    mapping = {"col0": "email", "col1": "first_name", "col2": "company", "verify": "1"}

    waiting, seconds = timed(lambda: client.get(map_url, mapping))
    assert waiting.status_code == 200 and seconds < 1, seconds
    page = waiting.content.decode()
    assert "0 of 40 domains looked up" in page and '<meta http-equiv="refresh"' in page
    assert 'id="dry-run-result"' not in page and silent_resolver.queries == []
    # The run before the check has ended goes back to the page that waits for it; nothing is looked up.
    early, seconds = timed(lambda: client.post(map_url.rstrip("/") + "/run/", mapping))
    assert early.status_code == 302 and "verify=1" in early["Location"] and seconds < 1
    assert silent_resolver.queries == [] and not Enrollment.objects.exists()
    queue = django_rq.get_queue("default")
    assert "0 of 40 domains looked up" in client.get(map_url, mapping).content.decode()
    (check,) = queue.jobs  # one check, not one per load
    _, seconds = timed(lambda: run_job(check.id))
    assert seconds < BUDGET + 1, f"the check took {seconds:.2f} s, its budget is {BUDGET} s"

    done = client.get(map_url, mapping)
    assert done.status_code == 200
    page = done.content.decode()
    assert '<li id="n-valid"><strong>40</strong> rows will be enrolled (40 with a note, listed below)</li>' in page
    notes = re.findall(r"Enrolled, but: (could not verify d\d+\.test: no answer in time|d\d+\.test not checked "
                       r"\(time budget of 1\.5 s used up\))</td>", page)
    assert len(notes) == 40
    assert any("not checked" in note for note in notes), "the budget ended before the silent resolver was done"
    assert '<meta http-equiv="refresh"' not in page

    run = client.post(map_url.rstrip("/") + "/run/", mapping)
    assert "/enrolling/" in run["Location"]
    run_job(run["Location"].rstrip("/").rsplit("/", 1)[-1])
    assert Enrollment.objects.filter(sequence=sequence).count() == 40


def test_one_check_per_upload_at_a_time(dns_server, client, users, redis_conn):
    """Reloading the dry run with each address column in turn leaves one check waiting, not one per column."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    client.force_login(users["operator"])
    text = "email,other,first_name,company\nann@good.test,ann@bare.test,Ann,Acme\n"
    map_url = client.post(reverse("enroll_upload", args=[sequence.pk]), {
        "file": SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")})["Location"]
    names = {"col2": "first_name", "col3": "company", "verify": "1"}
    first = {"col0": "email", "col1": "ignore", **names}
    second = {"col0": "ignore", "col1": "email", **names}
    assert "0 of 1 domain looked up" in client.get(map_url, first).content.decode()
    assert "0 of 1 domain looked up" in client.get(map_url, second).content.decode()
    queue = django_rq.get_queue("default")
    (check,) = queue.jobs
    assert check.args[0] == ["bare.test"]
    run_job(check.id)
    page = client.get(map_url, second).content.decode()
    assert '<li id="n-valid"><strong>1</strong> row will be enrolled' in page
    assert dns_server.queries == [("bare.test", "MX"), ("bare.test", "A")]
