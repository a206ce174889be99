"""The product run from its Procfile by honcho, as docs/operations.md says, on a SQLite file of its own and the
suite's Redis database: the environment file, one-off `manage.py` commands against it, and honcho itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
HONCHO = Path(sys.executable).with_name("honcho")


class ProcfileInstall:
    """An install in `folder`: its .env (the web server on `port`, loopback only), its database file."""

    def __init__(self, folder: Path, port: int, **extra: str) -> None:
        self.folder = folder
        self.database = folder / "outreach.sqlite3"
        self.env = {
            "DJANGO_SECRET_KEY": "procfile-test-key-0123456789-abcdefghijklmnop",
            "DATABASE_URL": f"sqlite:///{self.database}",
            "REDIS_URL": settings.REDIS_URL,
            "OUTREACH_WEB_ADDR": f"127.0.0.1:{port}",
            "WEB_CONCURRENCY": "1",
            "OUTREACH_HTTPS": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "OUTREACH_DNS_RESOLVER": "off",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
        (folder / ".env").write_text("".join(f"{key}={value}\n" for key, value in self.env.items()))
        # The shell's own settings never leak in: the .env file is the install's whole configuration.
        self.base = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "OUTREACH_"))}

    def manage(self, *args: str, **extra: str) -> str:
        """`manage.py` with the install's environment; its output, or an assertion error that quotes it."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.base | self.env | extra,
                              timeout=120, capture_output=True, text=True)
        assert done.returncode == 0, f"manage.py {args[0]}: {done.stdout}{done.stderr}"
        return done.stdout

    def start(self, log) -> subprocess.Popen:
        """honcho starts every process of the Procfile, in a process group of its own (stop it with killpg)."""
        return subprocess.Popen([str(HONCHO), "-f", "Procfile", "-e", str(self.folder / ".env"), "-d", str(ROOT),
                                 "start"], cwd=ROOT, env=self.base, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
