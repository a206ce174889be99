"""Bad input in every import is never a 5xx or a traceback, and never half an import: the CSV enroll upload and the
`enroll` command, the suppression import (inline and in the background) and `load_sequences` each either refuse
the whole file in words and change nothing, or import the good rows and name every row they refused (issue 34,
item 7). The same hostile values as the pages' sweep (tests/security/sweep.py): NUL, lone surrogates, huge and
negative numbers, a digit that is not ASCII, 1 MB values, nested arrays.
"""

from __future__ import annotations

import re
from io import StringIO

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rq.job import Job
from rq.worker import SimpleWorker

from mailboxes.models import Mailbox
from sequences.models import Contact, Sequence, Step, Suppression
from tests.factories import MailboxFactory, make_sequence
from tests.security.sweep import FORM_VALUES, Found
from tests.sequences.test_commands import GOOD, write
from ui.views import INLINE_IMPORT_ROWS, _result_key

pytestmark = pytest.mark.django_db(transaction=True)

# Cells a CSV carries: the form values as text (a lone surrogate as the bytes that are not UTF-8, so the file is
# refused as a whole), the 1 MB value past the csv module's cell limit (also the whole file).
CELLS = {label: value for label, value in FORM_VALUES.items() if label not in ("surrogate", "oversize")}
WHOLE_FILE = {"surrogate": FORM_VALUES["surrogate"], "oversize": FORM_VALUES["oversize"]}
GOOD_ROWS = [("ann@example.com", "Ann", "Acme", "blue"), ("ben@example.com", "Ben", "Initech", "green")]


def hostile_csv(columns: list[str], good: list[tuple[str, ...]], cell) -> tuple[bytes, dict[int, tuple]]:
    """A CSV: the good rows, then one row per column and hostile cell (the other cells good, the address one of
    its own); the hostile rows by line: (column, label, the row's first cell, the hostile cell)."""
    rows, hostile = [[v.encode() for v in g] for g in good], {}
    for column, (label, value) in [(c, item) for c in range(len(columns)) for item in cell.items()]:
        row = [v.encode() for v in good[0]]
        row[0] = f"row{len(hostile)}@example.com".encode()
        row[column] = value
        rows.append(row)
        hostile[len(rows) + 1] = (columns[column], label, row[0].decode("utf-8", "replace"), value)
    quoted = [b",".join(b'"' + v.replace(b'"', b'""') + b'"' for v in row) for row in rows]
    return b"\n".join([",".join(columns).encode(), *quoted]) + b"\n", hostile


def _admin(users) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    return client


def _work() -> None:
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def _stored(contact: Contact, column: str) -> str:
    return contact.email if column == "email" else getattr(contact, column, None) or contact.fields.get(column, "")


