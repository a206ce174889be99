"""Fault drills on the inbound path: Dovecot killed and UIDVALIDITY changed, fuzzed mail, oversized headers."""


from __future__ import annotations

import contextlib
import os
import secrets
import signal
import statistics
import time
from collections import Counter
from pathlib import Path

from django.conf import settings
from django.db import connection, connections

from inbound.models import InboundMessage
from proving.drills.audit import audit
from proving.drills.faults.base import (
    IMAP_PASSWORD_ENV,
    Ctx,
    Row,
    S,
    enroll_many,
    make_mailbox,
    make_sequence,
    send_step_one_in_process,
)
from proving.harness import mails
from proving.harness.stack import DrillError
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.sending_mailbox import sends_from

# --- IMAP --------------------------------------------------------------------------------------


def drill_imap(ctx: Ctx, *, n: int, kills: int) -> list[Row]:
    from inbound.ingest.poll import mailbox_poll
    from mailboxes.imap.errors import ImapError
    from proving.harness.dovecot import Dovecot, dovecot_available
    from proving.harness.smtp import SmtpServer

    row = Row("imap kill/uidvalidity/dups", runs=n)
    if not dovecot_available():
        row.status = "SKIP"
        row.notes.append("dovecot is not installed (apt-get install -y dovecot-imapd)")
        return [row]
    started = time.monotonic()
    saved_env = os.environ.get(IMAP_PASSWORD_ENV)
    with contextlib.ExitStack() as stack:
        dovecot = Dovecot({"drill": "drillpw"})
        stack.callback(dovecot.cleanup)
        dovecot.start()
        dovecot.create_folder("drill", "Archive")
        os.environ[IMAP_PASSWORD_ENV] = "drillpw"
        stack.callback(lambda: os.environ.pop(IMAP_PASSWORD_ENV, None) if saved_env is None
                       else os.environ.__setitem__(IMAP_PASSWORD_ENV, saved_env))
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        mailbox = make_mailbox("imap", port=smtp.port, imap_host=dovecot.host, imap_port=dovecot.port,
                               imap_username="drill", imap_password_env=IMAP_PASSWORD_ENV,
                               imap_folders=["INBOX", "Archive"])
        step1 = enroll_many(make_sequence(mailbox, waits=(0, 86400)), n, "imap")
        send_step_one_in_process(step1)
        jobs = list(SendJob.objects.filter(pk__in=step1).select_related("enrollment__contact"))
        replies = {job.enrollment_id: mails.drill_reply(to_message_id=job.message_id,
                                                        sender=job.enrollment.contact.email, to=mailbox.address)
                   for job in jobs}
        with dovecot.client("drill") as client:
            for raw in replies.values():
                client.append("INBOX", raw)
                client.append("INBOX", raw)  # delivered twice
                client.append("Archive", raw)  # and copied to another folder

        killed = 0
        batch = max(2, n // 5)

        def poll_until_done(allow_kills: bool) -> int:
            nonlocal killed
            polls = 0
            while True:
                polls += 1
                if polls > 50:
                    raise DrillError("imap: the poller made no progress in 50 passes")

                def progress(folder, done, total):
                    nonlocal killed
                    if allow_kills and killed < kills and done >= batch:
                        dovecot.kill()  # mid-fetch: between two batches of one pass
                        killed += 1

                try:
                    result = mailbox_poll(mailbox_id=mailbox.pk, batch_size=batch, progress=progress)
                except ImapError:
                    dovecot.start()
                    continue
                if result.fetched == 0:
                    return polls

        poll_until_done(allow_kills=True)
        # Dovecot re-reads dovecot-uidlist only while the maildir looks recently changed (about a second
        # after the last change); the harness's reset_uidvalidity replaces the file and checks at once, so
        # touch cur/ and new/ first or, seconds after the last delivery, the new UIDVALIDITY is not seen.
        for sub in ("cur", "new"):
            os.utime(dovecot.maildir("drill", "INBOX") / sub)
        dovecot.reset_uidvalidity("drill", "INBOX")
        poll_until_done(allow_kills=False)
        redelivered = list(replies.values())[: max(1, n // 4)]
        with dovecot.client("drill") as client:
            for raw in redelivered:
                client.append("INBOX", raw)  # the same reply once more, after everything
            counts = {}
            for folder in ("INBOX", "Archive"):
                client.select_folder(folder, readonly=True)
                counts[folder] = len(client.search("ALL"))
        poll_until_done(allow_kills=False)
        received = smtp.message_ids()

    enrollment_ids = list(replies)
    row.audit = audit(SendJob.objects.filter(enrollment_id__in=enrollment_ids), received)
    reply_ids = {str(mail_id) for mail_id in InboundMessage.objects.filter(mailbox=mailbox).values_list(
        "message_id", flat=True)}
    acting = InboundMessage.objects.filter(mailbox=mailbox, duplicate_of=None).count()
    if acting != n or len(reply_ids) != n:
        row.problems.append(f"{acting} inbound rows acted for {n} distinct replies")
    stops = Counter(TimelineEvent.objects.filter(enrollment_id__in=enrollment_ids, kind="enrollment_stopped")
                    .values_list("enrollment_id", flat=True))
    twice = [e for e, c in stops.items() if c > 1]
    if twice or len(stops) != n:
        row.problems.append(f"{len(stops)} of {n} enrollments stopped; {len(twice)} stopped more than once")
    not_stopped = Enrollment.objects.filter(pk__in=enrollment_ids).exclude(status=Enrollment.Status.STOPPED).count()
    if not_stopped:
        row.problems.append(f"{not_stopped} enrollments not stopped after their reply")
    follow_ups = Counter(SendJob.objects.filter(enrollment_id__in=enrollment_ids, step__position=2)
                         .values_list("state", "cancel_reason"))
    if follow_ups != Counter({(S.CANCELED, "replied"): n}):
        row.problems.append(f"follow-ups: {dict(follow_ups)} (expected {n} canceled, replied)")
    from mailboxes.models import ImapCursor

    rows_now = {}
    for cursor in ImapCursor.objects.filter(mailbox=mailbox):
        rows_now[cursor.folder] = InboundMessage.objects.filter(mailbox=mailbox, folder=cursor.folder,
                                                                uidvalidity=cursor.uidvalidity).count()
    if rows_now != counts:
        row.problems.append(f"messages on the server {counts} but recorded under the current UIDVALIDITY {rows_now}")
    total = InboundMessage.objects.filter(mailbox=mailbox).count()
    rescans = ImapCursor.objects.get(mailbox=mailbox, folder="INBOX").rescans
    row.notes += [f"Dovecot SIGKILLed mid-fetch (between two FETCH batches of a pass) {killed}x; "
                  "the next pass resumed from the cursor",
                  f"UIDVALIDITY changed once (rescans {rescans}): {2 * n} messages seen again, 0 acted",
                  f"{total} inbound rows for {n} replies (twice in INBOX, a copy in Archive, the rescan, "
                  f"{len(redelivered)} redelivered): {acting} acted, every enrollment stopped once"]
    row.seconds = time.monotonic() - started
    return [row.settle()]


# --- fuzz and oversized headers ----------------------------------------------------------------


class _Counting:
    """Counts (and swallows) records of a chatty library logger during the fuzz run."""

    def __init__(self, name: str):
        import logging

        self.logger = logging.getLogger(name)
        self.count = 0
        handler = logging.Handler()
        handler.emit = lambda record: setattr(self, "count", self.count + 1)  # type: ignore[method-assign]
        self.handler = handler

    def __enter__(self):
        self.saved = (self.logger.propagate, list(self.logger.handlers))
        self.logger.propagate = False
        self.logger.handlers = [self.handler]
        return self

    def __exit__(self, *exc):
        self.logger.propagate, self.logger.handlers = self.saved


def _multipart_sample(to_message_id: str, sender: str) -> bytes:
    return (
        f"From: =?utf-8?Q?Ad=C3=A9la?= <{sender}>\r\nTo: fuzz@drill.invalid\r\n"
        "Subject: =?utf-8?B?UmU6IEhlbGxvIOKAlCBzdXBlcg==?=\r\n"
        f"Message-ID: <mp.{secrets.token_hex(6)}@drill.invalid>\r\n"
        f"In-Reply-To: {to_message_id}\r\nReferences: <older@drill.invalid> {to_message_id}\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n--b1\r\n"
        "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        "Merci, pas maintenant. D=E9sol=E9e.\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\nPHA+TWVyY2ksIHBhcyBtYWludGVuYW50LjwvcD4=\r\n--b1--\r\n"
    ).encode()


def drill_fuzz(ctx: Ctx, *, count: int) -> list[Row]:
    from inbound.ingest.record import inbound_record
    from proving.drills.fuzz import mutants
    from proving.harness.smtp import SmtpServer

    row = Row("fuzz inbound", runs=count)
    with contextlib.ExitStack() as stack:
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        mailbox = make_mailbox("fuzz", port=smtp.port)
        step1 = enroll_many(make_sequence(mailbox, waits=(0, 86400)), 5, "fuzz")
        send_step_one_in_process(step1)
        received = smtp.message_ids()
    a, b, c, d, e = SendJob.objects.filter(pk__in=step1).order_by("pk").select_related("enrollment__contact")
    samples = [
        mails.reply(to_message_id=a.message_id, sender=a.enrollment.contact.email),
        mails.dsn(original_message_id=b.message_id, recipient=b.enrollment.contact.email),
        mails.arf(original_message_id=c.message_id, recipient=c.enrollment.contact.email),
        mails.out_of_office(to_message_id=d.message_id, sender=d.enrollment.contact.email),
        mails.reply(to_message_id=e.message_id, sender=e.enrollment.contact.email,
                    body="Please unsubscribe me and remove me from your list."),
        _multipart_sample(a.message_id, a.enrollment.contact.email),
    ]
    crashes: list[tuple[int, list[str], str]] = []
    crash_dir = Path(settings.VAR_DIR) / "drill-crashes" / time.strftime("%Y%m%d-%H%M%S")
    not_recorded = 0
    timings: list[tuple[float, list[str], int]] = []
    started = time.monotonic()
    with _Counting("flufl.bounce") as library_noise:
        for i, (names, raw) in enumerate(mutants(samples, count=count, seed=ctx.seed)):
            t0 = time.monotonic()
            try:
                result = inbound_record(mailbox_id=mailbox.pk, folder="FUZZ", uidvalidity=1,
                                        fetched=mails.fetched(raw, uid=i + 1))
                not_recorded += result.inbound_id is None
            except Exception as exc:  # noqa: BLE001 - the finding this drill exists for
                crashes.append((i + 1, names, f"{type(exc).__name__}: {exc}"[:300]))
                connection.close()
                crash_dir.mkdir(parents=True, exist_ok=True)
                (crash_dir / f"{i + 1:05d}-{'+'.join(names)}.eml").write_bytes(raw)
            timings.append((time.monotonic() - t0, names, len(raw)))
            if (i + 1) % 1000 == 0 and i + 1 < count:
                ctx.say(f"fuzz: {i + 1:,} of {count:,} inbound mails through ingestion, {len(crashes)} crashed")
    row.seconds = time.monotonic() - started
    rows = InboundMessage.objects.filter(mailbox=mailbox, folder="FUZZ")
    recorded = rows.count()
    kinds = Counter(rows.values_list("kind", flat=True))
    parse_errors = rows.exclude(parse_error="").count()
    row.audit = audit(SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__")), received)
    if crashes:
        row.problems.append(f"{len(crashes)} messages crashed inbound_record (inputs saved in {crash_dir}); "
                            f"first: uid {crashes[0][0]} {'+'.join(crashes[0][1])}: {crashes[0][2]}")
    if recorded + len(crashes) != count or not_recorded:
        row.problems.append(f"{count} messages, {recorded} recorded, {len(crashes)} crashed, "
                            f"{not_recorded} answered 'already recorded'")
    durations = sorted(t for t, _, _ in timings)
    slow = sorted(timings, key=lambda t: -t[0])[:3]
    row.notes += [
        f"{recorded} recorded: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        + f"; {parse_errors} with a parse error",
        f"per message p50 {statistics.median(durations) * 1000:.0f} ms, p99 "
        f"{durations[int(len(durations) * 0.99) - 1] * 1000:.0f} ms, max {durations[-1] * 1000:.0f} ms "
        f"({'+'.join(slow[0][1])}, {slow[0][2]} bytes)",
        f"flufl.bounce logged {library_noise.count} detector exceptions (caught by the classifier)",
    ]
    row.extra.update(kinds=dict(kinds), crashes=len(crashes), recorded=recorded, parse_errors=parse_errors,
                     p50_ms=round(statistics.median(durations) * 1000, 1), max_ms=round(durations[-1] * 1000, 1))
    return [row.settle()]


def _timed_parse(raw: bytes, *, budget: float) -> float | None:
    """Seconds inbound.ingest.parse takes on `raw` in a forked child, or None past `budget` (child killed)."""
    from inbound.ingest.parse import parse

    connections.close_all()
    pid = os.fork()
    if pid == 0:  # the child: CPU only, no database
        try:
            parse(raw)
        finally:
            os._exit(0)
    started = time.monotonic()
    while time.monotonic() - started < budget:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return time.monotonic() - started
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def drill_big_headers(ctx: Ctx, *, budget: float = 5.0) -> list[Row]:
    """One long header per message. A poller that spends minutes on one mail delays every reply behind it."""
    from inbound.ingest.parse import parse

    base = mails.drill_reply(to_message_id="<x@drill.invalid>", sender="big@drill.invalid", to="big@drill.invalid")
    parse(base)  # warm imports outside the timings
    row = Row("bigheader ingest time", runs=0)
    started = time.monotonic()
    figures = []
    for header in ("Content-Type", "From", "References", "Subject"):
        line = []
        for size in (6_000, 24_000, 100_000):
            value = (b"<a@b> " * (size // 6)) if header != "Subject" else (b"word " * (size // 5))
            took = _timed_parse(header.encode() + b": " + value + b"\r\n" + base, budget=budget)
            row.runs += 1
            line.append(f"{size // 1000} KB {'>' + str(budget) if took is None else f'{took:.2f}'}s")
            figures.append({"header": header, "bytes": size, "seconds": took})
            if took is None:
                row.problems.append(f"a {size // 1000} KB {header} header: parse did not finish in {budget:.0f}s")
                break  # larger ones only take longer
        row.notes.append(f"{header}: " + ", ".join(line))
    row.seconds = time.monotonic() - started
    row.extra["figures"] = figures
    if row.problems:
        row.notes.append("header parsing grows faster than linearly with the header's length: one crafted mail "
                         "can hold the poller (and every reply behind it) for minutes; inbound.ingest should "
                         "cap header lengths before parsing")
    return [row.settle()]
