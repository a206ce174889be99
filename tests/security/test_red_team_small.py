"""The small findings of the red team (issue 40): 8, a number past its column; 9, a formula after a separator in
the CSV export; 10, bidirectional controls in names and replies; 11, what `/healthz` tells a stranger; 15, the
OAuth callback's code in the logs, and pages with personal data in caches."""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import shlex
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import requests
from cryptography.fernet import Fernet
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from api.tokens import api_token_create
from inbound.models import Conversation, InboundMessage
from inbound.replies.services import conversation_record_in_transaction
from mailboxes.callback import CALLBACK_PATH
from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV
from proving.harness.stack import free_port, wait_for
from sequences.models import Suppression
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, make_sequence

ROOT = Path(__file__).resolve().parents[2]

# --- 8: a number past its column is refused in words, never a 500 -------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("cap", [2**31, 2**63, 10**30])
def test_a_daily_cap_past_its_column_is_a_form_error_not_a_500(users, monkeypatch, cap):
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    response = client.post("/mailboxes/new/", {
        "preset": "other", "name": "big", "address": "big@acme.test", "auth": "password",
        "smtp_host": "127.0.0.1", "smtp_port": free_port(), "smtp_security": "none", "smtp_password": "pw-1",
        "imap_port": 993, "imap_security": "tls", "window_timezone": "UTC", "daily_cap": cap,
        "action": "save_anyway"})  # saved whatever the check finds (nothing listens there)
    assert response.status_code in (200, 400)
    assert "2147483647" in response.content.decode()  # the largest daily cap, in the form's words
    assert not Mailbox.objects.exists()


# --- 9: the formula guard after every separator ------------------------------------------------------------------

FORMULA_NOTES = ["x;=1+1", "a,-2+3", "tab\t@SUM(A1)", "line\n=cmd|' /C calc'!A0", 'quoted;"=1+1"', "'=kept as typed",
                 "plain note"]


@pytest.mark.django_db
def test_the_export_guards_a_formula_after_every_separator_and_imports_back_exactly(users):
    for n, note in enumerate(FORMULA_NOTES):
        suppression_add(value=f"p{n}@example.com", reason="manual", note=note, actor="t")
    client = Client()
    client.force_login(users["admin"])
    exported = b"".join(client.get(reverse("suppression_export")).streaming_content).decode().lstrip("\ufeff")

    # However a spreadsheet splits the file (",", ";" or a tab, a line break inside quotes or not), no cell starts
    # with a formula (a cell's own spaces and quotes do not hide one).
    for separator in (",", ";", "\t"):
        for line in exported.splitlines():
            for cell in line.split(separator):
                assert not cell.lstrip(' "').startswith(("=", "+", "-", "@")), (separator, line, cell)
        for row in csv.reader(io.StringIO(exported), delimiter=separator):
            for cell in row:
                for part in cell.splitlines():
                    assert not part.lstrip(' "').startswith(("=", "+", "-", "@")), (separator, cell)

    # The import takes every guard off: the notes come back as they were typed.
    Suppression.objects.all().delete()
    response = client.post(reverse("suppression_import"),
                           {"file": SimpleUploadedFile("export.csv", exported.encode())}, follow=True)
    assert response.status_code == 200
    notes = dict(Suppression.objects.values_list("value", "note"))
    assert notes == {f"p{n}@example.com": note for n, note in enumerate(FORMULA_NOTES)}


# --- 10: bidirectional controls isolated, and shown in names ---------------------------------------------------

RLO, LRI = "\u202e", "\u2066"
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Unisolated(HTMLParser):
    """The text of a page that holds a bidirectional control outside every `<bdi>` and every `dir="auto"`."""

    def __init__(self):
        super().__init__()
        self.open: list[tuple[str, bool]] = []  # each open element, and whether it isolates its text
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append((tag, tag == "bdi" or ("dir", "auto") in attrs))

    def handle_endtag(self, tag):
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data):
        if BIDI.search(data) and not any(isolating for _, isolating in self.open):
            self.found.append(data)


