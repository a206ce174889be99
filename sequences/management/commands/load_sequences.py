from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sequences.config.apply import config_apply
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from workspaces.commands import in_named_workspace, workspace_argument


class Command(BaseCommand):
    help = ("Create mailboxes and sequences (by name) from a TOML file, or change only the keys it names in existing "
            "ones, listing each change. A bad file changes nothing.")

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("file", help="TOML file with [[mailbox]] and [[sequence]] tables")

    @in_named_workspace
    def handle(self, *args, file, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            plan = parse(path.read_text(encoding="utf-8"))
            for warning in plan.warnings:
                self.stderr.write(f"warning: {warning}")
            result = config_apply(plan)
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text ({exc})") from None
        except ConfigError as exc:
            raise CommandError(f"{file}: nothing was changed:\n  " + "\n  ".join(exc.errors)) from None
        for line in result.created:
            self.stdout.write(f"created {line}")
        for line in result.updated:
            self.stdout.write(f"updated {line}")
        for line in result.changes:
            self.stdout.write(f"  {line}")
        for line in result.unchanged:
            self.stdout.write(f"unchanged {line}")
        self.stdout.write(self.style.SUCCESS(f"{len(result.created)} created, {len(result.updated)} updated, "
                                             f"{len(result.unchanged)} unchanged"))
