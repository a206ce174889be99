"""A real Dovecot 2.3 IMAP server for tests, started from a config we write.

Usage: the ``dovecot`` fixture in tests/conftest.py (users alice/alicepw and bob/bobpw), or
``Dovecot(users).start()`` directly for tests that kill or restart a server.

Pitfalls found while building this (keep them next to the code they explain):

- Dovecot refuses uid 0 for mail: the mail dir is chowned to ``nobody``.
- The auth process runs as user ``dovecot`` and the imap process as
  ``nobody``: every directory on the path to the users file and the mail dir
  must be traversable by them. ``tempfile.mkdtemp()`` is 0700 (chmod 0755),
  and pytest's ``tmp_path_factory`` lives under ``/tmp/pytest-of-root``,
  which pytest keeps at 0700 -- so the harness does NOT use tmp_path_factory;
  it makes its own short dir in /tmp. Symptom otherwise: login fails with
  "Temporary authentication failure" (reason only in the Dovecot log).
- base_dir holds unix sockets (108-byte path limit): keep the temp dir short.
- The container's PID 1 does not necessarily reap orphans, so a daemonized
  master that exits can linger as a zombie and "still be running" by
  ``kill(pid, 0)``. We run the master in the foreground (``-F``) as our own
  child and ``wait()`` for it, instead of ``dovecot -c CONF`` daemonizing.
- Failed logins are slow: ``auth_failure_delay`` (default 2 s) and, worse,
  the anvil per-IP auth penalty, which 2.3.19 applies even with
  ``auth_failure_delay = 0``: after 2 failures from 127.0.0.1 a *correct*
  login waits 8-15 s and imapclient's timeout fires. The config sets the
  delay to 0 and disables the ``anvil-auth-penalty`` listener (``mode = 0``),
  which turns the penalty off. A failed login still costs ~0.5 s (2.3.19
  flushes delayed failures on a 500 ms timer).
- IDLE pushes come from inotify; without it Dovecot falls back to checking
  every ``mailbox_idle_check_interval`` (30 s by default). We set 1 s so IDLE
  tests never depend on inotify limits of the machine.
- Dovecot re-reads the passwd-file when its mtime or size changes, so users
  can be added to a running server (``add_users``) -- but it looks at the file
  at most once per second of its clock: a login in the same second as the
  write may be judged against the old file (AUTHENTICATIONFAILED for the new
  user). ``add_users`` therefore returns only once that second has passed.
- A graceful stop (SIGTERM to the master) always takes ~1 s: the master
  sleeps 1 s after signalling its log process (seen with strace). stop() and
  restart() pay it; fixture teardown uses kill() instead (~10 ms).
- imapclient's ``append()`` returns the tagged response text
  (``b"[APPENDUID <validity> <uid>] Append completed."``), not the UID: parse it.
- A message expunged by another session while ours still lists it is
  answered with ``OK [EXPUNGEISSUED]`` and ``BODY[] NIL``, ``RFC822.SIZE 0``,
  ``INTERNALDATE 01-Jan-1970`` -- not a NO, and not missing from the answer.
- SELECT reports HIGHESTMODSEQ only after ``ENABLE CONDSTORE`` (which must be
  sent before the first SELECT).
- IDLE does not announce mail that arrived before IDLE started: Dovecot
  2.3.19 reports it only when the client sends DONE (measured: select,
  another session appends, IDLE -> nothing for 6 s, then EXISTS with the DONE
  reply). Mail that arrives while the client runs another command is
  announced with *that* command's response (``* N EXISTS``, kept by imaplib in
  ``untagged_responses``) and never again. mailboxes.imap.idle's idle_wait checks
  the pending responses and sends a NOOP before IDLE for both reasons.
- A new UIDVALIDITY on disk: replace ``dovecot-uidlist`` (rename, new inode,
  owned by nobody) with its ``V<uidvalidity>`` field changed; Dovecot logs
  "UIDVALIDITY changed" and resets its index itself, also under a session
  that has the folder selected. Do NOT delete ``dovecot.index*`` while a
  session is open: its imap process keeps writing the old transaction log
  and the next SELECT fails with ``[SERVERBUG]`` ("duplicate transaction log
  sequence"). After the change, a re-SELECT in the already-open session
  omitted HIGHESTMODSEQ once (so FolderStatus.highestmodseq may be None).
- Sieve (Pigeonhole, Debian's dovecot-sieve): ``sieve_submission_port`` turns on local delivery with Sieve.
  ``deliver`` runs dovecot-lda as root; it drops to the userdb's uid (nobody), so the user's home and
  script are chowned to nobody (the script is compiled next to itself). Vacation answers only when the
  recipient's address is in To/Cc: name the user by its full address. It sends through
  ``submission_host`` (SMTP, synchronously: the reply has been handed over when dovecot-lda exits) and
  logs each decision to the same log ("sent vacation response to <x>", "discarding vacation response
  to mailinglist recipient <x>" for mail with List-* headers).
"""

