"""A local SMTP capture server: accepts every message, sends nothing anywhere."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from aiosmtpd.controller import Controller
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class CaptureHandler:
    def __init__(self, directory: Path, out):
        self.directory = directory
        self.out = out
        self.count = 0

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        path = self.directory / f"{self.count:06d}.eml"
        path.write_bytes(envelope.content)
        subject = next(
            (line[9:].strip() for line in envelope.content.decode("utf-8", "replace").splitlines()
             if line.lower().startswith("subject: ")),
            "",
        )
        self.out.write(f"captured {envelope.mail_from} -> {', '.join(envelope.rcpt_tos)}: {subject!r} ({path})\n")
        self.out.flush()
        return "250 2.0.0 captured"


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
        controller = Controller(CaptureHandler(directory, self.stdout), hostname=host, port=port)
        try:
            controller.start()
        except OSError as exc:
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from exc
        self.stdout.write(f"capturing SMTP on {host}:{port} into {directory}\n")
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        controller.stop()
