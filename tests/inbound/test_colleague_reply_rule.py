"""Rule `quoted_text` on its own (inbound.classify.quoted): no database, no network."""

from __future__ import annotations

from email import message_from_bytes

from inbound.classify.quoted import Sent, decide, evidence_for, full_text, organisational_domain, reply_subject
from inbound.ingest.colleague import company_domains

OURS = ("Hi {name},\n\nI noticed {company} is hiring engineers in Berlin this spring. We help teams cut their "
        "onboarding time in half with a short weekly programme run by senior engineers.\n\nSam")


def sent(key: int, person: str, name: str = "Ada", company: str = "Acme", subject: str = "Onboarding at Acme"):
    return Sent(key=key, person=person, subject=subject, body=OURS.format(name=name, company=company))


def test_the_company_of_an_address_is_its_organisational_domain_never_a_free_mail_one():
    assert organisational_domain("eu.sales.acme.com") == "acme.com"
    assert organisational_domain("mail.acme.co.uk") == "acme.co.uk"
    assert company_domains("bo@eu.acme.co.uk") == ["eu.acme.co.uk", "acme.co.uk"]
    assert company_domains("ann@gmail.com") == [] and company_domains("ann@mail.yahoo.co.uk") == []


def test_a_reply_subject_needs_a_reply_or_forward_prefix():
    assert reply_subject("AW: RE:  Onboarding at  ACME") == "onboarding at acme"
    assert reply_subject("Onboarding at Acme") == ""


def test_an_outlook_quote_without_markers_names_the_one_person_it_answers():
    body = OURS.format(name="Bob", company="Acme").replace("\n", "\r\n")
    text = ("We are not interested.\r\n\r\nFrom: Sam <sender0@outreach.test>\r\nSent: Monday\r\n"
            f"To: Bob <bob@acme.test>\r\nSubject: Onboarding at Acme\r\n\r\n{body}")
    verdict = decide(evidence_for("RE: Onboarding at Acme", text, [sent(1, "ada@acme.test"),
                                                                     sent(2, "bob@acme.test", name="Bob")]))
    assert verdict.stop is not None and verdict.stop.key == 2 and verdict.stop.quotes
    assert verdict.why.startswith("it quotes 100% of our message to bob@acme.test")


def test_the_same_text_to_two_people_or_a_subject_alone_is_only_probable():
    text = "No thanks.\n\n> " + OURS.format(name="team", company="Acme").replace("\n", "\n> ")
    both = decide(evidence_for("Re: Onboarding at Acme", text, [sent(1, "ada@acme.test", name="team"),
                                                                 sent(2, "bob@acme.test", name="team")]))
    assert both.stop is None and {e.key for e in both.probable} == {1, 2}
    alone = decide(evidence_for("Re: Onboarding at Acme", "Please take us off your list.", [sent(1, "ada@acme.test")]))
    assert alone.stop is None and [e.key for e in alone.probable] == [1] and "quoting none" in alone.why
    nothing = decide(evidence_for("Lunch on Friday?", "See you there.", [sent(1, "ada@acme.test")]))
    assert nothing.stop is None and not nothing.probable


def test_an_html_only_reply_keeps_its_quoted_history_for_the_rule():
    raw = (b"Content-Type: text/html; charset=utf-8\r\n\r\n<p>Not for us.</p><blockquote>Hi Ada,<br>I noticed "
           b"Acme is hiring engineers in Berlin this spring.</blockquote>")
    assert "I noticed Acme is hiring engineers in Berlin" in full_text(message_from_bytes(raw))