@pytest.fixture
def reversing(users):
    mailbox = MailboxFactory(name="bidi-box")
    sequence = make_sequence(mailbox=mailbox, steps=2, name="Bidi")
    contact = contact_upsert(email="ann@example.com", first_name=f"Ann{RLO}gnp.exe", last_name=f"Lee{LRI}",
                             company=f"Acme{RLO}")
    enrollment = enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk)
    job = enrollment.jobs.get()
    with transaction.atomic():
        message = InboundMessage.objects.create(
            mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, message_id="<bidi@example.com>",
            from_address="ann@example.com", from_name=f"Ann{RLO} Lee", subject=f"Re: {RLO}reffo",
            kind="human_reply", reply_text=f"Pay {RLO}4321 now\nthanks", job=job, enrollment=enrollment,
            correlation_rule="in_reply_to", internaldate=timezone.now())
        conversation = Conversation.objects.get(pk=conversation_record_in_transaction(row=message))
    return {"sequence": sequence, "contact": contact, "enrollment": enrollment, "job": job, "message": message,
            "conversation": conversation}


def test_bidi_controls_reach_no_words_beside_them_and_show_in_names(client, users, reversing):
    client.force_login(users["admin"])
    pages = [reverse("contact_list"), reverse("contact_detail", args=[reversing["contact"].pk]),
             reverse("sequence_detail", args=[reversing["sequence"].pk]),
             reverse("enrollment_detail", args=[reversing["enrollment"].pk]),
             reverse("inbound_list"), reverse("inbound_detail", args=[reversing["message"].pk]),
             reverse("incident_search") + "?q=ann@example.com", reverse("incident_job", args=[reversing["job"].pk]),
             reverse("reply_list"), reverse("reply_detail", args=[reversing["conversation"].pk])]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        parser = Unisolated()
        parser.feed(html)
        assert parser.found == [], url
        # A name shows its controls as marks: an operator sees what the sender wrote.
        for name in ("Ann", "Lee", "Acme"):
            for shown in re.findall(rf"<bdi>{name}[^<]*</bdi>", html):
                assert not BIDI.search(shown), (url, shown)
    contact_page = client.get(reverse("contact_detail", args=[reversing["contact"].pk])).content.decode()
    assert "<bdi>Ann[U+202E]gnp.exe</bdi> <bdi>Lee[U+2066]</bdi>" in contact_page
    reply = client.get(reverse("inbound_detail", args=[reversing["message"].pk])).content.decode()
    assert f'dir="auto">Pay {RLO}4321 now' in reply  # the reply's own text, as written, in its own direction


# --- 11: /healthz says ok or not to a stranger; the detail takes the token ----------------------------------------

HEALTH_TOKEN = "health-" + "y" * 40


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {HEALTH_TOKEN}"])
def test_healthz_without_its_token_says_only_ok(client, db, redis_conn, settings, header):
    settings.OUTREACH_HEALTH_TOKEN = HEALTH_TOKEN
    MailboxFactory(name="sales-secret-name", blocked_at=timezone.now())
    response = client.get("/healthz", headers={"Authorization": header} if header else {})
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    detailed = client.get("/healthz", headers={"Authorization": f"Bearer {HEALTH_TOKEN}"}).json()
    assert detailed["mailboxes"]["blocked"][0]["name"] == "sales-secret-name"


def test_healthz_without_its_token_says_unavailable_with_a_503(client, db, settings):
    settings.OUTREACH_HEALTH_TOKEN = ""  # none set: nobody gets the detail
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/healthz", headers={"Authorization": "Bearer "})
    assert (response.status_code, response.json()) == (503, {"status": "unavailable"})


# --- 15: the OAuth callback's query out of the logs; no-store on pages with personal data ------------------------

CODE, STATE = "c0de-SECRET-4f1a", "st4te-SECRET-9b2c"


def _get(url: str, headers: dict | None = None) -> int:
    return requests.get(url, headers=headers or {}, allow_redirects=False, timeout=5).status_code