def test_the_enroll_upload_names_each_refused_row_and_enrolls_the_rest(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    client, found = _admin(users), Found(logged_in=True)
    data, hostile = hostile_csv(["email", "first_name", "company", "colour"], GOOD_ROWS, CELLS)
    upload = client.post(f"/sequences/{sequence.pk}/enroll/", {"file": SimpleUploadedFile("people.csv", data)})
    found.check(upload, "upload")
    assert upload.status_code == 302, upload.content[:500]
    mapping = {"col0": "email", "col1": "first_name", "col2": "company", "col3": "field"}
    found.check(client.get(upload["Location"], mapping), "the dry run")
    run = client.post(upload["Location"] + "run/", mapping)
    found.check(run, "run")
    _work()
    status = client.get(run["Location"])
    found.check(status, "the status page")
    assert not found.rows, found.report()
    job = Job.fetch(run["Location"].rstrip("/").rsplit("/", 1)[-1], connection=django_rq.get_connection("default"))
    result = job.return_value()
    assert result is not None, job.latest_result().exc_string
    refused = {line for line, _ in result["rejected"]}
    # Every hostile row: refused with its line, or enrolled with the value exactly as sent; the good rows enrolled.
    enrolled = {c.email: c for c in Contact.objects.filter(enrollments__sequence=sequence)}
    for line, (column, label, email, value) in hostile.items():
        contact = enrolled.get(email)
        if line in refused:
            assert contact is None, f"line {line} ({column}={label}) refused, yet enrolled"
        else:
            assert contact is not None, f"line {line} ({column}={label}) neither refused nor enrolled"
            assert _stored(contact, column).encode() == value, (column, label)
    assert {g[0] for g in GOOD_ROWS} <= set(enrolled)
    assert refused, "a NUL in a cell is refused"


@pytest.mark.parametrize("label", sorted(WHOLE_FILE))
def test_an_enroll_upload_the_csv_module_or_utf8_cannot_read_is_refused_whole(users, label):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    data, _ = hostile_csv(["email", "first_name"], [g[:2] for g in GOOD_ROWS], {label: WHOLE_FILE[label]})
    response = _admin(users).post(f"/sequences/{sequence.pk}/enroll/",
                                  {"file": SimpleUploadedFile("people.csv", data)})
    assert response.status_code == 400, response.status_code
    assert re.search(r"line \d+", response.content.decode()), response.content[:500]
    assert not Contact.objects.exists()


def test_the_enroll_command_names_each_refused_row_or_refuses_the_file(tmp_path):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    for cells in (CELLS, WHOLE_FILE):
        before = list(Contact.objects.values_list("email", flat=True))
        data, hostile = hostile_csv(["email", "first_name", "company", "colour"], GOOD_ROWS, cells)
        path = tmp_path / "people.csv"
        path.write_bytes(data)
        out = StringIO()
        try:
            call_command("enroll", "--sequence", sequence.name, str(path), stdout=out, stderr=out)
        except CommandError as refused:
            text = str(refused) + out.getvalue()
            assert cells is WHOLE_FILE, text  # rows were enrolled: the refused ones are listed, and it ends well
        else:
            text = out.getvalue()
            assert cells is not WHOLE_FILE, "a file that cannot be read is refused as a whole"
        assert "Traceback" not in text
        if cells is WHOLE_FILE:
            assert list(Contact.objects.values_list("email", flat=True)) == before, text
            continue
        emails = set(Contact.objects.values_list("email", flat=True))
        for line, (column, label, email, _) in hostile.items():
            enrolled = email in emails
            named = re.search(rf"(?<![0-9])line {line}:", text) is not None
            assert enrolled != named, f"line {line} ({column}={label}): {text[-2000:]}"


@pytest.mark.parametrize("padding", [0, INLINE_IMPORT_ROWS], ids=["inline", "background"])
def test_the_suppression_import_names_each_refused_row_and_imports_the_rest(users, padding):
    client, found = _admin(users), Found(logged_in=True)
    good = [(f"ok{n}@example.com", "manual", "fine") for n in range(padding)] + [("ann@example.com", "", "a note")]
    data, hostile = hostile_csv(["value", "reason", "note"], good, CELLS)
    response = client.post("/suppressions/import/", {"file": SimpleUploadedFile("list.csv", data)})
    found.check(response, "import")
    assert response.status_code == 302, response.content[:500]
    _work()
    page = client.get(response["Location"])
    found.check(page, "the result page")
    assert not found.rows, found.report()
    key = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    kept = client.session.get(_result_key("suppression_import", key))
    result = kept["result"] if kept else Job.fetch(key, connection=django_rq.get_connection("default")).return_value()
    named = {e["line"] for e in result["errors"]}
    for line in sorted(named):
        assert f'<td data-label="Line">{line}</td>' in page.content.decode(), f"line {line} is not on the page"
    stored = set(Suppression.objects.values_list("value", flat=True))
    assert {g[0] for g in good} <= stored
    for line, (column, label, value, _) in hostile.items():
        assert (value in stored) != (line in named), f"line {line} ({column}={label}): stored {value in stored}"
    assert named, "a NUL in a cell is refused"


@pytest.mark.parametrize("label", sorted(WHOLE_FILE))
def test_a_suppression_import_the_csv_module_or_utf8_cannot_read_is_refused_whole(users, label):
    data, _ = hostile_csv(["value", "note"], [("ann@example.com", "ok")], {label: WHOLE_FILE[label]})
    response = _admin(users).post("/suppressions/import/", {"file": SimpleUploadedFile("list.csv", data)})
    assert response.status_code == 400, response.status_code
    assert not Suppression.objects.exists()


# --- load_sequences -------------------------------------------------------------------------------------------

# TOML values for every scalar key of the example file, one at a time.
TOML_VALUES = {
    "nul": '"a\\u0000b"',
    "surrogate": '"a\\ud800b"',  # not valid TOML: a lone surrogate has no escape
    "huge": str(10**30),
    "huge float": "1e400",
    "nan": "nan",
    "superscript": '"²"',
    "negative": "-1",
    "no such row": "987654",
    "oversize": '"' + "x" * 1_000_000 + '"',
    "nested arrays": "[" * 5000 + "]" * 5000,
    "nested arrays (100)": "[" * 100 + "]" * 100,
    "a table": "{ a = 1 }",
    "a date": "2026-01-01T00:00:00Z",
}
SCALAR = re.compile(r'\b([a-z_]+) = ("[^"]*"|-?\d+|true|false)')


def _state() -> list:
    return [list(model.objects.order_by("pk").values()) for model in (Mailbox, Sequence, Step)]


def test_load_sequences_refuses_each_hostile_value_in_words_or_takes_it_and_never_shows_a_traceback(tmp_path):
    keys = list(SCALAR.finditer(GOOD))
    assert len(keys) > 15, [m.group(1) for m in keys]
    failures = []
    for match, (label, value) in [(m, item) for m in keys for item in TOML_VALUES.items()]:
        text = GOOD[:match.start(2)] + value + GOOD[match.end(2):]
        before, out = _state(), StringIO()
        try:
            call_command("load_sequences", write(tmp_path, "hostile.toml", text), stdout=out, stderr=out)
        except CommandError as exc:
            words = str(exc)
            if not ("nothing was changed" in words or "is not valid TOML" in words) or _state() != before:
                failures.append(f"{match.group(1)}={label}: refused without saying nothing changed, or changed")
        except Exception as exc:  # noqa: BLE001 - the finding: anything but a CommandError is a traceback
            failures.append(f"{match.group(1)}={label}: {type(exc).__name__}: {str(exc)[:200]}")
        if "Traceback" in out.getvalue():
            failures.append(f"{match.group(1)}={label}: printed a traceback")
    assert not failures, "\n".join(failures)
