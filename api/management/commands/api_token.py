"""Create an API token: printed once, stored as a SHA-256. List and revoke tokens in the admin."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from api.models import ApiToken
from api.tokens import api_token_create
from sequences.services.common import ServiceError
from workspaces.current import workspace_named


class Command(BaseCommand):
    help = (
        "Create an API token with the permissions of a UI role and print it once (it is stored hashed; "
        "a lost token is revoked in the admin and replaced)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="what the token is for, e.g. crm")
        parser.add_argument("--role", required=True, choices=ApiToken.Role.values)
        parser.add_argument("--rate", type=int, default=120, help="requests per minute (default 120)")
        parser.add_argument("--workspace", metavar="NAME", default="",
                            help="the workspace it acts in; none: an agency token, which names the workspace of "
                                 "each call in its X-Workspace header")

    def handle(self, *args, name, role, rate, workspace, **options):
        try:
            workspace_id = workspace_named(workspace).pk if workspace else None
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        try:
            row, token = api_token_create(name=name, role=role, rate_per_minute=rate, workspace_id=workspace_id)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"token {row.name!r} ({row.role}, {row.rate_per_minute} requests/minute); shown once, keep it now:"
        )
        self.stdout.write(token)
