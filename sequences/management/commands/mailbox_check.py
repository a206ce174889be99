"""`manage.py mailbox_check NAME`: try every step of sending and reading, send nothing, say what failed and why."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from mailboxes.imap.errors import ImapError
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox
from mailboxes.secrets import SecretRefused
from mailboxes.selectors import imap_config_for, transport_for
from mailboxes.transports.base import CheckStep
from sequences.services.mailbox_health import mailbox_probe


class Command(BaseCommand):
    help = ("Check a mailbox's connections without sending: SMTP (connect, EHLO, STARTTLS/TLS, AUTH, MAIL FROM, "
            "RSET) and IMAP (login, LIST, EXAMINE each folder); with auth = oauth2 the access token first. "
            "A blocked mailbox whose check passes is unblocked.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="the mailbox name")

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
            steps += [("IMAP", step) for step in imap_check(mailbox)]
        for part, step in steps:
            self.stdout.write(f"{'ok  ' if step.ok else 'FAIL'} {step.step:<14} {part}: {step.detail}")
        failed = sum(not step.ok for _, step in steps)
        if failed:
            raise CommandError(f"{failed} step{'s' if failed > 1 else ''} failed")
        self.stdout.write(f"mailbox {name}: every step passed")


def imap_check(mailbox: Mailbox) -> list[CheckStep]:
    try:
        config = imap_config_for(mailbox)
    except SecretRefused as exc:
        return [CheckStep("login", False, str(exc))]
    how = " with an OAuth2 access token" if config.oauth2 is not None else ""
    try:
        with ImapSession(config) as session:
            return [CheckStep("login", True, f"{config.username} on {config.host}:{config.port}{how}"),
                    *session.check(list(mailbox.reply_folders))]
    except ImapError as exc:
        hint = ""
        if config.oauth2 is not None and "refused with a fresh access token" in str(exc):
            hint = (f" — the token endpoint issued a token but the server refused it: check that {config.username} "
                    "is the account that consented and that the scope includes IMAP")
        return [CheckStep("login", False, f"{exc}{hint}")]
