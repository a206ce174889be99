from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from sequences.selectors import contact_workspace_names, normalize_email, timeline_event_fields, timeline_of_address
from workspaces.commands import in_named_workspace, one_person_refused, workspace_argument


class Command(BaseCommand):
    help = "Every timeline event for an address across enrollments, in commit order, database-clock timestamps."

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("email")
        parser.add_argument("--json", action="store_true", dest="as_json", help="one JSON object per line")

    @in_named_workspace
    def handle(self, *args, email, as_json: bool, **options):
        email = normalize_email(email)
        one_person_refused(email, contact_workspace_names(email))
        events = timeline_of_address(email)
        if not events.exists():
            raise CommandError(f"no events for {email}")
        for event in events:
            if as_json:
                fields = timeline_event_fields(event) | {"at": event.at.isoformat()}
                self.stdout.write(json.dumps(fields, sort_keys=True))
            else:
                detail = " ".join(f"{k}={v}" for k, v in event.data.items() if v not in ("", None))
                self.stdout.write(
                    f"{event.at:%Y-%m-%d %H:%M:%S.%f}  {event.kind:<22} "
                    f"enr={event.enrollment_id or '-'} job={event.job_id or '-'} v={event.version_seen or '-'} "
                    f"{('worker=' + event.worker_id + ' ') if event.worker_id else ''}{detail}"
                )

