"""Building a sequence from the UI: the editor's services and pages, TOML export, results and "what will send when"."""

from __future__ import annotations

import tomllib
from datetime import time

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from db.clock import db_now
from mailboxes.models import Mailbox
from sequences.config.apply import config_apply
from sequences.config.durations import parse_duration
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.labels import duration_words, reason_sentence
from sequences.models import Enrollment, OperatorAction, SendJob, Sequence, Step
from sequences.services.campaigns import (
    StepInvalid,
    sequence_create,
    sequence_update,
    step_delete,
    step_move,
    step_save,
)
from sequences.services.common import ServiceError
from sequences.services.scheduling import schedule_step
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim
from sequences.services.stops import enrollment_stop, sequence_pause
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui import conftest as ui_fixtures
from tests.ui.test_operations import submit
from ui import results, sendwhen
from ui.editor import edit_impact

pytestmark = pytest.mark.django_db
S = SendJob.State
roles, users = ui_fixtures.roles, ui_fixtures.users  # the role groups and one user per role


def operator_client(users) -> Client:
    client = Client()
    client.force_login(users["operator"])
    return client


# --- words ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3 days", 259200), ("4 hours", 14400), ("90 minutes", 5400), ("1 day 6 hours", 108000), ("1 week", 604800),
     ("3d", 259200), ("0", 0), ("2 hrs, 30 mins", 9000)],
)
def test_waits_are_written_in_human_units(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["3 months", "soon", "3 days later", ""])
def test_a_wait_that_is_not_a_duration_is_refused(text):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_durations_and_reasons_read_as_words():
    assert duration_words(259200) == "3 days"
    assert duration_words(93600) == "1 day 2 hours"
    assert duration_words(3600) == "1 hour"
    assert duration_words(0) == "no wait"
    assert reason_sentence("enrollment_paused") == "The enrollment was paused."
    assert reason_sentence("daily_cap_reached") == "The mailbox reached its daily cap."
    assert reason_sentence("some_new_code") == "Some new code."


# --- services ------------------------------------------------------------------------------------------------------


def test_steps_are_validated_and_thread_defaults_are_kept(users):
    mailbox = MailboxFactory()
    sequence = sequence_create(name="Launch", mailbox_id=mailbox.pk, actor="op")
    with pytest.raises(StepInvalid) as excinfo:
        step_save(sequence_id=sequence.pk, step_id=None, subject="", body="Hi {{ first_name",
                           wait_seconds=0, thread=True, actor="op")
    assert "the first step needs a subject" in excinfo.value.errors["subject"]
    assert "{{ without its }}" in excinfo.value.errors["body"][0]
    first = step_save(sequence_id=sequence.pk, step_id=None, subject="Hi {{ first_name }}", body="Hello",
                               wait_seconds=0, thread=True, actor="op")
    assert (first.position, first.thread) == (1, False)  # step 1 starts the thread
    with pytest.raises(StepInvalid, match="starts a new thread needs a subject"):
        step_save(sequence_id=sequence.pk, step_id=None, subject="", body="Again", wait_seconds=60,
                           thread=False, actor="op")
    second = step_save(sequence_id=sequence.pk, step_id=None, subject="", body="Again", wait_seconds=60,
                                thread=True, actor="op")
    assert (second.position, second.thread, second.wait_seconds) == (2, True, 60)
    assert OperatorAction.objects.filter(action="step_add", target_id=sequence.pk).count() == 2


