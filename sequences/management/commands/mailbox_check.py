"""`manage.py mailbox_check NAME`: try every step of sending and reading, send nothing, say what failed and why."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from mailboxes.checks import imap_login_check
from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from sequences.services.domain_auth import mailbox_domain_auth_check
from sequences.services.imap_login import imap_login_checked
from sequences.services.mailbox_health import mailbox_probe
from workspaces.commands import in_named_workspace, workspace_argument


class Command(BaseCommand):
    help = ("Check a mailbox's connections without sending: SMTP (connect, EHLO, STARTTLS/TLS, AUTH, MAIL FROM, "
            "RSET) and IMAP (login, LIST, EXAMINE each folder); with auth = oauth2 the access token first. "
            "A blocked mailbox whose check passes is unblocked. Also reads the sending domain's SPF, DKIM and "
            "DMARC records and records what they say (a failing record is listed, not counted as a failed step).")

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("name", help="the mailbox name")

    @in_named_workspace
    def handle(self, *args, name, **options):
        mailbox = Mailbox.objects.filter(name=name).first()
        if mailbox is None:
            raise CommandError(f"no mailbox {name!r}")
        if mailbox.blocked_at:
            # The same check as the blocked mailbox's probe, recorded (and unblocking it when it passes).
            result = mailbox_probe(mailbox_id=mailbox.pk, actor="command", forced=True)
            sending = list(result.steps)
            self.stdout.write(f"sending: {result.text}")
        else:
            sending = transport_for(mailbox).check(sender=mailbox.address)
        steps = [("SMTP" if mailbox.transport_kind == "smtp" else "ESP", step) for step in sending]
        if mailbox.has_imap:
            reading, _, login = imap_login_check(mailbox)
            imap_login_checked(mailbox_id=mailbox.pk, login=login)  # a refusal shows as refused credentials
            steps += [("IMAP", step) for step in reading]
        for part, step in steps:
            self.stdout.write(f"{'ok  ' if step.ok else 'FAIL'} {step.step:<14} {part}: {step.detail}")
        for record in mailbox_domain_auth_check(mailbox_id=mailbox.pk, actor="command").checks:
            mark = {"pass": "ok  ", "fail": "WARN"}.get(record.verdict, "?   ")
            self.stdout.write(f"{mark} {'DNS':<14} {record.line}")
        failed = sum(not step.ok for _, step in steps)
        if failed:
            raise CommandError(f"{failed} step{'s' if failed > 1 else ''} failed")
        self.stdout.write(f"mailbox {name}: every step passed")

