"""`manage.py enroll`: a rejected row changes nothing, headers are unambiguous, bad input is reported, fast batches."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sequences.models import Contact, Enrollment, SendJob, TimelineEvent
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)


def enroll_csv(tmp_path, sequence, text: str | bytes, *args) -> tuple[str, str, CommandError | None]:
    path = tmp_path / "contacts.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out, err = StringIO(), StringIO()
    try:
        call_command("enroll", "--sequence", sequence.name, str(path), *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


@pytest.fixture
def sequence(mailbox):
    # Fallbacks for every value: these rows test the file's checks, not the steps' needs.
    return make_sequence(mailbox=mailbox, steps=2, subject='Hello {{ first_name|default:"there" }}',
                         body='Step {position} for {{ first_name|default:"you" }} at {{ company|default:"yours" }}.')


def test_a_row_already_enrolled_does_not_change_its_contact_and_is_not_an_error(tmp_path, sequence):
    enroll(sequence, "dan@example.com", first_name="Dan", company="Acme")
    Contact.objects.filter(email="dan@example.com").update(last_name="Smith", timezone="Europe/Paris")
    out, err, exc = enroll_csv(tmp_path, sequence, "email,first_name,last_name,company,timezone\n"
                                                   "dan@example.com,Daniel,,,America/New_York\n")
    assert exc is None and "0 enrolled, 0 rejected, 1 already enrolled, 0 suppressed (1 row)" in out
    assert "line 2: dan@example.com is already enrolled" in err
    contact = Contact.objects.get(email="dan@example.com")
    assert (contact.first_name, contact.last_name, contact.company, contact.timezone) == (
        "Dan", "Smith", "Acme", "Europe/Paris")


def test_an_existing_contact_changes_only_with_update_contacts_and_the_summary_says_what(tmp_path, sequence, mailbox):
    other = make_sequence(mailbox=mailbox, steps=1)
    enroll(other, "dan@example.com", first_name="Dan", company="Acme")
    text = "email,first_name,last_name,company\ndan@example.com,Daniel,,Acme\n"
    out, _, exc = enroll_csv(tmp_path, sequence, text)
    assert exc is None and "1 enrolled, 0 rejected" in out
    assert "1 existing kept as they were" in out
    assert Contact.objects.get(email="dan@example.com").first_name == "Dan"

    third = make_sequence(mailbox=mailbox, steps=1)
    out, _, exc = enroll_csv(tmp_path, third, text, "--update-contacts")
    assert exc is None and "contacts: 0 created, 1 updated (first_name on 1)" in out
    contact = Contact.objects.get(email="dan@example.com")
    assert (contact.first_name, contact.last_name, contact.company) == ("Daniel", "", "Acme")


@pytest.mark.parametrize("header", ["email,Email\n", "email, email \n", "Email,first_name,EMAIL\n"])
def test_a_header_that_names_a_column_twice_is_an_error(tmp_path, sequence, header):
    out, err, exc = enroll_csv(tmp_path, sequence, header + "a@example.com,b@example.com\n")
    assert exc is not None and "are the same column" in str(exc)
    assert not Contact.objects.exists()


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("long@example.com," + "x" * 201, "first_name: 201 characters, at most 200"),
        ("mars@example.com,Ann,Mars/Base", "timezone: unknown time zone 'Mars/Base'"),
        ('nl@example.com,"Ann\nBcc: x",UTC', "first_name: contains a line break"),
        ("extra@example.com,Ann,UTC,surplus", "more cells than the header has columns"),
    ],
)
def test_every_row_is_checked_before_it_is_written(tmp_path, sequence, row, reason):
    text = f"email,first_name,timezone\nfirst@example.com,Ada,UTC\n{row}\nlast@example.com,Bob,UTC\n"
    out, err, exc = enroll_csv(tmp_path, sequence, text)
    assert exc is None, "rows were enrolled: the refused one is listed, the run ends well"
    assert f"line 3: {reason}" in err
    assert "2 enrolled, 1 rejected, 0 already enrolled, 0 suppressed (3 rows)" in out
    assert set(Contact.objects.values_list("email", flat=True)) == {"first@example.com", "last@example.com"}


def test_non_utf8_input_names_the_line_and_byte(tmp_path, sequence):
    _, _, exc = enroll_csv(tmp_path, sequence, b"email,first_name\na@example.com,Ann\nb@example.com,J\xf6rg\n")
    assert exc is not None
    assert "line 3, byte 16" in str(exc) and "0xf6 is not UTF-8" in str(exc)
    assert not Contact.objects.exists()


def test_the_batch_writes_what_one_enrollment_writes(tmp_path, sequence, mailbox):
    single = enroll(make_sequence(mailbox=mailbox, steps=2), "one@example.com", first_name="One")
    # A batch of 200 (PostgreSQL: COPY, db.sql.rows_copied) and one of 50 (an INSERT): the same rows either way.
    rows = "".join(f"p{i}@example.com,P{i},Co{i}\n" for i in range(250))
    out, err, exc = enroll_csv(tmp_path, sequence, "email,first_name,company\n" + rows, "--batch-size", "200",
                               "--progress-every", "200")
    assert exc is None and "250 enrolled, 0 rejected" in out
    assert "200/250 rows" in err and "rows/s  ETA" in err
    enrollment = Enrollment.objects.get(sequence=sequence, contact__email="p7@example.com")

    def shape(e: Enrollment):
        events = TimelineEvent.objects.filter(enrollment=e).order_by("at", "id")
        return ([(ev.kind, ev.version_seen, sorted(ev.data), ev.job_id is not None) for ev in events],
                [(j.state, j.step.position, j.version) for j in e.jobs.all()])

    assert shape(enrollment) == shape(single)
    assert shape(Enrollment.objects.get(sequence=sequence, contact__email="p207@example.com")) == shape(single)
    assert Contact.objects.get(email="p7@example.com").first_name == "P7"
    assert TimelineEvent.objects.filter(enrollment__sequence=sequence, at__isnull=False).count() == 500
    job = enrollment.jobs.get()
    assert job.message_id.endswith("@" + mailbox.address.split("@")[1] + ">")
    assert SendJob.objects.filter(enrollment__sequence=sequence, state="scheduled").count() == 250
    assert dispatch_due()  # the scheduled jobs are what the dispatcher picks up


def test_a_second_import_refuses_exactly_the_rows_already_in_the_sequence_with_statements_per_batch(tmp_path,
                                                                                                     sequence, mailbox):
    def rows(first: int, last: int) -> str:
        return "email,first_name,company\n" + "".join(f"p{i}@example.com,P{i},Co\n" for i in range(first, last))

    other = make_sequence(mailbox=mailbox, steps=1)
    assert enroll_csv(tmp_path, other, rows(0, 400))[2] is None  # all of them contacts, in another sequence
    assert enroll_csv(tmp_path, sequence, rows(0, 150))[2] is None
    with CaptureQueriesContext(connection) as statements:
        out, err, exc = enroll_csv(tmp_path, sequence, rows(100, 400))
    assert exc is None and "250 enrolled, 0 rejected, 50 already enrolled, 0 suppressed (300 rows)" in out
    refused = [line for line in err.splitlines() if "is already enrolled" in line]
    assert len(refused) == 50
    assert refused[0].startswith("line 2: p100@example.com") and refused[-1].startswith("line 51: p149@example.com")
    assert set(Enrollment.objects.filter(sequence=sequence).values_list("contact__email", flat=True)) == {
        f"p{i}@example.com" for i in range(400)}
    # One batch of 300 rows: a few statements per table, none per row.
    assert len(statements) < 40, [q["sql"][:80] for q in statements]
