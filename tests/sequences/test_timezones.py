"""Recipient time zones: a window with timezone = "recipient" opens in each contact's own zone.

Real PostgreSQL (its clock decides what "now" is), the real dispatcher and final check, aiosmtpd.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from db.clock import db_now
from sequences.config.apply import config_apply
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.labels import send_time_words
from sequences.models import Contact, Enrollment, SendJob
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.enrollments import ContactRow, contact_upsert, enrollment_create, enrollments_create_batch
from sequences.services.sending import dispatch_due
from tests.factories import make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
AUCKLAND, LOS_ANGELES = ZoneInfo("Pacific/Auckland"), ZoneInfo("America/Los_Angeles")


def window_around_auckland_now(now: datetime) -> tuple[time, time]:
    """A window of about two hours around the current Auckland time, within one local day.

    Auckland is 19 to 21 hours ahead of Los Angeles, so Los Angeles' clock
    then reads 3 to 5 hours off Auckland's: always outside this window.
    Near midnight the window is cut at the local day's edges: it starts at 00:00 or runs to the day's
    last instant (a window ending 23:59 would be closed during the day's last minute).
    """
    local = now.astimezone(AUCKLAND)
    before, after = local - timedelta(hours=1), local + timedelta(hours=1)
    start = time(before.hour, before.minute) if before.date() == local.date() else time(0, 0)
    end = time(after.hour, after.minute) if after.date() == local.date() else time.max
    return start, end


def enroll_in_zone(sequence, email: str, zone: str) -> Enrollment:
    contact = contact_upsert(email=email, first_name="Pat", company="Acme", timezone_name=zone)
    return enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk)


def run_due() -> dict[int, tuple[str, str]]:
    """One dispatcher pass and every job it queued, as a worker runs them: {job id: (state, detail)}."""
    return {
        job_id: (o.state, o.detail)
        for job_id in dispatch_due()
        for o in [send_job_process(job_id=job_id, worker_id="w1")]
    }


@pytest.fixture
def recipient_window(mailbox):
    start, end = window_around_auckland_now(db_now())
    mailbox.window_timezone, mailbox.window_fallback_timezone = "recipient", "UTC"
    mailbox.window_start, mailbox.window_end = start, end
    mailbox.save()
    return start, end


def test_at_the_same_instant_auckland_is_sent_and_los_angeles_waits_for_its_own_window(
    mailbox, smtp_server, recipient_window
):
    start, end = recipient_window
    sequence = make_sequence(mailbox=mailbox, steps=1)
    kiwi = enroll_in_zone(sequence, "kiwi@example.nz", "Pacific/Auckland")
    angeleno = enroll_in_zone(sequence, "angeleno@example.com", "America/Los_Angeles")
    now = db_now()
    assert not start <= now.astimezone(LOS_ANGELES).time() <= end  # the premise: LA is outside now

    outcomes = run_due()

    kiwi_job, la_job = kiwi.jobs.get(), angeleno.jobs.get()
    assert outcomes[kiwi_job.pk][0] == S.SUBMITTED
    assert outcomes[la_job.pk] == ("deferred", "outside_sending_window")
    assert [r.recipients for r in smtp_server.received] == [["kiwi@example.nz"]]
    la_job.refresh_from_db()
    assert la_job.state == S.SCHEDULED
    # Deferred to the opening of the window on Los Angeles' own clock: the next `start` there.
    opens = la_job.scheduled_at.astimezone(LOS_ANGELES)
    assert opens.time() == start and la_job.scheduled_at > now
    assert la_job.scheduled_at - now < timedelta(days=1)
    # The dispatcher leaves it alone until then: nothing more is sent now.
    assert run_due() == {} and len(smtp_server.received) == 1


def test_a_contact_without_a_zone_follows_the_mailboxs_fallback_zone(mailbox, smtp_server, recipient_window):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    mailbox.window_fallback_timezone = "America/Los_Angeles"
    mailbox.save(update_fields=["window_fallback_timezone"])
    nowhere = enroll_in_zone(sequence, "nowhere@example.com", "")
    assert Contact.objects.get(email="nowhere@example.com").timezone == ""
    assert run_due()[nowhere.jobs.get().pk] == ("deferred", "outside_sending_window")

    mailbox.window_fallback_timezone = "Pacific/Auckland"
    mailbox.save(update_fields=["window_fallback_timezone"])
    later = enroll_in_zone(sequence, "later@example.com", "")
    assert run_due()[later.jobs.get().pk][0] == S.SUBMITTED


def test_the_send_time_is_shown_in_the_contacts_local_time_and_in_utc(mailbox, smtp_server, recipient_window):
    start, _ = recipient_window
    sequence = make_sequence(mailbox=mailbox, steps=1)
    angeleno = enroll_in_zone(sequence, "angeleno@example.com", "America/Los_Angeles")
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__mailbox").get(enrollment=angeleno)

    # Before the final check has deferred it, the words already say when its window opens.
    words = send_time_words(job)
    local, utc = words.at.astimezone(LOS_ANGELES), words.at.astimezone(ZoneInfo("UTC"))
    assert words.expected and local.time() == start
    assert words.local == f"{local:%a} {local.day} {local:%b %Y %H:%M} America/Los_Angeles"
    assert words.utc == f"{utc:%a} {utc.day} {utc:%b %Y %H:%M} UTC"
    assert words.text == f"{words.local} ({words.utc})"
    run_due()
    job.refresh_from_db()
    assert job.scheduled_at == words.at


def test_an_unknown_zone_is_refused_at_enrollment_with_the_reason(mailbox, smtp_server, tmp_path):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    with pytest.raises(ServiceError, match="timezone: unknown time zone 'Mars/Olympus'"):
        contact_upsert(email="mars@example.com", timezone_name="Mars/Olympus")

    # A contact whose zone was edited to something that is not a zone (the admin writes any text).
    contact = contact_upsert(email="edited@example.com")
    Contact.objects.filter(pk=contact.pk).update(timezone="Europe/Atlantis")
    with pytest.raises(ServiceError, match="edited@example.com: timezone: unknown time zone"):
        enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk)

    # The CSV path: one line per refused row, the others enrolled.
    path = tmp_path / "contacts.csv"
    path.write_text(
        "email,first_name,company,timezone\nedited@example.com,Ed,Acme,\nok@example.com,Ok,Acme,Asia/Tokyo\n"
        "bad@example.com,Bad,Acme,Moon/Base\n"
    )
    out, err = StringIO(), StringIO()
    call_command("enroll", "--sequence", sequence.name, str(path), stdout=out, stderr=err)
    assert "1 enrolled, 2 rejected" in out.getvalue()
    assert (
        "line 2: edited@example.com: timezone: the contact's time zone: unknown time zone 'Europe/Atlantis'"
        in err.getvalue()
    )
    assert "line 4: timezone: unknown time zone 'Moon/Base'" in err.getvalue()
    assert list(Enrollment.objects.values_list("contact__email", flat=True)) == ["ok@example.com"]

    # The batch service refuses the same rows for any caller, not only the command.
    rows = [ContactRow(line=7, email="api@example.com", timezone_name="Nowhere/Land")]
    result = enrollments_create_batch(sequence_id=sequence.pk, rows=rows)
    assert (
        result.enrolled == 0
        and result.rejected[0][0] == 7
        and "unknown time zone 'Nowhere/Land'" in result.rejected[0][1]
    )
    assert not Contact.objects.filter(email="api@example.com").exists()


def test_the_toml_window_takes_recipient_with_a_fallback_zone(mailbox):
    text = """
[[mailbox]]
name = "zones"
address = "zones@acme.test"
window = { start = "09:00", end = "17:00", timezone = "recipient", fallback_timezone = "Europe/Berlin" }
"""
    config_apply(parse(text))
    from mailboxes.models import Mailbox

    box = Mailbox.objects.get(name="zones")
    assert (box.window_timezone, box.window_fallback_timezone) == ("recipient", "Europe/Berlin")
    with pytest.raises(ConfigError) as bad:
        parse(text.replace('"recipient"', '"Recipient/Own"'))
    assert "unknown time zone 'Recipient/Own'" in str(bad.value) and '"recipient"' in str(bad.value)
    with pytest.raises(ConfigError, match="fallback_timezone.*unknown time zone 'Mars/Base'"):
        parse(text.replace("Europe/Berlin", "Mars/Base"))
