"""`load_sequences` answers a hostile file with every problem in words and changes nothing; never a traceback
(issue 34, item 7)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from mailboxes.models import Mailbox
from sequences.models import Sequence
from tests.sequences.test_commands import GOOD, write

# Each was a traceback (a database error at the write) before the file was checked for it.
CASES = {
    "a NUL in a display name": ('display_name = "Acme Sales"', 'display_name = "Acme\\u0000Sales"'),
    "a NUL in a sequence name": ('name = "Intro"', 'name = "In\\u0000tro"'),
    "a NUL in a body": ('body = "Following up"', 'body = "Following\\u0000up"'),
    "a NUL in a subject": ('subject = "Hi {{ first_name }}"', 'subject = "Hi\\u0000"'),
    "a long sequence name": ('name = "Intro"', 'name = "' + "x" * 5000 + '"'),
    "a long display name": ('display_name = "Acme Sales"', 'display_name = "' + "x" * 5000 + '"'),
    "a long time zone": ('timezone = "Europe/Berlin"', 'timezone = "' + "x" * 5000 + '"'),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_file_is_refused_in_words_and_changes_nothing(tmp_path, case):
    old, new = CASES[case]
    assert old in GOOD
    out = StringIO()
    with pytest.raises(CommandError) as excinfo:
        call_command("load_sequences", write(tmp_path, "hostile.toml", GOOD.replace(old, new, 1)), stdout=out,
                     stderr=out)
    assert "nothing was changed" in str(excinfo.value) or "is not valid TOML" in str(excinfo.value), excinfo.value
    assert "Traceback" not in out.getvalue()
    assert not Mailbox.objects.exists() and not Sequence.objects.exists()
