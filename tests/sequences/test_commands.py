"""The command line: load_sequences, enroll, dispatch, suppress/unsuppress, pause/resume, timeline."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from mailboxes.models import Mailbox
from sequences.models import Enrollment, SendJob, Sequence, Step, Suppression

pytestmark = pytest.mark.django_db(transaction=True)

GOOD = """
[[mailbox]]
name = "sales"
address = "sales@acme.test"
display_name = "Acme Sales"
smtp = { host = "127.0.0.1", port = 2525, username = "u", password_env = "OUTREACH_SECRET_SALES_SMTP", \
security = "none" }
daily_cap = 50
window = { days = "mon,tue,wed,thu,fri", start = "09:00", end = "17:00", timezone = "Europe/Berlin" }
follow_ups_without_reply_view = true

[[sequence]]
name = "Intro"
mailbox = "sales"

[[sequence.step]]
subject = "Hi {{ first_name }}"
body = "Hello {{ first_name }} at {{ company }}"
wait = "0s"

[[sequence.step]]
body = "Following up"
wait = "3d"
thread = true
"""


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_load_sequences_creates_then_updates_by_name(tmp_path):
    assert "2 created, 0 updated" in run("load_sequences", write(tmp_path, "a.toml", GOOD))
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.smtp_password_env, mailbox.daily_cap, mailbox.window_timezone) == (
        "OUTREACH_SECRET_SALES_SMTP", 50, "Europe/Berlin")
    steps = list(Step.objects.filter(sequence__name="Intro").values_list("position", "wait_seconds", "thread"))
    assert steps == [(1, 0, False), (2, 3 * 86400, True)]
    out = run("load_sequences", write(tmp_path, "b.toml", GOOD.replace("3d", "2d")))
    assert "0 created, 1 updated, 1 unchanged" in out
    assert "sequence Intro step 2: wait_seconds 259200 -> 172800" in out
    assert Step.objects.get(sequence__name="Intro", position=2).wait_seconds == 2 * 86400


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("port = 2525", 'port = "x"'), "mailbox[0].smtp.port (line 6): must be int"),
        (('wait = "3d"', 'wait = "soon"'), "sequence[0].step[1].wait (line 22): 'soon' is not a duration"),
        (('mailbox = "sales"', 'mailbox = "nope"'), "sequence[0].mailbox (line 13): no mailbox named 'nope'"),
        (('body = "Following up"', 'body = "{% if %}"'), "sequence[0].step[1].body (line 21): template error"),
        (('days = "mon,', 'days = "mon,funday,'), "mailbox[0].window.days (line 8): unknown weekday 'fun'"),
        (("password_env = ", "password = "), "passwords are never stored"),
        (("[[sequence]]", "[[sequence]\n"), "not valid TOML"),
        (("daily_cap = 50", "daily_cap = 50\npaused = true"), "mailbox[0].paused (line 8): not a configuration key"),
    ],
)
def test_a_bad_file_names_the_key_and_changes_nothing(tmp_path, change, expected):
    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "bad.toml", GOOD.replace(*change)))
    assert expected in str(excinfo.value)
    assert "nothing was changed" in str(excinfo.value)
    assert not Mailbox.objects.exists() and not Sequence.objects.exists()


def test_enroll_reports_bad_rows_with_line_numbers_and_enrolls_the_good(tmp_path):
    run("load_sequences", write(tmp_path, "a.toml", GOOD))
    call_command("suppress", "blocked@example.com", reason="manual", note="asked", stdout=StringIO())
    csv_path = write(tmp_path, "c.csv", (
        "email,first_name,company,plan\n"
        "ada@example.com,Ada,Acme,gold\n"
        "not-an-address,Bob,X,\n"
        "ADA@example.com,Ada,Acme,gold\n"
        "blocked@example.com,Bo,Y,\n"
        "grace@example.com,Grace,Navy,silver\n"
    ))
    out = StringIO()
    call_command("enroll", "--sequence", "Intro", csv_path, stdout=out, stderr=out)  # rows enrolled: no error
    out = out.getvalue()
    assert "line 3: 'not-an-address' is not a valid address" in out
    assert "line 4: ada@example.com duplicates line 2" in out
    assert "line 5: blocked@example.com is suppressed" in out
    assert "2 enrolled, 2 rejected, 0 already enrolled, 1 suppressed (5 rows)" in out
    enrollment = Enrollment.objects.get(contact__email="ada@example.com")
    assert enrollment.contact.fields == {"plan": "gold"}
    assert SendJob.objects.filter(state="scheduled").count() == 2


def test_enroll_without_an_email_column_fails(tmp_path):
    run("load_sequences", write(tmp_path, "a.toml", GOOD))
    with pytest.raises(CommandError, match="`email` column"):
        run("enroll", "--sequence", "Intro", write(tmp_path, "c.csv", "mail,name\nx@y.z,X\n"))
    with pytest.raises(CommandError, match="no sequence named"):
        run("enroll", "--sequence", "Nope", write(tmp_path, "d.csv", "email\nx@y.z\n"))


def test_pause_resume_suppress_and_timeline(tmp_path):
    run("load_sequences", write(tmp_path, "a.toml", GOOD))
    run("enroll", "--sequence", "Intro",
        write(tmp_path, "c.csv", "email,first_name,company\nada@example.com,Ada,Acme\n"))
    out = run("pause", "sequence", "Intro")
    assert "1 job canceled — never sent; 0 jobs in flight" in out
    assert "0 jobs handed off earlier (submitted before this stop) — cannot recall" in out
    assert "already paused" in run("pause", "sequence", "Intro")
    assert "1 jobs scheduled" in run("resume", "sequence", "Intro")
    assert "1 enrollment stopped or paused; 1 job canceled — never sent" in run(
        "suppress", "@example.com", "--reason", "manual", "--note", "whole domain")
    with pytest.raises(CommandError, match="is suppressed"):
        run("resume", "enrollment", "ada@example.com", "--sequence", "Intro")
    assert "lifted" in run("unsuppress", "@example.com", "--note", "mistake")
    assert list(Suppression.objects.order_by("id").values_list("action", flat=True)) == ["add", "lift"]
    with pytest.raises(CommandError, match="is not suppressed"):
        run("unsuppress", "@example.com", "--note", "again")
    resumed = run("resume", "enrollment", "ada@example.com", "--sequence", "Intro")
    assert "enrollment ada@example.com is active" in resumed

    lines = run("timeline", "ada@example.com", "--json").strip().splitlines()
    events = [json.loads(line) for line in lines]
    kinds = [e["kind"] for e in events]
    assert kinds[:2] == ["enrolled", "job_scheduled"]
    assert "enrollment_stopped" in kinds and "suppression_added" in kinds and kinds[-1] == "job_scheduled"
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    text = run("timeline", "ada@example.com")
    assert "job_canceled" in text and "reason=sequence_paused" in text
    with pytest.raises(CommandError, match="no events"):
        run("timeline", "nobody@elsewhere.test")


def test_pause_names_what_it_cannot_find():
    with pytest.raises(CommandError, match="no sequence 'Ghost'"):
        run("pause", "sequence", "Ghost")
    with pytest.raises(CommandError, match="needs --sequence"):
        run("pause", "enrollment", "a@b.c")


def test_suppress_says_what_had_already_been_submitted(mailbox, smtp_server):
    """Mail that already left is reported as such, never folded into "stopped"."""
    from sequences.pipeline import send_job_process
    from sequences.services.sending import dispatch_due
    from tests.factories import enroll, make_sequence

    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "grace@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w").state == SendJob.State.SUBMITTED

    out = run("suppress", "grace@example.com", "--reason", "manual", "--note", "asked by phone")

    assert "1 enrollment stopped or paused; 1 job canceled — never sent; " in out
    assert "1 job handed off earlier (submitted before this stop) — cannot recall." in out
    assert len(smtp_server.message_ids()) == 1
    assert Enrollment.objects.get(pk=enrollment.pk).status == Enrollment.Status.STOPPED
