"""The browser's dry run lists the rows that lack a value a step needs, and its checkbox enrolls them anyway."""

from __future__ import annotations

import pytest

from sequences.models import Enrollment, Step
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_contacts import run_job, upload_csv

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("allow", [False, True])
def test_the_dry_run_names_the_missing_value_and_the_checkbox_enrolls_them_anyway(client, users, allow):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Needs",
                             subject="Hi {{ first_name }}", body="Step {position}.")
    Step.objects.filter(sequence=sequence, position=2).update(body="How is {{ city }}?")
    client.force_login(users["operator"])
    map_url = upload_csv(client, sequence, "email,first_name,city\nann@example.com,Ann,Oslo\nbob@example.com,Bob,\n")
    mapping = {"col0": "email", "col1": "first_name", "col2": "field"}
    dry = client.get(map_url, mapping)
    run = dry.context["dry_run"]
    assert (run["valid"], run["n_rejected"], run["n_missing"]) == (1, 1, 1)
    page = dry.content.decode()
    assert "bob@example.com: no value for city, used by step 2 without a fallback" in page
    assert 'id="allow-missing"' in page and "Also enroll the 1 row that lacks a value" in page

    response = client.post(map_url.rstrip("/") + "/run/", mapping | ({"allow_missing": "1"} if allow else {}))
    run_job(response["Location"].rstrip("/").rsplit("/", 1)[-1])
    enrolled = sorted(Enrollment.objects.filter(sequence=sequence).values_list("contact__email", flat=True))
    assert enrolled == (["ann@example.com", "bob@example.com"] if allow else ["ann@example.com"])
