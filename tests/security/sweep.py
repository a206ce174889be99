"""The hostile values of the bad-input sweep, the forms read from a page, and the record of what answered 5xx.

Each surface (operator pages, API, webhooks, imports) is driven with the same values: a NUL, a lone surrogate
(raw bytes that are not UTF-8 in a form or a URL, a `\\ud800` escape in JSON), integers past every column
(10**30), a digit that is not ASCII ("²"), a negative number, a value of 1 MB, nested arrays past any
recursion limit, bodies that are not JSON or not of the announced type.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from html.parser import HTMLParser

from django.db import connection

# Form fields and query parameters: bytes, as a client could send them.
FORM_VALUES: dict[str, bytes] = {
    "nul": b"a\x00b",
    "surrogate": b"\xed\xa0\x80",  # U+D800 as UTF-8 would write it: not UTF-8
    "huge": str(10**30).encode(),
    "superscript": "²".encode(),
    "negative": b"-1",
    "no such row": b"987654",
    "long": "%é".encode() * 5_000,  # the longest query value a page takes (10,000 characters), LIKE-escaped longer
    "oversize": b"x" * 1_000_000,
}
# A choice among words (a select, radio or checkbox whose values are no numbers) is checked against its choices:
# the values that are numbers in other ways add nothing there.
WORD_CHOICE_VALUES = ("nul", "surrogate", "long", "oversize")
# Fields no view reads (the CSRF middleware checks its token before any view, and the test client skips it).
NOT_READ = {"csrfmiddlewaretoken"}
# JSON values (json.dumps writes a lone surrogate as the escape \ud800, as a hostile sender would).
JSON_VALUES: dict[str, object] = {
    "nul": "a\x00b",
    "surrogate": "a\ud800b",
    "huge": 10**30,
    "huge-text": str(10**30),
    "superscript": "²",
    "negative": -1,
    "no such row": 987654,
    "oversize": "x" * 1_000_000,
    "object": {"a": "b"},
}
DEPTH = 100_000
# Bodies that are not what the endpoint reads: (name, content type, body).
BAD_BODIES: list[tuple[str, str, bytes]] = [
    ("invalid JSON", "application/json", b"{not json"),
    ("not UTF-8", "application/json", b'{"a": "\xff\xfe"}'),
    ("nested arrays", "application/json", b"[" * DEPTH + b"]" * DEPTH),
    ("nested objects", "application/json", b'{"a":' * DEPTH + b"1" + b"}" * DEPTH),
    ("huge number", "application/json", b"1" + b"0" * 5000),
    ("infinity", "application/json", b'{"a": 1e400}'),
    ("NUL and surrogate in keys", "application/json", b'{"\\u0000": 1, "\\ud800": 2}'),
    ("an array", "application/json", b"[1, 2]"),
    ("a string", "application/json", b'"text"'),
    ("form data", "application/x-www-form-urlencoded", b"a=%00&b=%ED%A0%80"),
    ("plain text", "text/plain", b"{}"),
    ("broken multipart", "multipart/form-data; boundary=zz", b"--zz\r\nnonsense"),
    ("multipart without boundary", "multipart/form-data", b"--zz\r\n"),
]


# The whole sweep runs on PostgreSQL, whose columns refuse what SQLite stores: a NUL, a value longer than its
# column. SQLite refuses in its own way an integer past 64 bits (the sqlite3 module cannot bind it; PostgreSQL
# compares it as a numeric) and a lone surrogate (the sqlite3 module's own encoding error), so the SQLite pass
# sends those values only. Bodies of the wrong shape and formsets' form counts are read by Python before any
# database, and are sent on PostgreSQL's pass only.
SQLITE_REFUSES_ITS_WAY = ("huge", "huge-text", "surrogate")


def full_sweep() -> bool:
    return connection.vendor != "sqlite"


def hostile(values: dict) -> dict:
    """The hostile values this run's database is sent: all of them, or on SQLite those it refuses its own way."""
    return values if full_sweep() else {k: v for k, v in values.items() if k in SQLITE_REFUSES_ITS_WAY}


def bad_bodies(bodies: list) -> list:
    """Bodies a parser trips on: on PostgreSQL's pass (no database reads them)."""
    return bodies if full_sweep() else []


