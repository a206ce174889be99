"""Contacts pages, enrolling a CSV from the browser (upload, mapping, dry run, background run), import reloads."""

from __future__ import annotations

import re

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rq import SimpleWorker
from rq.job import Job

from inbound.models import InboundMessage
from sequences.contact_rows import column_field
from sequences.models import Contact, Enrollment, OperatorAction, SendJob, Suppression
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db


def run_job(job_id: str) -> None:
    """Run exactly this RQ job in-process (other test sessions may share the queue)."""
    queue = django_rq.get_queue("default")
    job = Job.fetch(job_id, connection=queue.connection)
    queue.remove(job)
    SimpleWorker([queue], connection=queue.connection).execute_job(job, queue)


def test_contacts_search_by_address_name_company_and_domain(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    enroll(sequence, "ada@analytical.example", first_name="Ada", company="Engines Ltd")
    enroll(sequence, "grace@navy.example", first_name="Grace", company="Cobol Corp")
    Contact.objects.filter(email="ada@analytical.example").update(last_name="Lovelace")
    Contact.objects.create(email="alan@analytical.example", first_name="Alan", company="Bletchley")
    client.force_login(users["staff"])

    def found(q: str) -> list[str]:
        response = client.get(reverse("contact_list"), {"q": q})
        assert response.status_code == 200
        return [c.email for c, _ in response.context["rows"]]

    assert found("") == ["ada@analytical.example", "alan@analytical.example", "grace@navy.example"]
    assert found("GRACE@navy") == ["grace@navy.example"]
    assert found("lovelace") == ["ada@analytical.example"]
    assert found("cobol") == ["grace@navy.example"]
    assert found("@analytical.example") == ["ada@analytical.example", "alan@analytical.example"]
    assert found("ada engines") == ["ada@analytical.example"]
    assert found("nobody") == []
    html = client.get(reverse("contact_list"), {"q": "@analytical.example"}).content.decode()
    assert 'href="/contacts/' in html and ">Contacts</a>" in html


def test_contact_page_shows_every_sequence_mailbox_suppression_and_inbound_mail(client, users):
    first = make_sequence(mailbox=MailboxFactory(name="sales"), steps=1, name="Spring")
    second = make_sequence(mailbox=MailboxFactory(name="support"), steps=1, name="Renewal")
    a = enroll(first, "bob@example.com", first_name="Bob")
    enroll(second, "bob@example.com")
    InboundMessage.objects.create(
        mailbox=first.mailbox,
        folder="INBOX",
        uidvalidity=1,
        uid=1,
        message_id="<r1@example.com>",
        from_address="bob@example.com",
        subject="Re: spring offer",
        kind="human_reply",
        enrollment=a,
    )
    suppression_add(value="@example.com", reason="manual", note="whole company asked", actor="ops")
    client.force_login(users["staff"])
    contact = Contact.objects.get(email="bob@example.com")
    html = client.get(reverse("contact_detail", args=[contact.pk])).content.decode()
    for text in (
        "Spring",
        "Renewal",
        "sales",
        "support",
        "Re: spring offer",
        "whole company asked",
        "Suppressed (Manual, @example.com)",
        "Canceled — never sent",
    ):
        assert text in html, text
    assert html.count('data-label="Sequence"') >= 4  # two enrollments, two jobs


def upload_csv(client, sequence, text: str):
    response = client.post(
        reverse("enroll_upload", args=[sequence.pk]),
        {"file": SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")},
    )
    assert response.status_code == 302, response.content.decode()[:500]
    return response["Location"]


def test_enroll_upload_maps_columns_shows_a_dry_run_and_enrolls_once(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Upload")
    enroll(sequence, "old@example.com")
    suppression_add(value="no@example.com", reason="unsubscribe", note="asked", actor="ops")
    client.force_login(users["operator"])
    text = (
        "Mail,Given,Firm,Plan,Junk\n"
        "new1@example.com,Ann,Acme,gold,x\n"  # 2
        "not-an-address,Bad,,,\n"  # 3
        "old@example.com,Old,,,\n"  # 4: already enrolled
        "NO@example.com,No,,,\n"  # 5: suppressed
        "new1@example.com,Dup,,,\n"  # 6: duplicate of line 2
        "new2@example.com,Ben,Beta,silver,y\n"
    )  # 7
    map_url = upload_csv(client, sequence, text)

    page = client.get(map_url)
    assert page.status_code == 200
    # "Mail" is a spelling of the email address; the other names mean no contact field: custom fields.
    assert [c[2] for c in page.context["columns"]] == ["email", "field", "field", "field", "field"]
    assert "dry_run" not in page.context
    # No email column chosen: said so, nothing checked.
    refused = client.get(
        map_url, {"col0": "field", "col1": "first_name", "col2": "company", "col3": "field", "col4": "ignore"}
    )
    assert refused.status_code == 400 and "One column must be the email address." in refused.content.decode()

    mapping = {"col0": "email", "col1": "first_name", "col2": "company", "col3": "field", "col4": "ignore"}
    dry = client.get(map_url, mapping)
    run = dry.context["dry_run"]
    assert (run["enrolled"], run["n_rejected"], run["n_already"], run["n_suppressed"], run["rows"]) == (2, 2, 1, 1, 6)
    assert [line for line, _ in run["rejected"]] == [3, 6]
    assert "no@example.com is suppressed (unsubscribe, no@example.com)" in dry.content.decode()
    assert Enrollment.objects.filter(sequence=sequence).count() == 1, "a dry run writes nothing"

    run_url = map_url.rstrip("/") + "/run/"
    response = client.post(run_url, mapping)
    assert response.status_code == 302
    status_url = response["Location"]
    job_id = status_url.rstrip("/").rsplit("/", 1)[-1]
    waiting = client.get(status_url).content.decode()
    assert 'data-status-url="' in waiting and "enroll.js" in waiting and "<script>" not in waiting
    progress = client.get(status_url + "progress/").json()
    assert (progress["done"], progress["total"], progress["finished"]) == (0, 2, False)  # the dry run's "Enroll 2"
    # A second POST of the same upload (a double click, a replayed form) finds the job it started.
    assert client.post(run_url, mapping)["Location"] == status_url
    run_job(job_id)

    for _ in range(2):  # the result page can be reloaded: it shows the result again and enrolls nothing
        html = client.get(status_url).content.decode()
        assert "Enrolled: 2." in html
        assert "Rejected rows: 2; already enrolled: 1; suppressed (never enrolled): 1 — 6 rows in the file." in html
        # Each count above the rows it lists, as the dry run listed them.
        for kind, lines in (("rejected", ["3", "6"]), ("already", ["4"]), ("suppressed", ["5"])):
            (table,) = re.findall(rf'id="enroll-{kind}">.*?</table>', html, re.S)
            assert re.findall(r'data-label="Line">(\d+)<', table) == lines, kind
    assert client.get(status_url + "progress/").json()["finished"] is True
    enrolled = Enrollment.objects.filter(sequence=sequence).select_related("contact")
    assert sorted(e.contact.email for e in enrolled) == ["new1@example.com", "new2@example.com", "old@example.com"]
    ann = Contact.objects.get(email="new1@example.com")
    assert (ann.first_name, ann.company, ann.fields) == ("Ann", "Acme", {"plan": "gold"})
    assert not Contact.objects.filter(email="no@example.com").exists(), "a suppressed address is never written"
    assert SendJob.objects.filter(enrollment__contact=ann, state="scheduled").count() == 1
    (logged,) = OperatorAction.objects.filter(action="enrollment_import")  # one row for the whole file
    assert (logged.actor, logged.target, logged.target_id) == (users["operator"].username, "sequence Upload",
                                                               sequence.pk)
    assert logged.result == {"file": "people.csv", "enrolled": 2, "rejected": 2, "suppressed": 1,
                             "already enrolled": 1}


def test_the_mapping_page_knows_common_column_names_and_shows_three_values_of_each(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, name="Mapped")
    client.force_login(users["operator"])
    text = ("E-mail,Vorname,Nachname,Company Name,Time zone,Plan\n"
            "a@example.com,Anna,Abel,Acme,Europe/Berlin,gold\n"
            "b@example.com,Bernd,,Beta,,\n"
            "c@example.com,Clara,Cole,Gamma,,silver\n"
            "d@example.com,Dora,Dahl,Delta,,bronze\n")
    page = client.get(upload_csv(client, sequence, text))
    columns = page.context["columns"]
    assert [c[2] for c in columns] == ["email", "first_name", "last_name", "company", "timezone", "field"]
    assert [c[3] for c in columns] == [
        ["a@example.com", "b@example.com", "c@example.com"], ["Anna", "Bernd", "Clara"], ["Abel", "Cole", "Dahl"],
        ["Acme", "Beta", "Gamma"], ["Europe/Berlin"], ["gold", "silver", "bronze"]]
    html = page.content.decode()
    assert '<span class="sample">c@example.com</span>' in html and "d@example.com" not in html


@pytest.mark.parametrize("header, field", [
    ("Company Name", "company"), ("Company", "company"), ("Organisation", "company"), ("Organization", "company"),
    ("Firma", "company"), ("E-mail", "email"), ("Email Address", "email"), ("First Name", "first_name"),
    ("Vorname", "first_name"), ("Prénom", "first_name"), ("Last Name", "last_name"), ("Nachname", "last_name"),
    ("Time zone", "timezone"), ("  EMAIL ", "email"), ("Name", ""), ("Plan", ""),
])
def test_column_names_mean_their_contact_field(header, field):
    assert column_field(header) == field


def test_enroll_upload_whose_job_fails_says_why_in_plain_words(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Gone")
    client.force_login(users["operator"])
    map_url = upload_csv(client, sequence, "email,first_name,company\na@example.com,Ann,Acme\nb@example.com,Bob,Beta\n")
    mapping = {"col0": "email", "col1": "first_name", "col2": "company"}
    status_url = client.post(map_url.rstrip("/") + "/run/", mapping)["Location"]
    sequence.steps.all().delete()  # between the run and its job

    run_job(status_url.rstrip("/").rsplit("/", 1)[-1])

    progress = client.get(status_url + "progress/").json()
    assert (progress["status"], progress["failed"], progress["finished"]) == ("failed", True, False)
    html = client.get(status_url).content.decode()
    assert "Enrolling stopped with 0 of 2 rows enrolled: sequence &#x27;Gone&#x27; has no steps." in html
    assert "JobStatus" not in html and "enroll.js" not in html
    assert not Enrollment.objects.filter(sequence=sequence).exists()
    (logged,) = OperatorAction.objects.filter(action="enrollment_import")  # the stop is on record too
    assert logged.result["failed"] == "stopped after 0 of 2 rows, 0 of them enrolled: sequence 'Gone' has no steps"


def test_enroll_upload_refuses_a_file_it_cannot_read(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    client.force_login(users["operator"])
    response = client.post(
        reverse("enroll_upload", args=[sequence.pk]),
        {"file": SimpleUploadedFile("x.csv", b"email\n\xff\xfe@x\n", content_type="text/csv")},
    )
    assert response.status_code == 400
    assert re.search(r"line 2, byte 1 .*0xff is not UTF-8", response.content.decode())
    client.force_login(users["staff"])
    assert client.get(reverse("enroll_upload", args=[sequence.pk])).status_code == 403


def test_small_suppression_import_redirects_and_a_reload_imports_nothing(client, users):
    client.force_login(users["admin"])
    text = "email,reason\nreload@example.com,manual\n"
    response = client.post(
        reverse("suppression_import"), {"file": SimpleUploadedFile("list.csv", text.encode(), content_type="text/csv")}
    )
    assert response.status_code == 302
    for _ in range(3):
        page = client.get(response["Location"]).content.decode()
        assert "Imported: 1 new suppression, 0 already suppressed, 0 rows with errors." in page
    assert Suppression.objects.filter(value="reload@example.com").count() == 1
    assert OperatorAction.objects.filter(action="suppression_add").count() == 1


def test_incident_lanes_size_gaps_by_length_and_label_long_ones_as_breaks():
    from datetime import timedelta

    from django.utils import timezone

    from ui.incidents import LanePoint, lanes

    t0 = timezone.now()
    at = [t0, t0 + timedelta(milliseconds=10), t0 + timedelta(milliseconds=20), t0 + timedelta(seconds=105.02)]
    points = [
        LanePoint("job", at[0], "claimed v2", "claim"),
        LanePoint("reply", at[1], "reply received", "received"),
        LanePoint("job", at[2], "final check: authorized v3", "authorized"),
        LanePoint("reply", at[3], "reply committed", "committed"),
    ]
    geometry = lanes(points, window=(at[0], at[2]))
    xs = [p.x for p in geometry["points"]]
    assert xs == sorted(xs) and len(set(xs)) == 4
    short, long = xs[1] - xs[0], xs[3] - xs[2]
    assert long > 2 * short, "105 s takes more room than 10 ms"
    assert [g["text"] for g in geometry["gaps"]] == ["+10 ms", "+10 ms"]
    assert [b["text"] for b in geometry["breaks"]] == ["… 105.0 s later …"]
    assert [p.number for p in geometry["points"]] == [1, 2, 3, 4]
    # Numbers sit above the send-job lane and below the reply lane: the dashed guides run between them.
    job_y, reply_y = geometry["lane_y"]["job"], geometry["lane_y"]["reply"]
    for p in geometry["points"]:
        assert p.text_y < job_y if p.lane == "job" else p.text_y > reply_y