from __future__ import annotations

import atexit
import grp
import math
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from imapclient import IMAPClient

from proving.harness.stack import free_port

DOVECOT_BIN = "dovecot"
LDA_BIN = "/usr/lib/dovecot/dovecot-lda"
SIEVE_PLUGIN = "/usr/lib/dovecot/modules/lib90_sieve_plugin.so"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


_LIVE: set[Dovecot] = set()  # not yet cleaned up


@atexit.register
def _cleanup_leftovers() -> None:
    # An interrupted test run must not leave masters behind (they hold ports
    # and, orphaned, may never be reaped) nor temp dirs.
    for server in list(_LIVE):
        server.cleanup()


def dovecot_available() -> bool:
    return shutil.which(DOVECOT_BIN) is not None


# OAuth2 (RECIPES.md): the oauth2 passdb answers only the token mechanisms and asks the introspection
# endpoint (RFC 7662, form POST) about every token; no auth cache, so a revoked token fails at once.
_OAUTH2_PASSDB = """\
passdb {{
  driver = oauth2
  mechanisms = {mechanisms}
  args = {root}/dovecot-oauth2.conf.ext
}}
"""
_OAUTH2_EXT = """\
introspection_mode = post
introspection_url = {url}
username_attribute = email
active_attribute = active
active_value = true
force_introspection = yes
"""

# Local delivery with Sieve (`deliver`): each user's active script is ~/.dovecot.sieve; what Sieve sends
# (vacation replies) goes over SMTP to the test's server.
_SIEVE = """\
postmaster_address = postmaster@harness.test
submission_host = 127.0.0.1:{port}
protocol lda {{
  mail_plugins = $mail_plugins sieve
}}
plugin {{
  sieve = file:~/sieve;active=~/.dovecot.sieve
}}
"""

