"""A CSV that the csv module cannot read (a cell over its 128 KB limit) is refused in words, never a 500, and
nothing of it is written (issue 34, item 7)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from sequences.models import Contact, Suppression
from tests.factories import MailboxFactory, make_sequence

HUGE_CELL = "x" * (131_072 + 10)


def _operator(users) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    return client


@pytest.mark.django_db
def test_an_enroll_upload_with_a_huge_cell_is_refused_in_words(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    text = f"email,first_name,note\nann@example.com,Ann,ok\nben@example.com,Ben,{HUGE_CELL}\n"
    response = _operator(users).post(reverse("enroll_upload", args=[sequence.pk]), {
        "file": SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")})
    assert response.status_code == 400
    assert "line 3" in response.content.decode() and "field larger than field limit" in response.content.decode()
    assert not Contact.objects.exists()


@pytest.mark.django_db
def test_a_suppression_import_with_a_huge_cell_is_refused_in_words(users):
    text = f"value,note\nann@example.com,ok\nben@example.com,{HUGE_CELL}\n"
    response = _operator(users).post(reverse("suppression_import"), {
        "file": SimpleUploadedFile("list.csv", text.encode(), content_type="text/csv")}, follow=True)
    assert response.status_code in (200, 400)
    page = response.content.decode()
    assert "Line 3" in page and "nothing was imported" in page
    assert not Suppression.objects.exists()