def test_a_step_with_sent_mail_cannot_be_deleted_or_moved_and_says_why():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=3, waits=(0, 3600, 3600))
    enrollment = enroll(sequence, "ada@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    step1, step2, step3 = sequence.steps.order_by("position")
    with pytest.raises(ServiceError, match="1 email of it was already sent"):
        step_delete(step_id=step1.pk, actor="op")
    with pytest.raises(ServiceError, match="1 person has it scheduled. Pause the sequence first"):
        step_delete(step_id=step2.pk, actor="op")
    with pytest.raises(ServiceError, match="Step 2 cannot be deleted or moved"):
        step_move(step_id=step3.pk, offset=-1, actor="op")
    step_delete(step_id=step3.pk, actor="op")  # nobody reached it
    assert list(sequence.steps.values_list("position", flat=True)) == [1, 2]
    assert enrollment.jobs.count() == 2


def test_steps_nobody_reached_are_reordered_and_renumbered_on_delete():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    for body in ("two", "three", "four"):
        step_save(sequence_id=sequence.pk, step_id=None, subject=f"S {body}", body=body, wait_seconds=60,
                           thread=True, actor="op")
    four = sequence.steps.get(body="four")
    step_move(step_id=four.pk, offset=-1, actor="op")
    assert list(sequence.steps.order_by("position").values_list("body", flat=True))[1:] == ["two", "four", "three"]
    step_delete(step_id=sequence.steps.get(body="two").pk, actor="op")
    assert list(sequence.steps.order_by("position").values_list("position", "body")) == [
        (1, "Step 1 for {{ first_name }} at {{ company }}."), (2, "four"), (3, "three")]


def test_the_mailbox_of_a_sequence_with_mail_on_its_way_changes_only_when_paused():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, name="Old")
    enroll(sequence, "ada@example.com")
    other = MailboxFactory()
    with pytest.raises(ServiceError, match="Pause the sequence first"):
        sequence_update(sequence_id=sequence.pk, name="Old", mailbox_id=other.pk, actor="op")
    sequence_pause(sequence_id=sequence.pk, actor="op")
    sequence_update(sequence_id=sequence.pk, name="New", mailbox_id=other.pk, actor="op")
    sequence.refresh_from_db()
    assert (sequence.name, sequence.mailbox_id) == ("New", other.pk)
    with pytest.raises(ServiceError, match="already exists"):
        sequence_create(name="New", mailbox_id=other.pk, actor="op")


def test_editing_a_live_sequence_says_what_happens_to_the_people_in_it():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 0))
    for n in range(3):
        enroll(sequence, f"p{n}@example.com")
    for job_id in dispatch_due():
        submit(job_id)
    done = enroll(sequence, "done@example.com")
    dispatch_due()  # the three step-2 jobs and done's step 1, queued
    submit(done.jobs.get().pk)
    (job_id,) = dispatch_due()
    submit(job_id)
    done.refresh_from_db()
    assert done.status == Enrollment.Status.COMPLETED
    step1, step2 = sequence.steps.order_by("position")
    lines = edit_impact(sequence, step2)
    assert lines[0] == "3 people are active in this sequence, 1 finished it."
    assert "3 have a step-2 email scheduled: it will use the new text." in lines[1]
    assert "already scheduled keep their time" in lines[1]
    assert "4 step-1 emails already went out" in " ".join(edit_impact(sequence, step1))
    new = edit_impact(sequence, None)
    assert "A new step 3 will be scheduled for those who finish step 2: the 3 people still active." in new
    assert "The 1 person who already finished the sequence will not get it." in new


# --- pages ---------------------------------------------------------------------------------------------------------


def test_an_operator_creates_a_sequence_and_its_steps_in_words(users):
    mailbox = MailboxFactory(name="sales")
    client = operator_client(users)
    assert b'id="new-sequence"' in client.get(reverse("sequence_list")).content
    response = client.post(reverse("sequence_new"), {"name": "Spring", "mailbox": mailbox.pk})
    sequence = Sequence.objects.get(name="Spring")
    assert response["Location"] == reverse("step_new", args=[sequence.pk])
    page = client.get(reverse("step_new", args=[sequence.pk])).content.decode()
    assert "Step 1 starts the thread. Later steps are sent as replies in it by default" in page
    assert "Nobody is in this sequence yet" in page
    client.post(reverse("step_new", args=[sequence.pk]), {"subject": "Hi {{ first_name }}", "body": "Hi", "wait": "0"})
    page = client.get(reverse("step_new", args=[sequence.pk])).content.decode()
    assert "On by default for step 2 and later" in page
    response = client.post(reverse("step_new", args=[sequence.pk]),
                           {"subject": "", "body": "Following up", "wait": "3 days", "thread": "on"})
    assert response.status_code == 302
    assert list(sequence.steps.values_list("position", "wait_seconds", "thread")) == [(1, 0, False), (2, 259200, True)]
    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "3 days after step 1" in page and "259200" not in page
    assert "starts the thread" in page and "reply in the same thread" in page
    assert "State version" not in page and "<details" in page
    bad = client.post(reverse("step_new", args=[sequence.pk]), {"subject": "x", "body": "y", "wait": "soon"})
    assert bad.status_code == 400 and "“3 days”" in bad.content.decode()