_CONFIG = """\
# Written by proving/harness/dovecot.py; self-contained, nothing from /etc/dovecot.
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
info_log_path = {root}/dovecot.log
instance_name = outreach-test-{port}

protocols = imap
listen = 127.0.0.1
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login{oauth2_mechanisms}
auth_failure_delay = 0
auth_verbose = yes
# Dovecot 2.3.19 ignores auth_failure_delay = 0 for the per-IP penalty: after
# one failed login every login from 127.0.0.1 (good ones too) waits 4, 8,
# 15 s. Without this socket the auth process runs with the penalty disabled.
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}

mail_location = maildir:{root}/mail/%u/Maildir
mail_uid = nobody
mail_gid = nogroup
first_valid_uid = 1
mailbox_idle_check_interval = 1 secs

namespace inbox {{
  inbox = yes
  separator = {separator}
  prefix = {prefix}
}}

{oauth2_passdb}passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = static
  args = uid=nobody gid=nogroup home={root}/mail/%u
}}

service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""


class Dovecot:
    """One Dovecot master process serving IMAP on 127.0.0.1:<port>."""

    host = "127.0.0.1"

    def __init__(self, users: dict[str, str], extra_config: str = "", *, separator: str = "/",
                 certificates=None, oauth2_introspection_url: str = "",
                 oauth2_mechanisms: tuple[str, ...] = ("xoauth2", "oauthbearer"), sieve_submission_port: int = 0):
        """`separator = "."` serves folders as Cyrus does (INBOX.Bounces: prefix "INBOX."); `certificates`
        (proving.harness.tls.Certificates) turn on STARTTLS with that certificate; `oauth2_introspection_url`
        (proving.harness.oauth.OAuthServer) adds AUTHENTICATE XOAUTH2 and OAUTHBEARER, validated there;
        `sieve_submission_port` turns on delivery through Sieve (`deliver`, `sieve_script`), which sends its
        messages (vacation replies) to the SMTP server on 127.0.0.1 at that port."""
        self.sieve_submission_port = sieve_submission_port
        if sieve_submission_port and not Path(SIEVE_PLUGIN).exists():
            raise RuntimeError("Pigeonhole is not installed (apt-get install -y dovecot-sieve); the Sieve tests "
                               "need it")
        self.oauth2_introspection_url = oauth2_introspection_url
        self.oauth2_mechanisms = " ".join(oauth2_mechanisms)
        if not dovecot_available():
            raise RuntimeError(
                "dovecot is not installed (apt-get install -y dovecot-imapd); the IMAP tests need a real server"
            )
        self.users = dict(users)
        # Appended to the generated config, e.g. "imap_capability = IMAP4rev1"
        # to play a server without IDLE.
        self.extra_config = extra_config
        self.separator = separator
        self.certificates = certificates
        self.port = free_port()  # start() reports a clash (the log says "Address already in use")
        self.root = Path(tempfile.mkdtemp(prefix="dovecot-"))
        self.root.chmod(0o755)  # auth runs as `dovecot`, imap as `nobody`
        self._proc: subprocess.Popen | None = None
        _LIVE.add(self)
        self._write_files()

    # -- files -------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.root / "dovecot.conf"

    @property
    def log_path(self) -> Path:
        return self.root / "dovecot.log"

    def maildir(self, user: str, folder: str = "INBOX") -> Path:
        base = self.root / "mail" / user / "Maildir"
        if folder.upper() == "INBOX":
            return base
        # Maildir++ layout: hierarchy "/" in IMAP becomes "." on disk.
        return base / ("." + folder.replace("/", "."))

    def _write_files(self) -> None:
        if self.certificates is not None:
            ssl = (f"ssl = yes\nssl_cert = <{self.certificates.cert_file}\nssl_key = <{self.certificates.key_file}")
        else:
            ssl = "ssl = no"
        prefix = "INBOX." if self.separator == "." else ""
        oauth2 = {"oauth2_mechanisms": "", "oauth2_passdb": ""}
        if self.oauth2_introspection_url:
            (self.root / "dovecot-oauth2.conf.ext").write_text(_OAUTH2_EXT.format(url=self.oauth2_introspection_url))
            oauth2 = {"oauth2_mechanisms": f" {self.oauth2_mechanisms}",
                      "oauth2_passdb": _OAUTH2_PASSDB.format(root=self.root, mechanisms=self.oauth2_mechanisms)}
        sieve = _SIEVE.format(port=self.sieve_submission_port) if self.sieve_submission_port else ""
        self.config_path.write_text(_CONFIG.format(root=self.root, port=self.port, ssl=ssl, separator=self.separator,
                                                   prefix=prefix, **oauth2) + sieve + self.extra_config + "\n")
        mail = self.root / "mail"
        mail.mkdir(exist_ok=True)
        _chown_nobody(mail)
        self._write_users()

    def _write_users(self) -> None:
        lines = "".join(f"{u}:{{PLAIN}}{p}::::::\n" for u, p in self.users.items())
        path = self.root / "users"
        tmp = self.root / "users.tmp"
        tmp.write_text(lines)
        tmp.chmod(0o644)
        os.replace(tmp, path)  # atomic: a concurrent login never sees half a file

    def add_users(self, users: dict[str, str]) -> None:
        """Add users to a running (or stopped) server. Returns once Dovecot will see them: it re-reads the
        passwd-file at most once per second, so a login in the second of the write could still be refused."""
        self.users.update(users)
        self._write_users()
        written = time.time()
        time.sleep(math.floor(written) + 1.05 - written)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- lifecycle ---------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def master_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        if self.running:
            return
        # A master killed with SIGKILL leaves its pid file behind; Dovecot
        # would refuse to start only if that pid is alive, but drop it anyway.
        (self.root / "run" / "master.pid").unlink(missing_ok=True)
        self._proc = subprocess.Popen(
            [DOVECOT_BIN, "-F", "-c", str(self.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # Own process group: kill() can SIGKILL the master and all children.
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                self._close_proc()
                raise RuntimeError(f"dovecot exited during start:\n{err}\n{self.log()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                    s.settimeout(2.0)
                    if s.recv(64).startswith(b"* OK"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"dovecot did not accept on port {self.port}:\n{self.log()}")
            time.sleep(0.01)

    def stop(self) -> None:
        """Graceful stop: SIGTERM to the master pid, wait until it is gone."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
                return
        self._reap_group()
        self._close_proc()

    def restart(self) -> None:
        """Stop and start again on the same port with the same mail dir."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """SIGKILL the master and every child (the server 'dies mid-fetch')."""
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait()
        self._reap_group()
        self._close_proc()

    def _reap_group(self) -> None:
        # Children (imap, auth, log ...) are in the master's process group;
        # make sure none outlives the master, or the next start on the same
        # port could race a lingering listener.
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _close_proc(self) -> None:
        if self._proc is not None and self._proc.stderr:
            self._proc.stderr.close()
        self._proc = None

    def cleanup(self) -> None:
        """Kill and remove the temp dir.

        SIGKILL, not stop(): a graceful stop always costs ~1 s (the master
        sleeps 1 s after signalling its log process), and the mail dir is
        about to be deleted anyway.
        """
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)
        _LIVE.discard(self)

    def __enter__(self) -> Dovecot:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()

    # -- IMAP helpers (as the user, over the network) ---------------------

    def client(self, user: str) -> IMAPClient:
        """A logged-in imapclient connection as *user*; caller logs out."""
        c = IMAPClient(self.host, port=self.port, ssl=False, timeout=10)
        c.login(user, self.users[user])
        return c

    def append(self, user: str, folder: str, raw: bytes, flags=(), when=None) -> int:
        """APPEND as *user*; returns the UID from the APPENDUID response."""
        with self.client(user) as c:
            resp = c.append(folder, raw, flags=flags, msg_time=when)
        m = re.search(rb"\[APPENDUID \d+ (\d+)\]", resp)
        if not m:
            raise RuntimeError(f"no APPENDUID in APPEND response: {resp!r}")
        return int(m.group(1))

    # -- local delivery through Sieve (with sieve_submission_port) -------

    def sieve_script(self, user: str, script: str) -> None:
        """Make *script* the user's active Sieve script."""
        home = self.root / "mail" / user
        home.mkdir(exist_ok=True)
        path = home / ".dovecot.sieve"
        path.write_text(script)
        for owned in (home, path):
            _chown_nobody(owned)  # dovecot-lda runs as nobody and compiles the script beside it

    def deliver(self, user: str, raw: bytes, *, sender: str) -> None:
        """Deliver *raw* to *user* as the MTA would (envelope sender *sender*), through the user's Sieve script."""
        if not self.sieve_submission_port:
            raise RuntimeError("deliver needs Dovecot(..., sieve_submission_port=PORT)")
        done = subprocess.run([LDA_BIN, "-c", str(self.config_path), "-d", user, "-f", sender], input=raw,
                              capture_output=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"dovecot-lda exited with {done.returncode}: {done.stderr.decode(errors='replace')}"
                               f"\n{self.log()}")

    def create_folder(self, user: str, folder: str) -> None:
        with self.client(user) as c:
            if not c.folder_exists(folder):
                c.create_folder(folder)

    def flags(self, user: str, folder: str, uid: int) -> tuple:
        """FLAGS of one message, read from a fresh read-only session."""
        with self.client(user) as c:
            c.select_folder(folder, readonly=True)
            return tuple(c.fetch([uid], ["FLAGS"])[uid][b"FLAGS"])

    def reset_uidvalidity(self, user: str, folder: str) -> int:
        """Make the server report a new UIDVALIDITY for *folder*; returns it.

        Same messages, new UIDVALIDITY: what a server does after its index is
        rebuilt or a mailbox is restored. Done on disk (dovecot-uidlist), so
        it works for INBOX too, which cannot be deleted and recreated, and
        while a session has the folder selected (its next SELECT sees it).
        """
        with self.client(user) as c:
            old = c.select_folder(folder, readonly=True)[b"UIDVALIDITY"]
        uidlist = self.maildir(user, folder) / "dovecot-uidlist"
        new = max(old + 1, int(time.time()))
        # An imap process of an earlier session that is still closing can
        # write the uidlist back with the old header (seen under load): check
        # what a fresh SELECT reports, and write again until it is the new one.
        for attempt in range(50):
            header, _, rest = uidlist.read_text().partition("\n")
            header, n = re.subn(r"\bV\d+\b", f"V{new}", header)
            if n != 1:
                raise RuntimeError(f"unexpected dovecot-uidlist header: {header!r}")
            # Replace, as Dovecot itself does (new inode, so every imap process
            # notices), owned by nobody like the original.
            tmp = uidlist.with_name("dovecot-uidlist.harness-tmp")
            tmp.write_text(header + "\n" + rest)
            st = uidlist.stat()
            os.chown(tmp, st.st_uid, st.st_gid)
            tmp.chmod(st.st_mode & 0o777)
            os.replace(tmp, uidlist)
            # Dovecot's index keeps the UIDVALIDITY too; a process that synced it with the old list hands that
            # back. When the list alone did not take, the index goes: the next SELECT rebuilds it from the list
            # (not at once: a session that has the folder open would fail on a missing index).
            for index in uidlist.parent.glob("dovecot.index*") if attempt else ():
                index.unlink(missing_ok=True)
            with self.client(user) as c:
                got = c.select_folder(folder, readonly=True)[b"UIDVALIDITY"]
            if got == new:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"UIDVALIDITY of {user}/{folder} is {got}, wanted {new} (was {old})")
        return got


def _chown_nobody(path: Path) -> None:
    os.chown(path, pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)


DEFAULT_USERS = {"alice": "alicepw", "bob": "bobpw"}

