"""`manage.py load_sequences`: only the keys a file names change, every change is listed, every problem at once."""

from __future__ import annotations

import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from mailboxes.models import Mailbox
from tests.sequences.test_commands import GOOD, run, write

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_existing_mailbox_changes_only_in_the_keys_the_file_names(tmp_path):
    run("load_sequences", write(tmp_path, "a.toml", GOOD))
    partial = '[[mailbox]]\nname = "sales"\naddress = "sales@acme.test"\nsmtp = { port = 2526 }\n'
    out = run("load_sequences", write(tmp_path, "b.toml", partial))
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.display_name, mailbox.daily_cap, mailbox.smtp_host, mailbox.smtp_port) == (
        "Acme Sales", 50, "127.0.0.1", 2526)
    assert (mailbox.window_timezone, mailbox.smtp_password_env) == ("Europe/Berlin", "OUTREACH_SECRET_SALES_SMTP")
    assert "updated mailbox sales" in out and "mailbox sales: smtp_port 2525 -> 2526" in out
    assert "display_name" not in out


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ('timezone = "Europe/Berlin"', 'timezone = "Mars/Base"'),
        ("port = 2525", "port = 70000"),
        ("daily_cap = 50", "daily_cap = -1"),
        ('end = "17:00"', 'end = "08:00"'),
    ],
)
def test_values_out_of_range_are_errors(tmp_path, change, expected):
    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "bad.toml", GOOD.replace(change, expected)))
    text = str(excinfo.value)
    assert "nothing was changed" in text
    assert any(s in text for s in ("unknown time zone 'Mars/Base'", "70000 is not a port", "must be 0 or more",
                                   "08:00 is not after start 09:00"))
    assert not Mailbox.objects.exists()


def test_an_unknown_esp_is_an_error_and_an_unset_secret_variable_a_warning(tmp_path, monkeypatch):
    monkeypatch.delenv("OUTREACH_SECRET_SALES_SMTP", raising=False)
    text = GOOD.replace("daily_cap = 50", 'daily_cap = 50\ntransport = { kind = "anymail", esp = "nosuchesp" }')
    with pytest.raises(CommandError, match=r"mailbox\[0\].transport.esp \(line 8\): unknown ESP 'nosuchesp'"):
        run("load_sequences", write(tmp_path, "bad.toml", text))
    out, err = StringIO(), StringIO()
    call_command("load_sequences", write(tmp_path, "a.toml", GOOD), stdout=out, stderr=err)
    assert ("warning: mailbox[0].smtp.password_env (line 6): environment variable OUTREACH_SECRET_SALES_SMTP is not "
            "set") in err.getvalue()
    assert Mailbox.objects.filter(name="sales").exists()


def test_a_large_file_full_of_errors_reports_every_one_in_linear_time(tmp_path):
    block = ('[[mailbox]]\nname = "m{i}"\naddress = "m{i}@acme.test"\nsmtp = {{ port = 0 }}\n'
             'window = {{ timezone = "Mars/Base" }}\n\n')

    def load(n: int) -> tuple[float, str]:
        text = "".join(block.format(i=i) for i in range(n))
        started = time.monotonic()
        with pytest.raises(CommandError) as excinfo:
            run("load_sequences", write(tmp_path, f"big{n}.toml", text))
        return time.monotonic() - started, str(excinfo.value)

    small, _ = load(1000)
    large, message = load(10000)
    errors = message.splitlines()
    assert sum("is not a port" in e for e in errors) == 10000
    assert "mailbox[9999].smtp.port (line 59998): 0 is not a port (1-65535)" in message
    # Ten times the blocks: about ten times the work when linear, a hundred when quadratic. A ratio of two runs
    # on one machine, not a time: the machine's speed cancels out.
    assert large / small < 40, (small, large)


def test_a_sequence_with_follow_ups_needs_a_mailbox_that_reads_replies_or_says_it_does_not(tmp_path):
    blind = GOOD.replace("follow_ups_without_reply_view = true\n", "")
    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "blind.toml", blind))
    assert "mailbox 'sales' reads no replies (no [mailbox.imap])" in str(excinfo.value)
    assert not Mailbox.objects.exists()
    one_step = blind.split("[[sequence.step]]\nbody = \"Following up\"")[0]
    run("load_sequences", write(tmp_path, "one-step.toml", one_step))  # step 1 alone waits for no reply
    allowed = GOOD.replace("follow_ups_without_reply_view = true",
                           'follow_ups_without_reply_view = true\nreply_view_max_age = "15m"')
    out = run("load_sequences", write(tmp_path, "good.toml", allowed))
    assert "updated mailbox sales" in out
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.follow_ups_without_reply_view, mailbox.reply_view_max_age) == (True, 900)