def test_staff_may_read_and_export_but_not_edit(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    client = Client()
    client.force_login(users["staff"])
    assert b'id="new-sequence"' not in client.get(reverse("sequence_list")).content
    assert client.get(reverse("sequence_new")).status_code == 403
    assert client.get(reverse("sequence_export", args=[sequence.pk])).status_code == 200


# --- TOML export ---------------------------------------------------------------------------------------------------


def test_export_then_load_into_an_empty_database_gives_identical_steps():
    mailbox = MailboxFactory(name="sales", window_days="mon,tue", window_start=time(9), window_end=time(17),
                             window_timezone="Europe/Berlin", smtp_password_env="OUTREACH_SECRET_SALES_SMTP")
    sequence = sequence_create(name='Q3 "launch" — ünïcode', mailbox_id=mailbox.pk, actor="op")
    bodies = ['Hi {{ first_name|default:"there" }},\n\n\tTabbed "quoted" \\ backslash\n', 'ends with a quote"',
              "one line", "\nstarts with a newline\r\nand a CRLF"]
    for n, body in enumerate(bodies, 1):
        step_save(sequence_id=sequence.pk, step_id=None, subject=f"Subject {n}" if n != 2 else "",
                           body=body, wait_seconds=(0, 259200, 5400, 61)[n - 1], thread=n != 3, actor="op")
    text = sequence_export_toml(sequence)
    tomllib.loads(text)
    assert "\\r" not in text, "a body's CRLF line ends export as plain lines"
    # A body's CRLF comes back as a newline (how TOML reads a line end; the message is sent with CRLF either way).
    before = [(*row[:2], row[2].replace("\r\n", "\n"), *row[3:])
              for row in sequence.steps.order_by("position").values_list("position", "subject", "body",
                                                                         "wait_seconds", "thread")]
    window = (mailbox.window_days, mailbox.window_start, mailbox.window_end, mailbox.window_timezone)
    Step.objects.all().delete()
    Sequence.objects.all().delete()
    Mailbox.objects.all().delete()

    config_apply(parse(text))
    loaded = Sequence.objects.get(name='Q3 "launch" — ünïcode')
    assert list(loaded.steps.order_by("position").values_list("position", "subject", "body", "wait_seconds",
                                                              "thread")) == before
    box = loaded.mailbox
    assert (box.name, box.smtp_password_env) == ("sales", "OUTREACH_SECRET_SALES_SMTP")
    assert (box.window_days, box.window_start, box.window_end, box.window_timezone) == window
    again = config_apply(parse(text))
    assert not again.changes and "sequence " + loaded.name in again.unchanged


def test_the_export_page_is_a_toml_download(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 259200), name="Spring launch")
    response = operator_client(users).get(reverse("sequence_export", args=[sequence.pk]))
    assert response["Content-Disposition"] == 'attachment; filename="spring-launch.toml"'
    data = tomllib.loads(response.content.decode())
    assert [s["wait"] for s in data["sequence"][0]["step"]] == ["0s", "3d"]


# --- results -------------------------------------------------------------------------------------------------------


def _by_step(sequence):
    return {position: counts for position, counts in results.step_results(sequence)}


