"""The browser's dry run lists the rows that lack a value a step needs; its link counts them enrolled, and the run
enrolls them anyway."""

from __future__ import annotations

import pytest

from sequences.models import Enrollment, Step
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_contacts import run_job, upload_csv

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("allow", [False, True])
def test_the_dry_run_names_the_missing_value_and_its_link_counts_them_enrolled(client, users, allow):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Needs",
                             subject="Hi {{ first_name }}", body="Step {position}.")
    Step.objects.filter(sequence=sequence, position=2).update(body="How is {{ city }}?")
    client.force_login(users["operator"])
    map_url = upload_csv(client, sequence, "email,first_name,city\nann@example.com,Ann,Oslo\nbob@example.com,Bob,\n")
    mapping = {"col0": "email", "col1": "first_name", "col2": "field"}
    dry = client.get(map_url, mapping)
    run = dry.context["dry_run"]
    assert (run["enrolled"], run["n_rejected"], run["n_missing"]) == (1, 1, 1)
    page = dry.content.decode()
    assert "bob@example.com: no value for city, used by step 2 without a fallback" in page
    assert 'id="allow-missing"' in page and "Also enroll the 1 row that lacks a value" in page
    assert "Enroll 1 contact<" in page
    if allow:  # the link: the same dry run with that row counted as enrolled, and the button says so
        dry = client.get(dry.context["missing_url"])
        run = dry.context["dry_run"]
        assert (run["enrolled"], run["n_rejected"], run["n_flagged"], run["n_missing"]) == (2, 0, 1, 1)
        page = dry.content.decode()
        assert "Enroll 2 contacts<" in page and '<input type="hidden" name="allow_missing" value="1">' in page
        assert "Enrolled, but: bob@example.com: no value for city" in page

    response = client.post(map_url.rstrip("/") + "/run/", mapping | ({"allow_missing": "1"} if allow else {}))
    job_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert client.get(response["Location"] + "progress/").json()["total"] == (2 if allow else 1)
    run_job(job_id)
    enrolled = sorted(Enrollment.objects.filter(sequence=sequence).values_list("contact__email", flat=True))
    assert enrolled == (["ann@example.com", "bob@example.com"] if allow else ["ann@example.com"])
    result = client.get(response["Location"]).context["result"]
    assert (result["enrolled"], result["n_rejected"]) == ((2, 0) if allow else (1, 1))
