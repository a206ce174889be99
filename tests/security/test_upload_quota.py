"""Enroll uploads kept in Redis fit a quota per person and one for everyone (issue 40, finding 5): an upload over
either is refused in words (the limit, what is in use, when room frees up, that old uploads can be discarded),
never a 500, and nothing of it is kept; a discarded, enrolled or forgotten upload frees its room; uploads at the
same moment from several connections cannot together pass the limit."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.factories import MailboxFactory, make_sequence
from ui import upload_store
from ui.upload_store import QuotaFull, Upload, upload_keep

pytestmark = pytest.mark.django_db
KB = 1024
ROWS = 6000  # about 120 KB as stored: three such uploads pass the quota of 300 KB, two fit it


def people(tag: str) -> str:
    return "email\n" + "".join(f"{tag}{i:05}@example.com\n" for i in range(ROWS))


@pytest.fixture
def small_quota(monkeypatch):
    monkeypatch.setattr(upload_store, "USER_QUOTA_BYTES", 300 * KB)
    monkeypatch.setattr(upload_store, "TOTAL_QUOTA_BYTES", 400 * KB)


@pytest.fixture
def sequence():
    return make_sequence(mailbox=MailboxFactory(), steps=1)


def client_of(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def upload(client: Client, sequence, tag: str):
    return client.post(reverse("enroll_upload", args=[sequence.pk]),
                       {"file": SimpleUploadedFile(f"{tag}.csv", people(tag).encode(), content_type="text/csv")})


def kept_keys(rq_default) -> list[bytes]:
    return [k for k in rq_default.keys("outreach:enroll-upload:*") if k.count(b":") == 2]


def words(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode().replace("\xa0", " "))


def test_a_person_cannot_keep_more_than_their_quota_and_a_discard_frees_it(small_quota, sequence, users,
                                                                         rq_default):
    operator = client_of(users["operator"])
    first, second = upload(operator, sequence, "a"), upload(operator, sequence, "b")
    assert first.status_code == second.status_code == 302

    refused = upload(operator, sequence, "c")
    assert refused.status_code == 400
    page = words(refused)
    assert re.search(r"Uploads waiting to be enrolled may keep 300\.0 KB per person; yours keep 2\d\d\.\d KB in "
                     r"2 uploads and this file needs 1\d\d\.\d KB\. There is room for it by \d{4}-\d\d-\d\d \d\d:\d\d "
                     r"UTC, when your older uploads are forgotten \(each is kept 6 hours\), or at once if you discard "
                     r"the uploads listed below that you will not enroll\.", page), page[:3000]
    assert page.count('name="discard"') == 3  # one per upload, and "all"
    assert len(kept_keys(rq_default)) == 2, "the refused file is not kept"

    # Another person's room is their own.
    assert upload(client_of(users["admin"]), sequence, "d").status_code == 302

    token = first["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert operator.post(reverse("enroll_upload", args=[sequence.pk]), {"discard": token}).status_code == 302
    assert operator.get(first["Location"]).status_code == 404, "a discarded upload is forgotten"
    assert upload(operator, sequence, "c").status_code == 302
    # A person discards only their own uploads.
    client_of(users["admin"]).post(reverse("enroll_upload", args=[sequence.pk]), {"discard": "all"})
    assert operator.get(second["Location"]).status_code == 200


def test_everyone_together_cannot_keep_more_than_the_total(small_quota, sequence, users, rq_default):
    assert upload(client_of(users["operator"]), sequence, "a").status_code == 302
    assert upload(client_of(users["operator"]), sequence, "b").status_code == 302
    admin = client_of(users["admin"])
    assert upload(admin, sequence, "c").status_code == 302

    refused = upload(admin, sequence, "d")  # the admin's own 120 KB leave room; everyone's 360 KB do not
    assert refused.status_code == 400
    assert re.search(r"Uploads waiting to be enrolled may keep 400\.0 KB for everyone together; 3\d\d\.\d KB are in "
                     r"use and this file needs 1\d\d\.\d KB\. There is room for it by [-\d]+ [:\d]+ UTC, when older "
                     r"uploads are forgotten, or sooner as uploads are enrolled or discarded; discard the uploads "
                     r"listed below that you will not enroll\.", words(refused))
    assert len(kept_keys(rq_default)) == 3

    admin.post(reverse("enroll_upload", args=[sequence.pk]), {"discard": "all"})
    assert upload(admin, sequence, "d").status_code == 302


def test_a_forgotten_upload_frees_its_room(small_quota, monkeypatch, sequence, users, rq_default):
    monkeypatch.setattr(upload_store, "UPLOAD_TTL", 1)
    operator = client_of(users["operator"])
    assert upload(operator, sequence, "a").status_code == 302
    assert upload(operator, sequence, "b").status_code == 302
    assert upload(operator, sequence, "c").status_code == 400
    time.sleep(1.1)  # Redis forgets both, and the count with them
    assert kept_keys(rq_default) == []
    assert upload(operator, sequence, "c").status_code == 302
    assert upload(operator, sequence, "d").status_code == 302


def test_an_enrolled_upload_no_longer_counts(small_quota, sequence, users, rq_default):
    operator = client_of(users["operator"])
    map_url = upload(operator, sequence, "a")["Location"]
    assert upload(operator, sequence, "b").status_code == 302
    run = operator.post(map_url.rstrip("/") + "/run/", {"col0": "email"})
    assert run.status_code == 302 and "/enrolling/" in run["Location"]
    # Its rows travel with the job: the upload is forgotten, its page and a second POST lead to the run.
    assert operator.get(map_url)["Location"] == run["Location"]
    assert operator.post(map_url.rstrip("/") + "/run/", {"col0": "email"})["Location"] == run["Location"]
    assert upload(operator, sequence, "c").status_code == 302


def test_uploads_at_the_same_moment_cannot_pass_the_quota_together(small_quota, monkeypatch, rq_default):
    """Rounds of sixteen small uploads from sixteen connections, released together by a barrier, each round one
    person's: each counts 64 KB, so the quota of 300 KB keeps four of a round whatever the order (a count read
    before another upload's write is read again), and refuses each of the others in words."""
    monkeypatch.setattr(upload_store, "TOTAL_QUOTA_BYTES", 100 * 1024 * KB)
    for person in range(1001, 1006):
        barrier = threading.Barrier(16)
        kept, refused = [], []

        def one(n: int, person=person, barrier=barrier, kept=kept, refused=refused) -> None:
            upload = Upload(sequence_id=1, file=f"{n}.csv", header=["email"], text=f"email\nx{n}@example.com\n")
            barrier.wait()
            try:
                kept.append(upload_keep(user_id=person, upload=upload))
            except QuotaFull as exc:
                refused.append(str(exc))

        threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert (len(kept), len(refused)) == (4, 12), f"person {person}"
        assert all("may keep 300.0\xa0KB per person; yours keep 256.0\xa0KB in 4 uploads" in r for r in refused)
    assert len(kept_keys(rq_default)) == 5 * 4
