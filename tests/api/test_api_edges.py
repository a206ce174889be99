"""Tokens, rate limits, the schema and docs page, lossless contacts, bulk enrollment, honest labels."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from openapi_spec_validator import validate

from api.models import ApiToken
from sequences.models import Contact, Enrollment, SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.api.conftest import work

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_token_prints_once_stores_a_hash_and_revoking_refuses_it(api, world):
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", "crm", "--role", "staff", stdout=out, stderr=err)
    token = out.getvalue().strip()
    row = ApiToken.objects.get(name="crm")
    assert token.startswith("otk_") and "shown once" in err.getvalue() and token not in err.getvalue()
    assert token not in (row.digest, row.prefix) and len(row.digest) == 64
    client = api(None, token=token)
    assert client.get("/api/v1/sequences").status_code == 200
    from api.tokens import api_token_revoke

    assert api_token_revoke(token_id=row.pk)
    refused = client.get("/api/v1/sequences")
    assert refused.status_code == 401 and refused.json() == {"detail": "Unauthorized"}


def test_admins_list_and_revoke_tokens_in_the_admin(api, world, users, client):
    from django.urls import reverse

    row = ApiToken.objects.get(name="staff-token")
    client.force_login(users["operator"])
    assert client.get(reverse("admin:sequences_apitoken_changelist")).status_code in (302, 403)
    client.force_login(users["admin"])
    page = client.get(reverse("admin:sequences_apitoken_changelist")).content.decode()
    assert "staff-token" in page and row.digest not in page
    client.post(reverse("admin:sequences_apitoken_changelist"), {"action": "revoke", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_over_the_rate_a_token_gets_429_with_retry_after(api, world):
    from api.tokens import api_token_create

    _, token = api_token_create(name="slow", role="staff", rate_per_minute=3)
    client = api(None, token=token)
    answers = [client.get("/api/v1/sequences") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert 1 <= int(answers[-1].headers["Retry-After"]) <= 61
    assert "retry in" in answers[-1].json()["detail"]
    assert api("staff").get("/api/v1/sequences").status_code == 200  # another token has its own count


def test_the_openapi_schema_validates_and_the_docs_page_loads_nothing_from_outside(api, world):
    response = api(None).get("/api/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert "/api/v1/enrollments/{enrollment_id}/stop" in schema["paths"]
    assert schema["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"
    docs = api(None).get("/api/docs")
    assert docs.status_code == 200 and "script-src 'self'" in docs.headers["Content-Security-Policy"]
    assert "cdn" not in docs.text and "https://" not in docs.text and "/static/ninja/swagger-ui-bundle.js" in docs.text
    assert api(None).get("/static/ninja/swagger-ui-bundle.js").status_code == 200


def test_contact_upsert_is_lossless(api, world):
    client = api("operator")
    body = {"email": "Kim@Example.com", "first_name": "Kim", "company": "Acme", "fields": {"plan": "pro"}}
    created = client.post("/api/v1/contacts", body)
    assert created.status_code == 201 and created.json()["contact"]["email"] == "kim@example.com"
    # Empty values never erase; fields merge.
    changed = client.post("/api/v1/contacts", {"email": "kim@example.com", "last_name": "Lee", "first_name": "",
                                               "fields": {"seats": "5"}})
    assert changed.status_code == 200 and changed.json()["changed"] == ["fields", "last_name"]
    contact = Contact.objects.get(email="kim@example.com")
    assert (contact.first_name, contact.last_name, contact.company) == ("Kim", "Lee", "Acme")
    assert contact.fields == {"plan": "pro", "seats": "5"}
    bad = client.post("/api/v1/contacts", {"email": "kim@example.com", "timezone": "Mars/Olympus"})
    assert bad.status_code == 422 and "unknown time zone" in bad.json()["detail"]
    assert client.post("/api/v1/contacts", {"email": "not an address"}).status_code == 422
    assert api("staff").get("/api/v1/contacts/KIM@example.com").json()["company"] == "Acme"
    assert api("staff").get("/api/v1/contacts?q=kim").json()["count"] == 1


def test_enrolling_keeps_an_existing_contact_unless_asked_and_refuses_a_suppressed_one(api, world):
    client = api("operator")
    seq = world["sequence"].pk
    refused = client.post("/api/v1/enrollments", {"sequence_id": seq, "email": "blocked@example.com"})
    assert refused.status_code == 409 and "suppressed" in refused.json()["detail"]
    assert not Contact.objects.filter(email="blocked@example.com").exists()  # a refused row changes nothing
    response = client.post("/api/v1/enrollments", {"sequence_id": seq, "email": "active@example.com"})
    assert response.status_code == 409 and "already enrolled" in response.json()["detail"]


def test_enrollment_labels_say_already_submitted_after_a_stop(api, world, smtp_server):
    world["mailbox"].smtp_port = smtp_server.port
    world["mailbox"].save()
    enrollment = world["active"]
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == SendJob.State.SUBMITTED
    stopped = api("operator").post(f"/api/v1/enrollments/{enrollment.pk}/stop")
    result = stopped.json()["result"]
    assert (result["canceled"], result["already_submitted"]) == (1, 1)
    assert "1 job handed off earlier (submitted before this stop) — cannot recall" in result["summary"]
    labels = {j["step"]: (j["label"], j["tone"]) for j in api("staff").get(f"/api/v1/enrollments/{enrollment.pk}")
              .json()["jobs"]}
    assert labels[1][0].startswith("Already submitted at ") and labels[1][0].endswith("— cannot recall")
    assert labels[1][1] == "cannot-recall"
    assert labels[2][0].startswith("Canceled — never sent: an operator stopped it (") and labels[2][1] == "never-sent"
    kinds = [e["kind"] for e in api("staff").get("/api/v1/timeline/active@example.com").json()]
    assert kinds[0] == "enrolled" and "job_submitted" in kinds and kinds[-1] == "enrollment_stopped"


def test_bulk_enrollment_runs_in_the_background_with_per_row_results(api, world):
    client = api("operator")
    contacts = [{"email": f"bulk{i}@example.com", "first_name": f"B{i}", "company": "Co"} for i in range(1200)]
    contacts += [{"email": "blocked@example.com"}, {"email": "bulk1@example.com"}, {"email": "nope"}]
    response = client.post("/api/v1/enrollments/bulk", {"sequence_id": world["sequence"].pk, "contacts": contacts})
    assert response.status_code == 202, response.text
    started = response.json()
    assert started["status"] == "queued" and started["total"] == 1203 and started["rejected"] == 2
    status_url = started["status_url"].removeprefix(client.base)
    work()
    done = client.get(status_url).json()
    assert (done["status"], done["processed"], done["enrolled"], done["rejected"]) == ("done", 1203, 1200, 3)
    rows = {r["line"]: r for r in done["results"]}
    assert rows[1]["status"] == "enrolled" and rows[1]["enrollment_id"] == Enrollment.objects.get(
        contact__email="bulk0@example.com").pk
    assert {r["enrollment_id"] for r in rows.values() if r["status"] == "enrolled"} == set(
        Enrollment.objects.filter(sequence=world["sequence"], contact__email__startswith="bulk").values_list("pk",
                                                                                                           flat=True))
    assert "suppressed" in rows[1201]["reason"] and "duplicates row 2" in rows[1202]["reason"]
    assert "not a valid address" in rows[1203]["reason"]
    too_many = client.post("/api/v1/enrollments/bulk", {"sequence_id": world["sequence"].pk,
                                                        "contacts": [{"email": "x@example.com"}] * 10001})
    assert too_many.status_code == 422


def test_suppressions_check_add_lift_and_page(api, world):
    admin = api("admin")
    check = api("staff").get("/api/v1/suppressions/check?address=Someone@Blocked.example").json()
    assert check["suppressed"] is False
    added = admin.post("/api/v1/suppressions", {"value": "@blocked.example", "reason": "manual", "note": "no"})
    assert added.status_code == 201
    check = api("staff").get("/api/v1/suppressions/check?address=someone@blocked.example").json()
    assert (check["suppressed"], check["why"], check["by"]) == (True, "manual", "@blocked.example")
    assert check["since"]
    no_note = admin.post("/api/v1/suppressions/lift", {"value": "@blocked.example", "note": " "})
    assert no_note.status_code == 409 and "justification" in no_note.json()["detail"]
    assert admin.post("/api/v1/suppressions/lift", {"value": "@blocked.example", "note": "mistake"}).status_code == 201
    listed = api("staff").get("/api/v1/suppressions?per_page=1&page=2").json()
    assert (listed["count"], listed["pages"], len(listed["items"])) == (2, 2, 1)
