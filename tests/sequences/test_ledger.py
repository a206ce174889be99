"""The send ledger (sequences.ledger, manage.py ledger): what left, and what held each other message back and why.

Every scenario is made by the product itself: messages sent by the real pipeline to the test SMTP server
(aiosmtpd), replies recorded by ingestion, pauses and suppressions through their services.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from db.clock import db_now
from inbound.ingest.record import inbound_record
from inbound.ingest.view import folder_read_through
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.models import ImapCursor
from proving.harness import mails
from sequences.labels import stamp
from sequences.ledger import Outcome, send_ledger_rows
from sequences.models import SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.holds import ReturnStated, person_hold_for_auto_reply
from sequences.services.sending import dispatch_due
from sequences.services.stops import sequence_pause
from sequences.services.suppressions import suppression_add
from sequences.spreadsheet import FORMULA_START, unformula
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def send_due() -> list[SendJob]:
    """Dispatch what is due and send each message through the pipeline, as a worker does."""
    sent = []
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
        sent.append(SendJob.objects.select_related("enrollment__sequence").get(pk=job_id))
    return sent


def reply_to(job: SendJob, *, uid: int, received: datetime | None = None):
    raw = mails.reply(to_message_id=job.message_id, sender=job.enrollment.contact.email)
    fetched = mails.fetched(raw, uid=uid)
    if received is not None:
        fetched = FetchedMessage(uid=uid, internaldate=received, raw=raw, size=len(raw), flags=())
    return inbound_record(mailbox_id=job.enrollment.sequence.mailbox_id, folder="INBOX", uidvalidity=1,
                          fetched=fetched)


def ledger_json(*args: str) -> list[dict]:
    out = io.StringIO()
    call_command("ledger", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def ledger_csv(*args: str) -> list[list[str]]:
    out = io.StringIO()
    call_command("ledger", *args, "--format", "csv", stdout=out)
    return list(csv.reader(io.StringIO(out.getvalue())))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def test_a_person_who_replied_lists_the_follow_up_that_did_not_leave_with_the_reply_and_its_time(
        mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Q3 outreach"), "jane@acme.test")
    (first,) = send_due()
    reply_to(first, uid=1)

    rows = ledger_json("--contact", "Jane@Acme.test")

    assert [(r["step"], r["outcome"], r["reason"]) for r in rows] == [(1, "sent", ""), (2, "held back", "replied")]
    held = rows[1]
    stop = TimelineEvent.objects.get(enrollment=enrollment, kind=Event.ENROLLMENT_STOPPED)
    arrived = TimelineEvent.objects.get(kind=Event.INBOUND_RECEIVED, job=first)
    assert held["stop_at"] == iso(stop.at), "the reply's commit, by the database clock"
    assert held["reply_received_at"] == iso(datetime.fromisoformat(arrived.data["internaldate"]))
    follow_up = SendJob.objects.get(enrollment=enrollment, step__position=2)
    assert held["decided_at"] == iso(follow_up.canceled_at) and held["due_at"] == iso(follow_up.scheduled_at)
    assert held["why"].startswith("Canceled — never sent: the person replied")
    assert "jane@acme.test replied in sequence 'Q3 outreach' (mailbox" in held["why"]
    assert f"The reply reached the mailbox at {held['reply_received_at'][:10]}" in held["why"]
    assert (held["message_id"], held["handed_off_at"], held["server_reply"]) == ("", None, "")
    assert len(smtp_server.received) == 1, "only step 1 left"


def test_a_sent_message_shows_its_message_id_its_hand_off_time_and_the_servers_reply(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "ada@acme.test")
    (job,) = send_due()

    sent, waiting = send_ledger_rows(enrollment_id=enrollment.pk)

    assert (sent.outcome, sent.reason, sent.step) == (Outcome.SENT, "", 1)
    assert sent.message_id == job.message_id == smtp_server.received[0].message_id
    assert (sent.handed_off_at, sent.decided_at) == (job.submitted_at, job.authorized_at)
    assert sent.server_reply == job.smtp_reply and sent.server_reply
    assert sent.why == f"Submitted at {stamp(job.submitted_at)}"
    assert sent.replies_read == "no reply view needed: a first message to this person"
    assert (waiting.step, waiting.outcome, waiting.decided_at, waiting.message_id) == (2, Outcome.WAITING, None, "")
    assert waiting.why.startswith("Scheduled for ") and waiting.why.endswith("— not sent yet")


def test_a_paused_sequence_lists_each_held_step_as_paused_and_who_paused_it(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Spring")
    enroll(sequence, "ann@a.test")
    send_due()
    enroll(sequence, "bob@b.test")  # step 1 not sent yet when the sequence is paused
    sequence_pause(sequence_id=sequence.pk, actor="alice")

    header, *lines = ledger_csv("--sequence", "Spring")
    rows = [dict(zip(header, line, strict=True)) for line in lines]

    assert [(r["contact"], r["step"], r["outcome"], r["reason"], r["by"]) for r in rows] == [
        ("ann@a.test", "1", "sent", "", ""),
        ("ann@a.test", "2", "held back", "sequence_paused", "alice"),
        ("bob@b.test", "1", "held back", "sequence_paused", "alice"),
    ]
    pause = TimelineEvent.objects.get(kind=Event.SEQUENCE_PAUSED)
    for held in rows[1:]:
        assert f"The sequence Spring was paused by alice at {stamp(pause.at)}." in held["why"]
        assert held["stop_at"] == iso(pause.at), "the pause's commit, by the database clock"
        assert held["why"].startswith("Canceled — never sent: the sequence was paused (canceled at ")
        assert held["decided_at"] and not held["message_id"]
    assert len(smtp_server.received) == 1


def test_an_unsubscribe_names_the_suppression_ledger_entry_that_held_the_message_back(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "ada@acme.test")
    (first,) = send_due()
    entry, _ = suppression_add(value="ada@acme.test", reason="unsubscribe", source=f"unsubscribe-link:job {first.pk}")

    _, held = send_ledger_rows(contact_id=enrollment.contact_id)

    assert (held.outcome, held.reason, held.suppression_entry) == (Outcome.HELD_BACK, "unsubscribed", entry.pk)
    assert f"Suppression ledger entry #{entry.pk} (Unsubscribe, ada@acme.test, added " in held.why
    assert f"source unsubscribe-link:job {first.pk}" in held.why
    assert held.stop_at == TimelineEvent.objects.get(enrollment=enrollment, kind=Event.ENROLLMENT_STOPPED).at


def test_a_message_that_left_while_the_reply_was_being_committed_is_marked_crossed(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 0)), "ada@acme.test")
    (first,) = send_due()
    (follow_up_id,) = dispatch_due()
    gate = Gate("authorized")
    worker = Worker(lambda: send_job_process(job_id=follow_up_id, worker_id="w2"))
    worker.start()
    gate.wait()  # the follow-up passed the final check; the reply to step 1 is committed now
    reply_to(first, uid=1)
    gate.release()
    assert worker.outcome().state == S.SUBMITTED

    _, crossed = send_ledger_rows(enrollment_id=enrollment.pk)

    follow_up = SendJob.objects.get(pk=follow_up_id)
    assert (crossed.outcome, crossed.reason, crossed.message_id) == (Outcome.SENT, "crossed", follow_up.message_id)
    assert follow_up.authorized_at < crossed.stop_at < follow_up.submitted_at
    assert crossed.why.startswith("Crossed: the stop (the person replied) was committed at ")
    assert crossed.why.endswith("cannot recall.")
    assert len(smtp_server.received) == 2


def test_an_out_of_office_hold_says_until_when_and_in_the_persons_words(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "ada@acme.test")
    send_due()
    back = (db_now() + timedelta(days=5)).date()
    with transaction.atomic():
        person_hold_for_auto_reply(addresses=["ada@acme.test"], received=db_now(), source="inbound:77",
                                   found=ReturnStated(date=back, sentence=f"I am back on {back:%d %B}.",
                                                      quote=f"back on {back:%d %B}"))

    _, waiting = send_ledger_rows(enrollment_id=enrollment.pk)

    assert (waiting.outcome, waiting.reason) == (Outcome.WAITING, "out_of_office")
    until = datetime.combine(back + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    assert waiting.due_at == until
    assert f"On hold until {until:%a %-d %b} 00:00 UTC: out of office ('back on {back:%d %B}')." in waiting.why
    assert waiting.holds.endswith(f"On hold until {until:%a %-d %b} 00:00 UTC: out of office ('back on {back:%d %B}').")


def test_a_follow_up_held_for_a_blind_reply_view_says_so_and_keeps_the_hold_once_it_leaves(smtp_server):
    # An IMAP mailbox whose reply folder has never been read: its follow-ups wait for the reply view.
    mailbox = MailboxFactory(smtp_port=smtp_server.port, imap_host="127.0.0.1", imap_port=9,
                             follow_ups_without_reply_view=False)
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 0)), "ada@acme.test")
    send_due()
    (follow_up,) = dispatch_due()
    assert send_job_process(job_id=follow_up, worker_id="w1").state == "deferred"

    _, held = send_ledger_rows(enrollment_id=enrollment.pk)
    assert (held.outcome, held.reason) == (Outcome.WAITING, "reply_view")
    assert held.why.endswith("On hold: the mailbox could not read its replies (blind reply view), so the follow-up "
                             "waited (waiting to read replies: the reply folders have not all been read yet).")

    ImapCursor.objects.create(mailbox=mailbox, folder="INBOX")
    folder_read_through(mailbox_id=mailbox.pk, folder="INBOX", at=db_now())
    SendJob.objects.filter(pk=follow_up).update(scheduled_at=db_now())
    assert dispatch_due() == [follow_up]
    assert send_job_process(job_id=follow_up, worker_id="w2").state == S.SUBMITTED

    _, sent = send_ledger_rows(enrollment_id=enrollment.pk)
    hold = TimelineEvent.objects.get(job_id=follow_up, kind=Event.JOB_DEFERRED)
    assert (sent.outcome, sent.reason) == (Outcome.SENT, "")
    assert sent.holds.startswith(f"{stamp(hold.at)}: On hold: the mailbox could not read its replies")
    assert sent.replies_read.startswith("replies read up to ") and sent.replies_read.endswith("before the hand-off")


def test_a_date_range_files_each_message_under_the_moment_its_fate_was_decided(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "jane@acme.test")
    (first,) = send_due()
    reply_to(first, uid=1)
    held = SendJob.objects.get(enrollment=enrollment, step__position=2)
    assert first.authorized_at < held.canceled_at

    def steps(**kw) -> list[int]:
        return [row.step for row in send_ledger_rows(contact_id=enrollment.contact_id, **kw)]

    assert steps(since=held.canceled_at) == [2]
    assert steps(until=held.canceled_at) == [1]
    assert steps(since=first.authorized_at, until=held.canceled_at + timedelta(microseconds=1)) == [1, 2]
    today = db_now().date()
    assert [r["step"] for r in ledger_json("--since", f"{today}", "--until", f"{today}")] == [1, 2]
    assert ledger_json("--until", f"{today - timedelta(days=1)}") == []


def test_csv_cells_are_formula_safe_and_the_json_keeps_the_exact_text(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name='=HYPERLINK("http://evil.test","x")')
    enroll(sequence, "=1+1@acme.test")
    send_due()
    sequence_pause(sequence_id=sequence.pk, actor="@ops")

    header, *lines = ledger_csv("--contact", "=1+1@acme.test")

    assert header[:3] == ["contact", "sequence", "mailbox"] and len(lines) == 2
    for line in lines:
        for cell in line:
            assert not cell.startswith(FORMULA_START), cell
    rows = [dict(zip(header, line, strict=True)) for line in lines]
    assert rows[0]["contact"] == "'=1+1@acme.test" and unformula(rows[0]["contact"]) == "=1+1@acme.test"
    assert rows[0]["sequence"] == '\'=HYPERLINK("http://evil.test","x")'
    assert (rows[1]["by"], unformula(rows[1]["sequence"])) == ("'@ops", sequence.name)
    plain = ledger_json("--contact", "=1+1@acme.test")
    assert (plain[0]["contact"], plain[0]["sequence"], plain[1]["by"]) == ("=1+1@acme.test", sequence.name, "@ops")


def test_the_command_writes_a_file_and_says_how_many_rows(mailbox, smtp_server, tmp_path, capsys):
    enroll(make_sequence(mailbox=mailbox, steps=1, name="One"), "ada@acme.test")
    send_due()
    target = tmp_path / "ledger.csv"
    call_command("ledger", "--sequence", "One", "--output", str(target))
    assert "wrote 1 row to" in capsys.readouterr().err
    rows = list(csv.DictReader(target.open(encoding="utf-8-sig", newline="")))
    assert [(r["contact"], r["outcome"]) for r in rows] == [("ada@acme.test", "sent")]


def test_unknown_contact_or_sequence_and_bad_dates_are_refused_in_words(db):
    with pytest.raises(CommandError, match="^no contact nobody@acme.test: nobody with this address"):
        call_command("ledger", "--contact", "Nobody@acme.test")
    with pytest.raises(CommandError, match="^no sequence named 'Nope'"):
        call_command("ledger", "--sequence", "Nope")
    with pytest.raises(CommandError, match="^say whose ledger: --contact EMAIL, --sequence NAME"):
        call_command("ledger")
    with pytest.raises(CommandError, match="^--since 'yesterday' is neither a day"):
        call_command("ledger", "--since", "yesterday")
    with pytest.raises(CommandError, match="^--since 2026-02-30 is neither|^--since '2026-02-30' is neither"):
        call_command("ledger", "--since", "2026-02-30")
    with pytest.raises(CommandError, match="^--since 2026-03-08 is not before --until 2026-03-01"):
        call_command("ledger", "--since", "2026-03-08", "--until", "2026-03-01")


def test_a_page_of_rows_costs_the_same_few_queries_however_many_people(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Busy")
    uid = iter(range(1, 100))

    def people(tag: str, n: int) -> None:
        made = [enroll(sequence, f"{tag}{i}@acme{tag}{i}.test") for i in range(n)]
        firsts = {job.enrollment_id: job for job in send_due()}
        reply_to(firsts[made[0].pk], uid=next(uid))  # held back: replied
        suppression_add(value=made[1].contact.email, reason="unsubscribe")  # held back: a ledger entry

    def cost() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            rows = list(send_ledger_rows(sequence_id=sequence.pk))
        return len(rows), len(queries.captured_queries)

    people("a", 3)
    small = cost()
    people("b", 6)
    large = cost()
    assert (small[0], large[0]) == (6, 18)
    # The sequence's steps, a page of jobs, their events, their enrollments' stops, the replies, the ledger entries.
    assert small[1] == large[1] == 6, (small, large)


def test_pages_of_jobs_give_every_row_once_in_order(mailbox, smtp_server, monkeypatch):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Paged")
    for i in range(5):
        enroll(sequence, f"p{i}@acme.test")
    send_due()
    whole = list(send_ledger_rows(sequence_id=sequence.pk))
    monkeypatch.setattr("sequences.ledger.PAGE", 3)
    assert list(send_ledger_rows(sequence_id=sequence.pk)) == whole
    today = db_now().date()
    dated = datetime.combine(today, datetime.min.time(), tzinfo=UTC)
    assert list(send_ledger_rows(sequence_id=sequence.pk, since=dated)) == whole
    made = SendJob.objects.filter(step__sequence=sequence).values_list("pk", flat=True)
    assert [r.job for r in whole] == sorted(made) and len(whole) == 10


def test_a_date_only_range_reads_whole_days_in_utc(db):
    from sequences.management.commands.ledger import _moment

    assert _moment("2026-03-01", "--since") == datetime(2026, 3, 1, tzinfo=UTC)
    assert _moment("2026-03-07", "--until", end_of_day=True) == datetime(2026, 3, 8, tzinfo=UTC)
    assert _moment("2026-03-01T09:30:00", "--since") == datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    assert _moment("2026-03-01T09:30:00+02:00", "--since") == datetime(2026, 3, 1, 7, 30, tzinfo=UTC)
