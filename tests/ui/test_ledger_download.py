"""The "Download ledger" links on the contact, enrollment and sequence pages, and what they serve."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from sequences.ledger import COLUMNS

pytestmark = pytest.mark.django_db

PAGES = {  # the page, and the ledger its link downloads (the world's "paused" enrollment, its contact, its sequence)
    "contact": ("contact_detail", "contact_send_ledger", lambda w: w["paused"].contact_id),
    "enrollment": ("enrollment_detail", "enrollment_send_ledger", lambda w: w["paused"].pk),
    "sequence": ("sequence_detail", "sequence_send_ledger", lambda w: w["sequence"].pk),
}


def rows_of(response) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff"), "spreadsheets read the file as UTF-8"
    header, *lines = list(csv.reader(io.StringIO(text[1:])))
    assert tuple(header) == COLUMNS
    return [dict(zip(header, line, strict=True)) for line in lines]


@pytest.mark.parametrize("what", PAGES)
def test_each_page_links_its_ledger_and_the_link_serves_it_as_csv(client, users, world, what):
    page, ledger, pk = PAGES[what]
    client.force_login(users["staff"])
    html = client.get(reverse(page, args=[pk(world)])).content.decode()
    url = reverse(ledger, args=[pk(world)])
    assert f'id="download-ledger" href="{url}"' in html and "Download ledger" in html

    response = client.get(url)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith(f'attachment; filename="send-ledger-{what}-{pk(world)}-')
    rows = rows_of(response)
    paused = [r for r in rows if r["contact"] == "paused@example.com"]
    assert [(r["step"], r["outcome"], r["reason"], r["by"]) for r in paused] == [
        ("1", "held back", "enrollment_paused", "fixture")]
    assert paused[0]["why"].startswith("Canceled — never sent: the enrollment was paused (canceled at ")
    others = sorted(r["contact"] for r in rows if r["contact"] != "paused@example.com")
    assert others == (["active@example.com"] if what == "sequence" else [])


def test_the_sequence_ledger_lists_every_person_of_it(client, users, world):
    client.force_login(users["operator"])
    rows = rows_of(client.get(reverse("sequence_send_ledger", args=[world["sequence"].pk])))
    assert [(r["contact"], r["step"], r["outcome"]) for r in rows] == [
        ("active@example.com", "1", "not sent yet"), ("paused@example.com", "1", "held back")]


@pytest.mark.parametrize("what", PAGES)
def test_a_user_without_access_gets_the_403_page_anonymous_the_login_and_a_missing_row_404(
        client, users, world, django_user_model, what):
    _, ledger, pk = PAGES[what]
    url = reverse(ledger, args=[pk(world)])
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/?next=")

    client.force_login(django_user_model.objects.create_user(username="no-role", password="pw-0123456789"))
    refused = client.get(url)
    assert refused.status_code == 403
    assert b"403 \xe2\x80\x94 not allowed" in refused.content
    assert b"paused@example.com" not in refused.content

    client.force_login(users["admin"])
    assert client.get(reverse(ledger, args=[987654])).status_code == 404
    assert client.post(url).status_code == 405
