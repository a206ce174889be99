"""A bulk enrollment whose background job fails says failed, with the reason, never "running" forever."""

from __future__ import annotations

import django_rq
import pytest
from rq.job import Job, JobStatus

from mailboxes.models import Mailbox
from sequences.models import Enrollment
from tests.api.conftest import work
from tests.factories import MailboxFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_bulk_enrollment_whose_job_raises_says_failed_with_the_reason(api, world):
    client = api("operator")
    sequence = world["sequence"]
    spare = MailboxFactory(name="api-box-2")
    sequence.pool.set([world["mailbox"], spare])
    contacts = [{"email": f"late{i}@example.com"} for i in range(3)]
    started = client.post("/api/v1/enrollments/bulk", {"sequence_id": sequence.pk, "contacts": contacts}).json()
    assert started["status"] == "queued"
    # Between the call and its job, a mailbox of the pool gets a zone the worker's time-zone database does not
    # know (tzdata older on the worker host): choosing a mailbox by today's capacity raises, not a ServiceError.
    Mailbox.objects.filter(pk=spare.pk).update(window_timezone="America/Not_A_Zone")

    work()

    done = client.get(started["status_url"].removeprefix(client.base)).json()
    assert done["status"] == "failed"
    assert "America/Not_A_Zone" in done["error"] and done["error"].startswith("ZoneInfoNotFoundError: ")
    assert done["finished_at"] is not None and done["enrolled"] == 0
    assert not Enrollment.objects.filter(contact__email__startswith="late").exists()
    # RQ says so too, and keeps the traceback.
    queue = django_rq.get_queue("default")
    (job_id,) = queue.failed_job_registry.get_job_ids()
    assert Job.fetch(job_id, connection=queue.connection).get_status() == JobStatus.FAILED
