"""Add a user of the operator UI with one role, or change an existing user's role.

    python manage.py add_user alice --role operator
    python manage.py add_user bob --role staff --email bob@example.com
    echo "$PASSWORD" | python manage.py add_user carol --role admin --password-stdin
    python manage.py add_user dana --workspace acme --role operator --workspace globex --role staff

Without --password-stdin a random password is generated and printed once.
Roles are the groups created by sequences/migrations/0002_roles.py; admins
also get Django admin access (is_staff) for mailboxes, users and the RQ
dashboard.

With `--workspace NAME` (repeatable) the user is a member of those workspaces only, with the `--role` given after
each (one `--role` for all), and sees nothing of the others; without it the user works across the install (an
agency's staff) and may switch to any workspace.
"""

from __future__ import annotations

import secrets
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from workspaces.models import Membership, Workspace

ROLES = {"operator": "operators", "staff": "staff", "admin": "admins"}


class Command(BaseCommand):
    help = "Add a user with a role (operator, staff or admin), or change an existing user's role."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=sorted(ROLES), action="append",
                            help="the role; with several --workspace, one after each (or one for all)")
        parser.add_argument("--workspace", action="append", default=[], metavar="NAME",
                            help="a workspace the user is a member of (repeatable); none: across the install")
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
        parser.add_argument("--new-password", action="store_true",
                            help="for an existing user: also set a new (generated or --password-stdin) password")

    def handle(self, *args, username: str, role: list[str], email: str, password_stdin: bool, new_password: bool,
               workspace: list[str], **options):
        memberships = self.memberships(workspace, role)
        role = role[-1]
        groups = {name: Group.objects.filter(name=name).first() for name in ROLES.values()}
        if any(group is None for group in groups.values()):
            raise CommandError("the role groups are missing: run `python manage.py migrate` first")
        password = ""
        User = get_user_model()
        if password_stdin:
            password = sys.stdin.readline().rstrip("\n")
            try:  # the project's password validators (settings.AUTH_PASSWORD_VALIDATORS), as in the admin
                validate_password(password, user=User(username=username, email=email))
            except ValidationError as exc:
                raise CommandError("the password is refused: " + " ".join(exc.messages)) from None
        with transaction.atomic():
            user = User.objects.filter(username=username).first()
            created = user is None
            if created:
                user = User(username=username, email=email)
            elif email:
                user.email = email
            generated = ""
            if created or new_password:
                generated = "" if password else secrets.token_urlsafe(12)
                user.set_password(password or generated)
            # Django admin (and the RQ dashboard under it) needs is_staff; only admins get it.
            roles = [r for _, r in memberships] or [role]
            user.is_staff = "admin" in roles or user.is_superuser
            user.save()
            user.groups.remove(*groups.values())
            Membership.objects.filter(user=user).delete()
            if memberships:  # a member's role is its membership's, in each workspace
                Membership.objects.bulk_create(Membership(user=user, workspace=w, role=r) for w, r in memberships)
            else:
                user.groups.add(groups[ROLES[role]])
        where = ", ".join(f"{w.name} ({r})" for w, r in memberships)
        self.stdout.write(self.style.SUCCESS(f"{'created' if created else 'updated'} {username} with role {role}"
                                             if not memberships else
                                             f"{'created' if created else 'updated'} {username}: member of {where}"))
        if generated:
            self.stdout.write(f"password for {username} (shown once): {generated}")

    @staticmethod
    def memberships(names: list[str], roles: list[str]) -> list[tuple[Workspace, str]]:
        if not names:
            if len(roles) > 1:
                raise CommandError("give one --role (several are for several --workspace)")
            return []
        if len(roles) not in (1, len(names)):
            raise CommandError(f"give one --role for all workspaces or one after each: {len(names)} workspaces, "
                               f"{len(roles)} roles")
        found = {w.name: w for w in Workspace.objects.filter(name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            raise CommandError(f"no workspace named {', '.join(map(repr, missing))} "
                               "(manage.py workspace add NAME adds one; manage.py workspace list shows them)")
        return [(found[n], roles[i] if len(roles) > 1 else roles[0]) for i, n in enumerate(names)]