def test_per_step_results_count_sends_outcomes_and_final_check_cancels(django_assert_num_queries):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 0))
    people = [enroll(sequence, f"p{n}@example.com") for n in range(4)]
    for job_id in dispatch_due():
        submit(job_id)
    enrollment_stop(enrollment_id=people[0].pk, reason=Enrollment.StopReason.REPLIED, actor="")
    suppression_add(value=people[1].contact.email, reason="unsubscribe", source="test")
    for job_id in dispatch_due():
        submit(job_id)
    enrollment_stop(enrollment_id=people[2].pk, reason=Enrollment.StopReason.COMPLAINED, actor="")
    late = enroll(sequence, "late@example.com")
    step2 = sequence.steps.get(position=2)
    with transaction.atomic():  # step 2 scheduled before step 1 was sent: the final check cancels it
        schedule_step(Enrollment.objects.select_for_update().get(pk=late.pk), step=step2, at=db_now(), reason="t")
    dispatch_due()
    job = send_job_claim(job_id=late.jobs.get(step=step2).pk, worker_id="w")
    decision = send_job_authorize(job_id=job.pk, worker_id="w", version=job.version)
    assert (decision.outcome, decision.reason) == ("canceled", "previous_step_not_submitted")
    counts = _by_step(sequence)
    assert (counts[1].sent, counts[1].replied, counts[1].unsubscribed, counts[1].final_check) == (4, 1, 1, 0)
    assert (counts[2].sent, counts[2].complained, counts[2].final_check) == (2, 1, 1)
    assert counts[1].cells[1] == ("Replied", 1, "25.0%", "") and counts[2].cells[6] == ("Complained", 1, "50.0%", "")
    # Grouped queries: the same number for 2 steps as for 6 (three of them read the people a reply stopped, the one
    # message that could have crossed the reply, and the stop it is measured against: inbound.replies.crossed).
    with django_assert_num_queries(12):
        results.step_results(sequence)
    for _ in range(4):
        step_save(sequence_id=sequence.pk, step_id=None, subject="s", body="b", wait_seconds=0,
                           thread=False, actor="")
    with django_assert_num_queries(12):
        assert len(results.step_results(sequence)) == 6
    dashboard = dict(results.sequence_results())
    assert (dashboard[sequence].sent, dashboard[sequence].replied, dashboard[sequence].final_check) == (6, 1, 1)


# --- what will send when -------------------------------------------------------------------------------------------


def _reasons(jobs):
    rows, total = sendwhen.send_when_rows(jobs)
    return [(row.job.step.position, row.when, " ".join(row.reasons)) for row in rows], total


def test_what_will_send_when_explains_each_wait_in_sentences():
    mailbox = MailboxFactory(daily_cap=1)
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 259200))
    ada = enroll(sequence, "ada@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    rows, total = _reasons(SendJob.objects.filter(enrollment=ada))
    assert total == 1
    ((position, when, why),) = rows
    assert position == 2 and when.endswith("UTC")
    assert "Waits 3 days after step 1 was sent (" in why
    assert "The mailbox reached its daily cap. (1 of 1 today): the next slot opens at" in why

    bob = enroll(sequence, "bob@example.com")
    Mailbox.objects.filter(pk=mailbox.pk).update(daily_cap=100, window_days="sun", window_start=time(0),
                                                 window_end=time(0, 1), window_timezone="UTC")
    rows, _ = _reasons(SendJob.objects.filter(enrollment=bob))
    if timezone.now().weekday() != 6:
        assert "Outside the mailbox's sending window. (Sun 00:00–00:01 UTC): it waits until the window opens." in (
            rows[0][2])
    Mailbox.objects.filter(pk=mailbox.pk).update(window_days="", window_start=None, window_end=None,
                                                 blocked_at=db_now(), blocked_reason="535 authentication failed")
    rows, _ = _reasons(SendJob.objects.filter(enrollment=bob))
    assert rows[0][1] == "on hold"
    assert f"On hold: the mailbox {mailbox.name} cannot send since " in rows[0][2]
    assert "535 authentication failed" in rows[0][2]
    Mailbox.objects.filter(pk=mailbox.pk).update(blocked_at=None)
    rows, _ = _reasons(SendJob.objects.filter(enrollment=bob))
    assert rows[0][1:] == ("now", "Due now: the next dispatcher pass sends it, after the final check.")


def test_the_sequence_and_enrollment_pages_show_what_will_send_when(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 14400))
    ada = enroll(sequence, "ada@example.com")
    submit(dispatch_due()[0])
    client = operator_client(users)
    for url in (reverse("sequence_detail", args=[sequence.pk]), reverse("enrollment_detail", args=[ada.pk])):
        page = client.get(url).content.decode()
        assert "What will send when" in page
        assert "Waits 4 hours after step 1 was sent" in page
        assert "<summary>details</summary>job " in page


def test_when_nothing_is_on_its_way_the_pages_say_why(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    ada = enroll(sequence, "ada@example.com")
    client = operator_client(users)
    sequence_pause(sequence_id=sequence.pk, actor="op")
    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "No email is on its way: the sequence is paused; resuming it schedules the next step" in page
    enrollment_stop(enrollment_id=ada.pk, reason=Enrollment.StopReason.REPLIED, actor="op")
    page = client.get(reverse("enrollment_detail", args=[ada.pk])).content.decode()
    assert "No email is on its way: stopped — the person replied." in page
