"""One colour language: a failed step is red, a canceled one grey, a sent one green; the enrollment page has a
legend."""

from __future__ import annotations

import pytest

from sequences.labels import Tone, job_label_and_tone
from sequences.models import SendJob, Step
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_step_that_could_not_be_prepared_is_failed_not_never_sent(client, users, mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(body="Hello {{ city }}")
    enrollment = enroll(sequence, "red@example.com")
    (job_id,) = dispatch_due()
    send_job_process(job_id=job_id, worker_id="w1")
    job = SendJob.objects.select_related("enrollment__sequence", "enrollment__mailbox").get(pk=job_id)
    label = job_label_and_tone(job)
    assert label.text.startswith("Not sent — could not be prepared") and label.tone == Tone.FAILED

    client.force_login(users["operator"])
    page = client.get(f"/enrollments/{enrollment.pk}/").content.decode()
    assert '<span class="label failed">Not sent — could not be prepared' in page
    assert 'id="legend"' in page
