"""A local SMTP capture server: accepts every message, sends nothing anywhere."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from proving.harness.smtp import SmtpServer


class Command(BaseCommand):
    help = "Run a local SMTP server that captures every message to a folder and delivers nothing."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=2525)
        parser.add_argument("--dir", default=str(settings.VAR_DIR / "captured"), help="where messages are written")

    def handle(self, *args, host, port, dir, **options):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise CommandError("the capture server listens on loopback only")
        directory = Path(dir)
        directory.mkdir(parents=True, exist_ok=True)
        server = SmtpServer(host=host, port=port, keep_messages=False, capture_dir=directory, log=self.stdout)
        try:
            server.start()
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from exc
        self.stdout.write(f"capturing SMTP on {host}:{port} into {directory}\n")
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        server.stop()
