"""Add a user of the operator UI with one role, or change an existing user's role.

    python manage.py add_user alice --role operator
    python manage.py add_user bob --role staff --email bob@example.com
    echo "$PASSWORD" | python manage.py add_user carol --role admin --password-stdin

Without --password-stdin a random password is generated and printed once.
Roles are the groups created by sequences/migrations/0002_roles.py; admins
also get Django admin access (is_staff) for mailboxes, users and the RQ
dashboard.
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

ROLES = {"operator": "operators", "staff": "staff", "admin": "admins"}


class Command(BaseCommand):
    help = "Add a user with a role (operator, staff or admin), or change an existing user's role."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=sorted(ROLES))
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
        parser.add_argument("--new-password", action="store_true",
                            help="for an existing user: also set a new (generated or --password-stdin) password")

    def handle(self, *args, username: str, role: str, email: str, password_stdin: bool, new_password: bool,
               **options):
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
            user.is_staff = role == "admin" or user.is_superuser
            user.save()
            user.groups.remove(*groups.values())
            user.groups.add(groups[ROLES[role]])
        self.stdout.write(self.style.SUCCESS(f"{'created' if created else 'updated'} {username} with role {role}"))
        if generated:
            self.stdout.write(f"password for {username} (shown once): {generated}")