def _up(url: str) -> bool:
    try:
        return _get(url) == 200
    except (requests.ConnectionError, requests.Timeout):  # not listening yet, or its worker still starting
        return False


def _procfile_web(port: int) -> list[str]:
    """The Procfile's web command, with this test's address and one worker."""
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    line = line.split(":", 1)[1].replace("${OUTREACH_WEB_ADDR:-127.0.0.1:8000}", f"127.0.0.1:{port}")
    line = line.replace("${WEB_CONCURRENCY:-3}", "1")
    # No control socket: it sits in the home directory, where another gunicorn of the suite may have its own.
    return [str(ROOT / word) if word.startswith(".venv/") else word for word in shlex.split(line)] + [
        "--no-control-socket"]


@pytest.mark.one_database("gunicorn runs on a SQLite file of its own")
def test_gunicorn_s_access_log_keeps_the_oauth_callback_s_code_and_state_out(tmp_path):
    port = free_port()
    base = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "OUTREACH_"))}
    env = base | {"DJANGO_SECRET_KEY": "access-log-test-key-0123456789-abcdefghijklmnop",
                  "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "OUTREACH_HTTPS": "0",
                  "ALLOWED_HOSTS": "127.0.0.1", "OUTREACH_DNS_RESOLVER": "off", "PYTHONUNBUFFERED": "1"}
    command = _procfile_web(port)
    assert Path(command[0]).exists(), command[0]
    log = (tmp_path / "gunicorn.log").open("w")
    web = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}"
    callback = f"{base_url}{CALLBACK_PATH}?code={CODE}&state={STATE}"
    try:
        wait_for(lambda: _up(f"{base_url}/healthz/live"), timeout=90, what="gunicorn", interval=0.2)
        assert _get(callback) == 302  # no login: to the login page, the callback in its `next`
        assert _get(f"{base_url}/login/?next={CALLBACK_PATH}%3Fcode%3D{CODE}%26state%3D{STATE}") == 200
        assert _get(f"{base_url}/static/outreach.css", {"Referer": callback}) == 200
        assert _get(f"{base_url}/login/?next=/sequences/") == 200  # any other query is logged as it came
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(30)
        log.close()
    output = (tmp_path / "gunicorn.log").read_text()
    assert f'"GET {CALLBACK_PATH}?[not logged] HTTP/1.1" 302' in output, output[-3000:]
    assert '"GET /login/?[not logged] HTTP/1.1" 200' in output, output[-3000:]
    assert '"GET /login/?next=/sequences/ HTTP/1.1" 200' in output, output[-3000:]
    assert CODE not in output and STATE not in output, output[-3000:]


def test_the_development_server_s_request_line_keeps_them_out_too():
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("django.server")
    keep = Keep()
    logger.addHandler(keep)
    try:  # as django.core.servers.basehttp logs each request
        logger.info('"%s" %s %s', f"GET {CALLBACK_PATH}?code={CODE}&state={STATE} HTTP/1.1", "302", "0")
        logger.info('"%s" %s %s', "GET /contacts/?q=ann HTTP/1.1", "200", "512")
    finally:
        logger.removeHandler(keep)
    assert seen == [f'"GET {CALLBACK_PATH}?[not logged] HTTP/1.1" 302 0', '"GET /contacts/?q=ann HTTP/1.1" 200 512']


@pytest.mark.django_db
def test_pages_exports_and_api_answers_are_no_store_and_static_files_stay_cacheable(users):
    suppression_add(value="ann@example.com", reason="manual", note="private", actor="t")
    client = Client()
    client.force_login(users["admin"])
    for url in (reverse("dashboard"), reverse("contact_list"), reverse("suppression_list"),
                reverse("suppression_export"), "/admin/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"], url
    _, token = api_token_create(name="cache", role="admin", rate_per_minute=1000)
    api = Client().get("/api/v1/suppressions", headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 200 and "no-store" in api["Cache-Control"]
    static = Client().get("/static/outreach.css")
    assert static.status_code == 200
    assert "no-store" not in static.get("Cache-Control", "")

