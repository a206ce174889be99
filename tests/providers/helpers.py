"""Helpers for the provider tests: ESP mailboxes on the local provider API, RQ in-process, basic auth."""

from __future__ import annotations

import base64

import django_rq
from rq import SimpleWorker

from proving.harness.provider_api import ProviderApi
from sequences.models import Enrollment, SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory

KEY_ENV = "OUTREACH_SECRET_TEST_ESP_KEY"
WEBHOOK_SECRET = "outreach-hooks:s3cret-for-tests"


def run_default_queue() -> None:
    """Run what the stop enqueued, in-process, as an RQ worker would."""
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def esp_mailbox(provider_api: ProviderApi, esp: str = "sendgrid", ahead_minutes: int = 0, **fields):
    """An ESP mailbox; the provider_api fixture points the ESP's API URL at the local fake through settings."""
    return MailboxFactory(
        transport_kind="anymail", esp_name=esp, esp_api_key_env=KEY_ENV, esp_schedule_ahead_minutes=ahead_minutes,
        **fields,
    )


def send_next(enrollment: Enrollment, worker: str = "w1"):
    """Dispatch and process the enrollment's next due job; returns (job, outcome)."""
    job_ids = dispatch_due()
    (job_id,) = [j for j in job_ids if SendJob.objects.filter(pk=j, enrollment=enrollment).exists()]
    outcome = send_job_process(job_id=job_id, worker_id=worker)
    return SendJob.objects.get(pk=job_id), outcome


def basic_auth(secret: str = WEBHOOK_SECRET) -> str:
    return "Basic " + base64.b64encode(secret.encode()).decode()
