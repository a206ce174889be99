"""The return date an out-of-office answer states: English, German, French and Spanish forms, table-driven."""

from __future__ import annotations

from datetime import date

import pytest

from inbound.classify.return_date import return_date

RECEIVED = date(2026, 12, 1)  # a Tuesday

CASES = [
    # English
    ("I am out of the office and back on 12 January.", date(2027, 1, 12)),
    ("I'm away, returning Monday. Thanks for your patience", date(2026, 12, 7)),
    ("Back on January 12th, 2027.", date(2027, 1, 12)),
    ("I will return on 2026-12-14.", date(2026, 12, 14)),
    ("I'm away until Monday, 7 December. For urgent matters call Bob.", date(2026, 12, 7)),
    ("Out of office until Dec 18", date(2026, 12, 18)),
    ("I am on vacation until 3rd of January", date(2027, 1, 3)),
    ("I'll be back tomorrow.", date(2026, 12, 2)),
    ("back on Tuesday", date(2026, 12, 8)),  # received on a Tuesday: the next one
    ("I am out of the office. I will be back in the office on 30 November.", date(2026, 11, 30)),  # last week
    # German
    ("Ich bin bis zum 5. März nicht im Büro.", date(2027, 3, 5)),
    ("Ich bin bis 05.03.2027 im Urlaub.", date(2027, 3, 5)),
    ("Ich bin bis einschließlich 10. Dezember abwesend.", date(2026, 12, 10)),
    ("Ab dem 4. Januar bin ich wieder erreichbar.", date(2027, 1, 4)),
    ("Ich bin ab Montag wieder im Büro.", date(2026, 12, 7)),
    ("Zurück am 15.12.", date(2026, 12, 15)),
    # French
    ("Je suis absent, de retour le 3 février.", date(2027, 2, 3)),
    ("Je serai absente jusqu'au 1er mars 2027.", date(2027, 3, 1)),
    ("Je serai de retour lundi.", date(2026, 12, 7)),
    ("Je suis en congés jusqu’à le 20 décembre", date(2026, 12, 20)),
    # Spanish
    ("Estoy fuera de la oficina, volveré el 10 de enero.", date(2027, 1, 10)),
    ("Estaré de vacaciones hasta el 15 de diciembre de 2026.", date(2026, 12, 15)),
    ("Regreso el lunes.", date(2026, 12, 7)),
    ("Estoy fuera hasta el 8/1/2027", date(2027, 1, 8)),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_a_stated_return_date_is_parsed(text, expected):
    found = return_date(text, received=RECEIVED)
    assert found is not None, text
    assert found.date == expected


@pytest.mark.parametrize(
    "text",
    [
        "I am out of the office with limited access to email.",
        "I'll get back to you soon.",
        "Thanks for your message. Regards, Ada",
        "I'm out of office until 31 February.",  # not a date
        "Ich bin im Urlaub.",
        "",
    ],
)
def test_no_date_is_none(text):
    assert return_date(text, received=RECEIVED) is None


def test_the_sentence_it_came_from_is_kept():
    text = "Thank you for your email.\nI am currently on annual leave, back on 12 January. For urgent matters, call us."
    found = return_date(text, received=RECEIVED)
    assert found.sentence == "I am currently on annual leave, back on 12 January."


def test_the_first_stated_date_wins_and_the_sentence_keeps_a_german_ordinal():
    found = return_date("Ich bin bis zum 5. März nicht da. Ab dem 6. März wieder.", received=RECEIVED)
    assert (found.date, found.sentence) == (date(2027, 3, 5), "Ich bin bis zum 5. März nicht da.")
