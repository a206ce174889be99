"""The RQ dashboard under /admin/rq/ answers a gone job, queue or worker with a 404, not a 500 (issue 34, item 7)."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
@pytest.mark.parametrize("path", [
    "/admin/rq/queues/0/%C2%B2/",
    "/admin/rq/queues/99/",
    "/admin/rq/queues/99/finished/",
    "/admin/rq/workers/99/",
    "/admin/rq/queues/0/gone-job/delete/",
    "/admin/rq/queues/0/gone-job/requeue/",
    "/admin/rq/queues/0/gone-job/enqueue/",
])
def test_a_gone_job_queue_or_worker_is_a_404(admin_user, path):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    assert client.get(path).status_code == 404
    assert client.get("/admin/rq/queues/0/").status_code == 200  # the dashboard itself still works
