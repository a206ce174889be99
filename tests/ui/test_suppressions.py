"""Suppression ledger pages: add, lift with a justification, CSV import (per-row errors, progress), CSV export."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sequences.models import Enrollment, OperatorAction, Suppression
from sequences.services.suppressions import suppression_add, suppression_lift
from tests.factories import MailboxFactory, enroll, make_sequence
from ui.views import INLINE_IMPORT_ROWS

pytestmark = pytest.mark.django_db


def upload(client, text: str, name: str = "list.csv", *, follow: bool = True):
    return client.post(reverse("suppression_import"),
                       {"file": SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/csv")}, follow=follow)


def current_rows() -> list[tuple[str, str, str]]:
    return sorted(
        Suppression.objects.filter(action="add").exclude(
            value__in=Suppression.objects.filter(action="lift").values("value")
        ).values_list("value", "reason", "note")
    )


def test_import_reports_each_bad_row_and_imports_the_good_ones(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2)
    enrolled = enroll(sequence, "good@example.com")
    client.force_login(users["admin"])
    text = (
        "email,reason,note\n"
        "Good@Example.com,unsubscribe,asked by phone\n"  # line 2
        "not-an-address,manual,\n"  # 3
        "x@example.org,spam,\n"  # 4: unknown reason
        ",manual,empty\n"  # 5
        "good@example.com,manual,again\n"  # 6: duplicate of line 2
        "\n"  # blank lines are skipped
        "@competitor.example,,whole domain\n"  # 8: reason defaults to manual
        "'@guarded.example,manual,'=from a spreadsheet export\n"  # 9: formula guard removed
    )
    response = upload(client, text)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Imported: 3 new suppressions, 0 already suppressed, 4 rows with errors." in html
    errors = [(e["line"], e["error"]) for e in response.context["result"]["errors"]]
    assert errors == [
        (3, "'not-an-address' is neither an email address nor an @domain."),
        (4, "unknown reason 'spam' (use unsubscribe, complaint, hard_bounce, soft_bounces, manual)"),
        (5, "empty address"),
        (6, "duplicate of line 2"),
    ]
    for line, _ in errors:
        assert f'<td data-label="Line">{line}</td>' in html
    assert current_rows() == [
        ("@competitor.example", "manual", "whole domain"),
        ("@guarded.example", "manual", "=from a spreadsheet export"),
        ("good@example.com", "unsubscribe", "asked by phone"),
    ]
    entry = Suppression.objects.get(value="good@example.com")
    assert (entry.actor, entry.source) == (users["admin"].username, "csv:list.csv line 2")
    enrolled.refresh_from_db()
    assert (enrolled.status, enrolled.stop_reason) == (Enrollment.Status.STOPPED, "unsubscribed")
    assert OperatorAction.objects.filter(action="suppression_add", actor=users["admin"].username).count() == 3


@pytest.mark.parametrize(("text", "message"), [
    ("name,company\nAda,Acme\n", "The header row needs a column named one of: value, email, address, domain."),
    ("", "The submitted file is empty."),
])
def test_import_refuses_a_file_it_cannot_read(client, users, text, message):
    client.force_login(users["admin"])
    response = upload(client, text)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Suppression.objects.exists()


def test_import_refuses_a_file_that_is_not_utf8(client, users):
    client.force_login(users["admin"])
    response = client.post(reverse("suppression_import"),
                           {"file": SimpleUploadedFile("l.csv", "email\nj\xf6rg@example.com\n".encode("latin-1"))})
    assert response.status_code == 400
    assert "The file is not UTF-8" in response.content.decode()


def test_export_round_trips_through_import(client, users):
    suppression_add(value="a@example.com", reason="unsubscribe", note="link", actor="t")
    suppression_add(value="@example.net", reason="manual", note="=HYPERLINK(\"http://x\")", actor="t")
    suppression_add(value="b@example.com", reason="complaint", note="a, \"quoted\"\nnote", actor="t")
    suppression_add(value="lifted@example.com", reason="manual", actor="t")
    suppression_lift(value="lifted@example.com", note="ok again", actor="t")
    client.force_login(users["admin"])

    def export() -> str:
        response = client.get(reverse("suppression_export"))
        assert response.status_code == 200
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        return b"".join(response.streaming_content).decode("utf-8")

    first = export()
    rows = list(csv.DictReader(io.StringIO(first.lstrip("\ufeff"))))
    assert [r["value"] for r in rows] == ["'@example.net", "a@example.com", "b@example.com"]
    assert rows[0]["note"].startswith("'=HYPERLINK")  # a spreadsheet shows it as text, never runs it
    before = current_rows()

    Suppression.objects.all().delete()  # a fresh ledger, e.g. another installation
    response = upload(client, first, name="export.csv")
    assert response.status_code == 200 and response.context["result"]["errors"] == []
    assert current_rows() == before
    second = export()
    strip = lambda text: [r[:3] for r in csv.reader(io.StringIO(text.lstrip("\ufeff")))]  # noqa: E731
    assert strip(second) == strip(first)


def test_large_import_runs_in_the_background_with_progress(client, users, settings):
    import django_rq
    from rq import SimpleWorker
    from rq.job import Job

    client.force_login(users["admin"])
    n = INLINE_IMPORT_ROWS + 50
    text = "value\n" + "".join(f"user{i}@bulk.example\n" for i in range(n)) + "broken\n"
    response = upload(client, text, name="big.csv", follow=False)
    assert response.status_code == 302
    status_url = response["Location"]
    job_id = status_url.rstrip("/").rsplit("/", 1)[-1]
    queue = django_rq.get_queue("default")
    job = Job.fetch(job_id, connection=queue.connection)
    try:
        page = client.get(status_url).content.decode()
        assert '<meta http-equiv="refresh" content="2">' in page
        assert f'<progress id="progress" value="0" max="{n}">' in page
        assert "1 invalid row will be listed at the end" in page
        # Run exactly this job in-process (other test sessions may share the queue).
        queue.remove(job)
        SimpleWorker([queue], connection=queue.connection).execute_job(job, queue)
        page = client.get(status_url).content.decode()
        assert "http-equiv" not in page
        assert f"Imported: {n} new suppressions, 0 already suppressed, 1 row with errors." in page
        assert "neither an email address nor an @domain" in page
        assert Suppression.objects.filter(value__endswith="@bulk.example").count() == n
        assert Job.fetch(job_id, connection=queue.connection).meta["done"] == n
    finally:
        job.delete()


def test_add_and_lift_through_the_pages(client, users):
    client.force_login(users["admin"])
    response = client.post(reverse("suppression_add"), {"value": " Jane@Example.com ", "reason": "complaint",
                                                        "note": "phoned"})
    assert response.status_code == 302
    assert response["Location"] == reverse("suppression_history") + "?value=jane%40example.com"
    response = client.post(reverse("suppression_lift"), {"value": "jane@example.com", "note": "   "})
    assert response.status_code == 400
    assert "A justification is required to lift a suppression." in response.content.decode()
    response = client.post(reverse("suppression_lift"), {"value": "nobody@example.com", "note": "why not"})
    assert response.status_code == 400
    assert "nobody@example.com is not suppressed" in response.content.decode()
    response = client.post(reverse("suppression_lift"), {"value": "jane@example.com", "note": "asked again"},
                           follow=True)
    entries = list(response.context["entries"])
    assert [(e.action, e.note) for e in entries] == [("lift", "asked again"), ("add", "phoned")]
    assert OperatorAction.objects.filter(action="suppression_lift", target="jane@example.com").exists()


def test_staff_and_operators_read_the_ledger_without_management_controls(client, users):
    suppression_add(value="x@example.com", reason="manual", actor="t", source="inbound:5")
    for role in ("staff", "operator"):
        client.force_login(users[role])
        html = client.get(reverse("suppression_list")).content.decode()
        assert "x@example.com" in html and 'href="/inbound/5/"' in html
        assert "Lift…" not in html and "Import CSV" not in html and "Suppress</button>" not in html