def form_body(data: dict[str, bytes | str]) -> bytes:
    """application/x-www-form-urlencoded, byte values kept as they are (percent-encoded)."""
    return urllib.parse.urlencode([(k, v) for k, v in data.items()], quote_via=urllib.parse.quote).encode()


def query(name: str, value: bytes) -> str:
    return f"{urllib.parse.quote(name)}={urllib.parse.quote(value)}"


@dataclass
class Form:
    method: str
    action: str
    fields: dict[str, str] = field(default_factory=dict)  # name -> the page's value
    files: list[str] = field(default_factory=list)
    choices: dict[str, set[str]] = field(default_factory=dict)  # select, radio, checkbox: name -> the values offered

    def key(self) -> tuple:
        return self.method, self.action.split("?")[0], tuple(sorted(self.fields))


class _FormReader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "a" and "?" in a.get("href", "") and not a["href"].startswith(("http:", "https:", "//")):
            # A link with a query string: its parameters are a form's fields too (?show=failed&step=1).
            path, _, query_string = a["href"].partition("?")
            self.forms.append(Form(method="get", action=path or "?", fields=dict(
                urllib.parse.parse_qsl(query_string.split("#")[0], keep_blank_values=True))))
            return
        if tag == "form":
            self._form = Form(method=(a.get("method") or "get").lower(), action=a.get("action", ""))
            self.forms.append(self._form)
        form = self._form
        if form is None or "disabled" in a:
            return
        name = a.get("name", "")
        if tag == "input" and name:
            kind = a.get("type", "text").lower()
            if kind == "file":
                form.files.append(name)
            elif kind in ("checkbox", "radio"):
                form.choices.setdefault(name, set()).add(a.get("value", "on"))
                if "checked" in a or name not in form.fields:
                    form.fields[name] = a.get("value", "on")
            elif kind not in ("submit", "image", "reset", "button"):
                form.fields[name] = a.get("value", "")
        elif tag == "button" and name and a.get("type", "submit") == "submit":
            form.fields.setdefault(name, a.get("value", ""))
        elif tag == "select" and name:
            self._select = name
            form.fields.setdefault(name, "")
        elif tag == "option" and self._select is not None:
            form.choices.setdefault(self._select, set()).add(a.get("value", ""))
            if "selected" in a or not form.fields.get(self._select):
                form.fields[self._select] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            form.fields[name] = ""

    def handle_data(self, data):
        if self._textarea is not None and self._form is not None:
            self._form.fields[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def forms_of(html: str, page_url: str) -> list[Form]:
    """The page's forms, each action made absolute (a form without one posts to the page)."""
    reader = _FormReader()
    reader.feed(html)
    for form in reader.forms:
        form.action = urllib.parse.urljoin(page_url, form.action or page_url).removeprefix("http://testserver")
    return reader.forms


_PARAM = re.compile(r"""\b(GET|POST|data|params)\s*(?:\.get(?:list)?\(|\[)\s*["']([\w-]+)["']""")
_WHERE = {"GET": ("get",), "POST": ("post",), "data": ("get", "post"), "params": ("get", "post")}


def names_read(source: str) -> set[tuple[str, str]]:
    """(method, name) of the request parameters a source reads by name: request.GET.get("q") is ("get", "q"),
    request.POST["value"] ("post", "value"); a `data` or `params` that may be either is both."""
    return {(method, name) for where, name in _PARAM.findall(source) for method in _WHERE[where]}


@dataclass
class Found:
    """The 5xx answers of a sweep: what was sent, what came back, and the exception behind it."""

    rows: list[str] = field(default_factory=list)
    sent: int = 0
    logged_in: bool = False  # a redirect to the login page is a sweep that lost its session: it counts too

    def check(self, response, what: str) -> None:
        self.sent += 1
        if self.logged_in and response.get("Location", "").startswith(("/login/", "/admin/login/")):
            self.rows.append(f"{response.status_code} {what}: sent to the login page; the sweep lost its session")
        if response.status_code >= 500:
            exc = getattr(response, "exc_info", None)
            cause = f"{exc[0].__name__}: {str(exc[1])[:160]}" if exc else response.content[:160]
            self.rows.append(f"{response.status_code} {what}: {cause}")

    def report(self) -> str:
        return f"{len(self.rows)} of {self.sent} requests answered 5xx:\n" + "\n".join(self.rows[:80])
