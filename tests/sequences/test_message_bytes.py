"""A prepared message's bytes: the short path for plain messages writes exactly what the email package writes.

`sequences.messages.plain_message_bytes` writes a plain message (ASCII, nothing to fold or quote) directly;
`email_package_bytes` writes every message. Over generated messages, plain and otherwise, the short path
either declines or gives the same bytes; and it does take the common message.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sequences.messages import PrepareError, address_header, email_package_bytes, plain_message_bytes

ATEXT = string.ascii_letters + string.digits + "!#$%&'*+-/=?^_`{|}~"
# Characters that make the email package quote, encode or fold: specials, spaces, controls, non-ASCII.
AWKWARD = ' "(),.:;<>@[\\]\t\r\n\x00\x7féü€日=?'

word = st.text(alphabet=ATEXT, min_size=1, max_size=12)
plain_text = st.text(alphabet=string.ascii_letters + string.digits + " ,.!?'-:%", max_size=120)
# Each field plain, as most messages are; the test then makes one field awkward (or none).
PLAIN = {
    "sender_name": st.lists(word, min_size=1, max_size=4).map(" ".join),
    "sender_local": st.lists(word, min_size=1, max_size=3).map(".".join),
    "to_name": st.one_of(st.just(""), st.lists(word, min_size=1, max_size=4).map(" ".join)),
    "to_local": st.lists(word, min_size=1, max_size=3).map(".".join),
    "subject": plain_text,
    "body": st.lists(plain_text, max_size=8).map("\n".join),
}
# What the email package's parser reads as an RFC 2047 encoded word (and writes back decoded).
encoded_word = st.from_regex(r"[a-z ]{0,8}=\?(utf-8|iso-8859-1)\?[qQbB]\?[a-zA-Z0-9]{1,8}\?=[a-z ]{0,8}",
                             fullmatch=True)
AWKWARD_FIELD = {
    "sender_name": st.one_of(st.text(alphabet=ATEXT + AWKWARD, max_size=30), encoded_word),
    "sender_local": st.text(alphabet=ATEXT + '."', min_size=1, max_size=20),
    "to_name": st.one_of(st.text(alphabet=ATEXT + AWKWARD, max_size=30), encoded_word),
    "to_local": st.text(alphabet=ATEXT + '."', min_size=1, max_size=20),
    "subject": st.one_of(st.text(alphabet=string.printable + AWKWARD, max_size=120), st.text(max_size=60),
                         st.integers(min_value=980, max_value=1000).map(lambda n: "s" * n), encoded_word),
    "body": st.one_of(
        st.lists(st.one_of(plain_text, st.integers(min_value=990, max_value=1010).map(lambda n: "x" * n)),
                 min_size=1, max_size=6).map("\n".join),
        st.lists(st.text(alphabet=string.printable + AWKWARD, max_size=80), max_size=6).map("\r\n".join),
        st.text(max_size=60)),
}
domain = st.lists(st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=10),
                  min_size=2, max_size=3).map(".".join)


@st.composite
def messages(draw):
    awkward = draw(st.sampled_from([None, *AWKWARD_FIELD]))
    fields = {name: draw(AWKWARD_FIELD[name] if name == awkward else strategy) for name, strategy in PLAIN.items()}
    return fields | {"to_domain": draw(domain), "thread": draw(st.sampled_from([0, 1, 3, 40]))}


def headers_of(sender_name, sender_local, to_name, to_local, to_domain, subject, thread):
    try:
        sender = address_header(sender_name, f"{sender_local}@outreach.example")
        to = address_header(to_name, f"{to_local}@{to_domain}")
    except PrepareError:
        assume(False)
    headers = [("From", sender), ("To", to), ("Date", "Wed, 02 Dec 2026 06:28:38 +0000"),
               ("Message-ID", "<bench.p.0.2@outreach.test>")]
    if thread:
        headers += [("In-Reply-To", "<bench.p.0.1@outreach.test>"),
                    ("References", " ".join(f"<bench.p.0.{i}@outreach.test>" for i in range(thread)))]
    return headers + [
        ("Subject", subject),
        ("List-Unsubscribe", "<http://127.0.0.1:8000/u/eyJqIjo2fQ:1xYdpW:oeG4Xp/>, "
                             "<mailto:sales@outreach.example?subject=unsubscribe>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
        ("X-Outreach-Job", "6"),
    ]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(message=messages())
def test_the_short_path_writes_what_the_email_package_writes_or_declines(message):
    body = message.pop("body")
    headers = headers_of(**message)
    short = plain_message_bytes(headers, body)
    try:
        full = email_package_bytes(headers, body, email="x")
    except PrepareError:
        assert short is None
        return
    if short is not None:
        assert short == full


@pytest.mark.parametrize(("to_name", "subject", "body"), [
    ("Ada Lovelace", "Re: Quick question, Ada", "Hi Ada,\n\nI noticed Acme is hiring.\n\nBest,\nSam"),
    ("", "Hello", "One line, no newline at the end"),
    ("O'Brien", "50% more replies?", "Line one\r\nLine two\r\n"),
])
def test_the_short_path_takes_the_common_message(to_name, subject, body):
    headers = headers_of("Sam from Outreach", "sales", to_name, "ada", "example.com", subject, 1)
    short = plain_message_bytes(headers, body)
    assert short is not None
    assert short == email_package_bytes(headers, body, email="ada@example.com")


@pytest.mark.parametrize(("to_name", "subject", "body"), [
    ("Dr. Ada", "Hello", "Hi"),  # a name the email package quotes
    ("Zoë", "Hello", "Hi"),  # a name it encodes
    ("Ada", "Grüße", "Hi"),
    ("Ada", "Hello", "Grüße"),  # an 8-bit body
    ("Ada", "Hello", "x" * 999),  # a line longer than SMTP allows: quoted-printable
    ("Ada", "=?utf-8?q?hi?=", "Hi"),  # what would read as an encoded word
])
def test_the_short_path_declines_what_it_does_not_write_as_the_email_package(to_name, subject, body):
    headers = headers_of("Sam", "sales", to_name, "ada", "example.com", subject, 0)
    assert plain_message_bytes(headers, body) is None
