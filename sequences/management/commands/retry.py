"""`manage.py retry`: send failed steps again, each through the final check."""

from __future__ import annotations

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from mailboxes.models import Mailbox
from sequences.models import SendJob
from sequences.sending_mailbox import sends_from
from sequences.services.common import ServiceError
from sequences.services.stops import send_job_retry
from workspaces.commands import in_named_workspace, workspace_argument


class Command(BaseCommand):
    help = ("Retry failed jobs: one by id, every failed job of a mailbox, or every job that failed since a time. "
            "Each retry is a new job for the same step, due now; a suppressed address is refused.")

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("job_id", nargs="?", type=int, help="a failed job's id")
        parser.add_argument("--mailbox", help="every failed job of this mailbox (by name)")
        parser.add_argument("--failed-since", help="every job that failed at or after this time (ISO 8601, UTC)")

    @in_named_workspace
    def handle(self, *args, job_id, mailbox, failed_since, **options):
        if sum(x is not None for x in (job_id, mailbox, failed_since)) != 1:
            raise CommandError("name exactly one of: JOB_ID, --mailbox NAME, --failed-since TIME")
        if job_id is not None:
            ids = [job_id]
        else:
            jobs = SendJob.objects.filter(state=SendJob.State.FAILED)
            if mailbox:
                box = Mailbox.objects.filter(name=mailbox).values("pk")[:1]
                jobs = jobs.filter(sends_from(box, via="enrollment__"))
            else:
                jobs = jobs.filter(finished_at__gte=_when(failed_since))
            ids = list(jobs.order_by("id").values_list("pk", flat=True))
        retried = refused = 0
        for pk in ids:
            try:
                retry = send_job_retry(job_id=pk, actor="command")
            except ServiceError as exc:
                refused += 1
                self.stderr.write(f"job {pk}: not retried: {exc}")
            except SendJob.DoesNotExist:
                refused += 1
                self.stderr.write(f"job {pk}: no such job")
            else:
                retried += 1
                self.stdout.write(f"job {pk}: retried as job {retry.pk}, due now")
        self.stdout.write(f"{retried} retried, {refused} not")
        if refused and job_id is not None:
            raise CommandError(f"job {job_id} was not retried")


def _when(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None:
        raise CommandError(f"--failed-since: {text!r} is not an ISO 8601 time (e.g. 2026-12-01T09:00:00Z)")
    if moment.tzinfo is None:
        raise CommandError("--failed-since: give the time zone (e.g. a trailing Z for UTC)")
    return moment
