"""An import refuses a row that lacks a value some step uses without a fallback, naming the row, the variable and
the step; `--allow-missing` (the upload's checkbox) enrolls it anyway. The CLI, the browser's dry run and run,
and the API's bulk job go through the one rule (`sequences.services.enrollments.StepNeeds`)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sequences.models import Enrollment, Step
from sequences.services.enrollments import ContactRow, enrollments_create_batch, enrollments_dry_run
from tests.factories import make_sequence

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sequence(mailbox):
    sequence = make_sequence(mailbox=mailbox, steps=3, subject='Hi {{ first_name|default:"there" }}',
                             body="Step {position}.")
    # Step 2 needs a city; step 3 has a fallback for it; step 1 needs nothing.
    Step.objects.filter(sequence=sequence, position=2).update(body="How is {{ city }}?")
    Step.objects.filter(sequence=sequence, position=3).update(body='Still in {{ city|default:"town" }}?')
    return sequence


def enroll_csv(tmp_path, sequence, text, *args):
    path = tmp_path / "people.csv"
    path.write_text(text)
    out, err = StringIO(), StringIO()
    try:
        call_command("enroll", "--sequence", sequence.name, *args, str(path), stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def test_the_command_names_the_row_the_variable_and_the_step(tmp_path, sequence):
    text = "email,first_name,city\nann@example.com,Ann,Oslo\nbob@example.com,Bob,\ncy@example.com,,Rome\n"
    out, err, exc = enroll_csv(tmp_path, sequence, text)
    assert exc is None and "2 enrolled, 1 rejected, 0 already enrolled" in out
    assert "line 3: bob@example.com: no value for city, used by step 2 without a fallback" in err
    assert sorted(Enrollment.objects.values_list("contact__email", flat=True)) == ["ann@example.com",
                                                                                 "cy@example.com"]

    out, err, exc = enroll_csv(tmp_path, sequence, text, "--allow-missing")
    assert exc is None and "1 enrolled, 0 rejected, 2 already enrolled" in out  # Ann and Cy are in: Bob is new
    assert Enrollment.objects.filter(contact__email="bob@example.com").exists()


def test_the_dry_run_and_the_batch_say_the_same(sequence):
    rows = [ContactRow(line=2, email="dora@example.com", first_name="Dora"),
            ContactRow(line=3, email="eve@example.com", fields={"city": "Lima"})]
    refused = enrollments_dry_run(sequence_id=sequence.pk, rows=rows)
    assert set(refused) == {"dora@example.com"} and "used by step 2" in refused["dora@example.com"].reason
    assert enrollments_dry_run(sequence_id=sequence.pk, rows=rows, allow_missing=True) == {}
    result = enrollments_create_batch(sequence_id=sequence.pk, rows=rows)
    assert (result.enrolled, result.missing_values) == (1, 1)
    assert result.rejected == [(2, "dora@example.com: no value for city, used by step 2 without a fallback")]
