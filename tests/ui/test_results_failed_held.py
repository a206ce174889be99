"""Failed and held columns in the results per step and per sequence, each number linking to the people it
counts; from that list an operator fixes the contact and retries the failed step."""

from __future__ import annotations

from html import unescape

from django.db import transaction
from django.urls import reverse

from db.clock import db_now
from sequences.models import OperatorAction, SendJob
from sequences.services.holds import person_hold_for_auto_reply
from sequences.services.sending import dispatch_due, send_job_claim, send_job_record_unpreparable
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_operations import submit

S = SendJob.State


def _world():
    """Step 1 to failed@ could not be prepared; held@ got step 1 and is away (out of office) for step 2."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600), name="Results")
    failed = enroll(sequence, "failed@example.com")
    (job_id,) = dispatch_due()
    send_job_claim(job_id=job_id, worker_id="w1")
    assert send_job_record_unpreparable(job_id=job_id, worker_id="w1", error="the value 'city' is missing")
    held = enroll(sequence, "held@example.com")
    submit(dispatch_due()[0])
    now = db_now()
    with transaction.atomic():
        person_hold_for_auto_reply(addresses=["held@example.com"], received=now, found=None, source="inbound:9")
    return sequence, failed, held, job_id


def test_results_count_failed_and_held_per_step_and_per_sequence_with_links(client, users):
    sequence, failed, held, _ = _world()
    client.force_login(users["staff"])
    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    people = reverse("sequence_people", args=[sequence.pk])
    step1 = page.split('<tr data-step="1">')[1].split("</tr>")[0]
    step2 = page.split('<tr data-step="2">')[1].split("</tr>")[0]
    assert f'data-label="Failed"><a href="{people}?show=failed&amp;step=1">1</a>' in step1
    assert 'data-label="Held">0</td>' in step1
    assert f'data-label="Held"><a href="{people}?show=held&amp;step=2">1</a>' in step2
    dashboard = client.get(reverse("dashboard")).content.decode()
    assert f'data-label="Failed"><a href="{people}?show=failed">1</a>' in dashboard
    assert f'data-label="Held"><a href="{people}?show=held">1</a>' in dashboard

    held_list = unescape(client.get(f"{people}?show=held&step=2").content.decode())
    assert "held@example.com" in held_list and "failed@example.com" not in held_list
    assert "On hold until " in held_list and "(out of office; the auto-reply gave no return date)" in held_list
    failed_list = client.get(f"{people}?show=failed").content.decode()
    assert "Not sent — could not be prepared: the value &#x27;city&#x27; is missing" in failed_list
    assert "Retry step 1" not in failed_list, "staff read; they do not retry"


def test_an_operator_fixes_the_contact_and_retries_from_the_failed_list(client, users):
    sequence, failed, _, job_id = _world()
    client.force_login(users["operator"])
    url = f"{reverse('sequence_people', args=[sequence.pk])}?show=failed&step=1"
    listed = client.get(url).content.decode()
    assert f'href="{reverse("contact_edit", args=[failed.contact_id])}">Fix the contact</a>' in listed
    assert f'<input type="hidden" name="next" value="{url.replace("&", "&amp;")}">' in listed
    response = client.post(reverse("job_retry", args=[job_id]), {"next": url})
    assert response["Location"] == url
    after = client.get(url).content.decode()
    assert "Failed at step 1: 0 people" in after and "Nobody." in after
    assert "Step 1 to failed@example.com is sent again" in after
    retry = SendJob.objects.filter(enrollment=failed).exclude(pk=job_id).get()
    assert retry.state == S.SCHEDULED
    assert OperatorAction.objects.filter(action="job_retry", target_id=failed.pk).exists()
    # Somewhere else is not a place to go back to.
    SendJob.objects.filter(pk=retry.pk).update(state=S.FAILED)
    assert client.post(reverse("job_retry", args=[retry.pk]), {"next": "https://elsewhere.test/"})["Location"] == \
        reverse("enrollment_detail", args=[failed.pk])
