"""Workspaces: one install serves several clients, each sealed from the others.

    python manage.py workspace add "Acme Corp"
    python manage.py workspace list
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count

from workspaces.models import Membership, Workspace

NAME_MAX = Workspace._meta.get_field("name").max_length


class Command(BaseCommand):
    help = "Add a workspace, or list them with their members."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="add a workspace")
        add.add_argument("name")
        actions.add_parser("list", help="list the workspaces, their members and roles")

    def handle(self, *args, action: str, **options):
        if action == "add":
            name = options["name"].strip()
            if not name or len(name) > NAME_MAX:
                raise CommandError(f"a workspace's name is 1 to {NAME_MAX} characters")
            workspace, created = Workspace.objects.get_or_create(name=name)
            if not created:
                raise CommandError(f"a workspace named {name!r} exists already")
            self.stdout.write(self.style.SUCCESS(f"added workspace {name!r}"))
            return
        rows = Workspace.objects.annotate(members=Count("memberships")).order_by("name")
        for workspace in rows:
            members = Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username")
            who = ", ".join(f"{m.user.username} ({m.role})" for m in members) or "no members"
            self.stdout.write(f"{workspace.name}: {who}")
        self.stdout.write("Users who are members of no workspace work across the install.")
