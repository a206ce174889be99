"""`manage.py enroll` counts a file's rows as the browser's upload does: enrolled, rejected, already enrolled,
suppressed. `--dry-run` writes nothing and prints the browser dry run's counts; a file enrolled again is not an
error; the command fails only when nothing could be enrolled (or the file is unusable)."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sequences.models import Contact, Enrollment, SendJob, Step, TimelineEvent
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.sequences.test_import_needs import enroll_csv
from ui.enroll_upload import _result

pytestmark = pytest.mark.django_db(transaction=True)

# Lines 2-3 and 8 enroll; 4 is not an address, 5 duplicates 2, 6 lacks the city step 2 needs (rejected), 7 is in
# the sequence already, 9 is suppressed.
TEXT = ("email,first_name,company,city\n"
        "ann@example.com,Ann,Acme,Oslo\n"
        "bob@example.com,Bob,Beta,Rome\n"
        "not-an-address,Bad,,Oslo\n"
        "ANN@example.com,Ann,Acme,Oslo\n"
        "cy@example.com,Cy,Gamma,\n"
        "old@example.com,Old,Acme,Lima\n"
        "dee@example.com,Dee,Delta,Lima\n"
        "no@example.com,No,Acme,Lima\n")


@pytest.fixture
def sequence(db):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Counted",
                             subject="Hi {{ first_name }}", body="Step {position}.")
    Step.objects.filter(sequence=sequence, position=2).update(body="How is {{ city }}?")
    enroll(sequence, "old@example.com", city="Lima")
    suppression_add(value="no@example.com", reason="unsubscribe", note="asked", actor="ops")
    return sequence


def written() -> tuple[int, ...]:
    return (Contact.objects.count(), Enrollment.objects.count(), SendJob.objects.count(),
            TimelineEvent.objects.count())


def test_the_dry_run_writes_nothing_and_prints_the_counts_of_the_browser_dry_run(tmp_path, sequence, client,
                                                                                   django_user_model, redis_conn):
    before = written()
    out, err, exc = enroll_csv(tmp_path, sequence, TEXT, "--dry-run")
    assert exc is None
    assert out.splitlines()[-1] == ("dry run, nothing written: 3 would be enrolled, 3 rejected, 1 already enrolled, "
                                    "1 suppressed (8 rows)")
    assert err.splitlines() == [
        "line 4: 'not-an-address' is not a valid address",
        "line 5: ann@example.com duplicates line 2",
        "line 6: cy@example.com: no value for city, used by step 2 without a fallback",
        "line 7: old@example.com is already enrolled in 'Counted'",
        "line 9: no@example.com is suppressed (unsubscribe, no@example.com)",
    ]
    assert written() == before, "a dry run writes nothing"

    # The browser's dry run of the same file says the same.
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    upload = SimpleUploadedFile("people.csv", TEXT.encode(), content_type="text/csv")
    map_url = client.post(reverse("enroll_upload", args=[sequence.pk]), {"file": upload})["Location"]
    page = client.get(map_url, {"col0": "email", "col1": "first_name", "col2": "company", "col3": "field"})
    run = page.context["dry_run"]
    words = re.search(r"(\d+) would be enrolled, (\d+) rejected, (\d+) already enrolled, (\d+) suppressed \((\d+) rows",
                      out)
    assert tuple(map(int, words.groups())) == (run["enrolled"], run["n_rejected"], run["n_already"],
                                               run["n_suppressed"], run["rows"])
    assert [line for line, _ in run["rejected"] + run["already"] + run["suppressed"]] == [4, 5, 6, 7, 9]

    # With the missing value allowed, the row of line 6 counts as enrolled, in both.
    out, _, exc = enroll_csv(tmp_path, sequence, TEXT, "--dry-run", "--allow-missing")
    assert exc is None and "4 would be enrolled, 2 rejected, 1 already enrolled, 1 suppressed (8 rows)" in out
    assert "line 6: cy@example.com: no value for city, used by step 2 without a fallback; enrolled anyway" in out

    # The run then does what the dry run said, and ends well.
    out, _, exc = enroll_csv(tmp_path, sequence, TEXT)
    assert exc is None, exc
    assert "3 enrolled, 3 rejected, 1 already enrolled, 1 suppressed (8 rows)" in out
    assert Enrollment.objects.filter(sequence=sequence).count() == 4


def test_a_file_enrolled_again_counts_its_rows_as_already_enrolled_and_ends_well(tmp_path, sequence):
    text = "email,first_name,company,city\nann@example.com,Ann,Acme,Oslo\nbob@example.com,Bob,Beta,Rome\n"
    assert enroll_csv(tmp_path, sequence, text)[2] is None
    out, err, exc = enroll_csv(tmp_path, sequence, text)
    assert exc is None
    assert "0 enrolled, 0 rejected, 2 already enrolled, 0 suppressed (2 rows)" in out
    assert "rejected" not in err and err.count("is already enrolled in 'Counted'") == 2


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry run"])
def test_nothing_enrolled_because_every_row_was_refused_is_an_error(tmp_path, sequence, dry_run):
    text = "email,first_name,company,city\nnot-an-address,Bad,,\nno@example.com,No,Acme,Lima\n"
    before = written()
    out, err, exc = enroll_csv(tmp_path, sequence, text, *(["--dry-run"] if dry_run else []))
    would = "would be " if dry_run else ""
    assert exc is not None and str(exc) == f"nothing {would}enrolled: 1 rejected and 1 suppressed (see the lines above)"
    assert f"0 {would}enrolled, 1 rejected, 0 already enrolled, 1 suppressed (2 rows)" in out
    assert "line 2: 'not-an-address' is not a valid address" in err
    assert written() == before


def test_a_result_kept_from_before_the_counts_by_kind_shows_each_row_under_its_own_count():
    kept = {"enrolled": 2, "suppressed": 1, "already": 1, "invalid": 2, "contacts_created": 2, "contacts_kept": 0,
            "rejected": [[3, "'x' is not a valid address"], [4, "old@example.com is already enrolled in 'S'"],
                         [5, "no@example.com is suppressed (unsubscribe, no@example.com)"],
                         [6, "ann@example.com duplicates line 2"]]}
    shown = _result(kept)
    assert (shown["enrolled"], shown["n_rejected"], shown["n_already"], shown["n_suppressed"], shown["rows"]) == (
        2, 2, 1, 1, 6)
    assert [line for line, _ in shown["rejected"]] == [3, 6] and shown["contacts_created"] == 2
