"""Bulk pause / resume / stop of selected enrollments, through the one stop path, with the honest summary."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sequences.labels import stop_summary_lines
from sequences.models import Enrollment, OperatorAction, SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.suppressions import suppression_add
from sequences.stop_summary import StopSummary
from tests.factories import enroll, make_sequence
from tests.ui import conftest as ui

roles, users = ui.roles, ui.users  # the UI's fixtures: its roles and one user per role
pytestmark = pytest.mark.django_db(transaction=True)  # a real send: no transaction across the transport
S = SendJob.State
E = Enrollment.Status


def test_the_summary_keeps_in_flight_now_apart_from_handed_off_earlier():
    lines = stop_summary_lines(StopSummary(canceled=3, in_flight=1, submitted=2))
    assert lines == [
        "3 jobs canceled — never sent",
        "1 job in flight now (authorized, being handed off) — cannot recall",
        "2 jobs handed off earlier (submitted before this stop) — cannot recall",
    ]


@pytest.fixture
def three(mailbox):
    """Three enrollments of a two-step sequence; the first one's step 1 was sent (long finished)."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Bulk")
    sent = enroll(sequence, "sent@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w").state == S.SUBMITTED
    return sequence, [sent, enroll(sequence, "waiting@example.com"), enroll(sequence, "other@example.com")]


def test_bulk_pause_confirms_then_reports_what_it_did_to_the_selection_only(client, users, three):
    sequence, (sent, waiting, other) = three
    client.force_login(users["operator"])
    url = reverse("enrollment_bulk", args=[sequence.pk])
    confirm = client.get(url, {"action": "pause", "ids": [sent.pk, waiting.pk]})
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Pause 2 enrollments in “Bulk”?" in html
    assert confirm.context["forecast"] == {"cancel": 2, "claimed": 0, "in_flight": 0, "submitted": 1}
    assert "1</strong> already sent — <strong>cannot be recalled" in html
    assert f'<input type="hidden" name="ids" value="{sent.pk}">' in html
    assert Enrollment.objects.filter(status=E.PAUSED).count() == 0, "a confirmation changes nothing"

    page = client.post(url, {"action": "pause", "ids": [sent.pk, waiting.pk]}, follow=True).content.decode()
    assert "Paused 2 of 2 selected enrollments." in page
    assert "2 emails canceled — they will not be sent." in page
    assert "being handed to the mail server" not in page  # none was
    assert "1 had already been sent before you paused; it cannot be recalled." in page
    assert dict(Enrollment.objects.values_list("contact__email", "status")) == {
        "sent@example.com": E.PAUSED,
        "waiting@example.com": E.PAUSED,
        "other@example.com": E.ACTIVE,
    }
    assert SendJob.objects.filter(enrollment=other, state=S.SCHEDULED).count() == 1
    assert OperatorAction.objects.filter(action="enrollment_pause", actor=users["operator"].username).count() == 2


def test_bulk_resume_lists_what_it_refused_and_bulk_stop_is_idempotent(client, users, three):
    sequence, (sent, waiting, other) = three
    client.force_login(users["operator"])
    url = reverse("enrollment_bulk", args=[sequence.pk])
    client.post(url, {"action": "stop", "ids": [waiting.pk, other.pk]})
    again = client.post(url, {"action": "stop", "ids": [waiting.pk, other.pk]}, follow=True).content.decode()
    assert "Nothing changed:" in again
    suppression_add(value="other@example.com", reason="manual", note="asked", actor="ops")
    page = client.post(url, {"action": "resume", "ids": [waiting.pk, other.pk]}, follow=True).content.decode()
    assert "Resumed 1 selected enrollments." in page
    assert "other@example.com is suppressed (manual); lift it first" in page
    waiting.refresh_from_db()
    other.refresh_from_db()
    assert (waiting.status, other.status) == (E.ACTIVE, E.STOPPED)


def test_bulk_actions_need_the_operator_role_and_only_touch_this_sequence(client, users, three, mailbox):
    sequence, (sent, waiting, other) = three
    elsewhere = enroll(make_sequence(mailbox=mailbox, steps=1, name="Elsewhere"), "x@example.com")
    client.force_login(users["staff"])
    url = reverse("enrollment_bulk", args=[sequence.pk])
    assert client.post(url, {"action": "pause", "ids": [waiting.pk]}).status_code == 403
    client.force_login(users["operator"])
    client.post(url, {"action": "pause", "ids": [elsewhere.pk]})
    elsewhere.refresh_from_db()
    assert elsewhere.status == E.ACTIVE
    html = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert f'name="ids" value="{waiting.pk}"' in html and 'id="bulk-pause"' in html
