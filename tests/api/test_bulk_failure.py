"""A bulk enrollment whose background job fails says failed, with the reason, never "running" forever."""

from __future__ import annotations

import django_rq
import pytest
from rq.job import Job, JobStatus

from api.models import BulkEnrollment
from sequences.models import Enrollment
from tests.api.conftest import work

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_bulk_enrollment_whose_job_raises_says_failed_with_the_reason(api, world):
    client = api("operator")
    contacts = [{"email": f"late{i}@example.com", "first_name": "Late", "company": "Co"} for i in range(3)]
    started = client.post("/api/v1/enrollments/bulk", {"sequence_id": world["sequence"].pk,
                                                       "contacts": contacts}).json()
    assert started["status"] == "queued"
    # Between the call and its job, a stored row gains a key this version does not know (a row written by
    # another version of the product during a rolling upgrade): reading it raises, not a ServiceError.
    bulk = BulkEnrollment.objects.get()
    bulk.rows[1]["salutation"] = "Dr"
    bulk.save(update_fields=["rows"])

    work()

    done = client.get(started["status_url"].removeprefix(client.base)).json()
    assert done["status"] == "failed"
    assert done["error"].startswith("TypeError: ") and "salutation" in done["error"], done["error"]
    assert done["finished_at"] is not None and done["enrolled"] == 0
    assert not Enrollment.objects.filter(contact__email__startswith="late").exists()
    # RQ says so too, and keeps the traceback.
    queue = django_rq.get_queue("default")
    (job_id,) = queue.failed_job_registry.get_job_ids()
    assert Job.fetch(job_id, connection=queue.connection).get_status() == JobStatus.FAILED
