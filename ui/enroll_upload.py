"""Enroll contacts from the browser: upload a CSV, map its columns, see a dry run, then enroll in the background.

The rows are checked as the `enroll` command checks them (`sequences.contact_rows.row_check`) and written by
the one batch path, `enrollments_create_batch` (a refused row changes nothing); the dry run asks the same
service what it would refuse (`enrollments_dry_run_counts`). Suppressed addresses are never
enrolled. One upload's counts (`EnrollCounts`: enrolled, rejected, already enrolled, suppressed) are the same on
its dry run, its progress and its result: the run is given the rows the dry run would enroll, and the rows it
refused by kind. Each step is a page that can be reloaded: the upload is kept in Redis under a token,
the mapping and the dry run are a GET, the run is one POST that redirects to the job's status
page (a second POST of the same upload finds the job it already started).

Redis is every queue's transport, so what uploads keep there is bounded: each person's uploads waiting to be
enrolled, and everyone's together, fit a quota counted in one sorted set (`KEPT`) that a Redis transaction reads
and writes; an upload is forgotten after UPLOAD_TTL, when it is enrolled (its rows travel with the job), or when
its owner discards it. The address check of the dry run ("verify") looks up DNS in a background job within a
time budget; the page waits on it and never resolves a name itself.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import asdict, dataclass, field
from urllib.parse import urlencode

from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from mailboxes.address_check import DomainVerdicts, rows_domains, rows_verify, verdicts_read
from sequences.contact_rows import NAMED, FileRefused, column_field, decode, row_check
from sequences.models import Sequence
from sequences.permissions import OPERATE
from sequences.services.common import ServiceError
from sequences.services.enrollments import ROWS_SHOWN, ContactRow, EnrollCounts, enrollments_dry_run_counts

from . import upload_store
from .access import ui_view
from .upload_store import (
    MAX_UPLOAD_BYTES,
    MIN_CHARGE_BYTES,
    UPLOAD_TTL,
    QuotaFull,
    Upload,
    hours_words,
    redis_queue,
    upload_discard,
    upload_keep,
    upload_key,
    upload_release,
    uploads_usage,
)

VERIFY_BUDGET_SECONDS = 60.0  # the background address check's time in all; domains not reached are "not checked"
IGNORE = "ignore"
FIELD = "field"  # kept as a custom field under the column's own name
TARGETS = [
    ("email", "Email address"),
    ("first_name", "First name"),
    ("last_name", "Last name"),
    ("company", "Company"),
    ("timezone", "Time zone"),
    (FIELD, "Custom field (column name)"),
    (IGNORE, "Ignore this column"),
]
SAMPLES = 3  # values shown under each column of the mapping page
SAMPLE_LENGTH = 60


@dataclass
class Parsed:
    rows: list[ContactRow] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, reason): rows that cannot be enrolled
    flagged: list[tuple[int, str]] = field(default_factory=list)  # (line, note): enrolled, with a note (--verify)

    def verify(self, domains: DomainVerdicts) -> Parsed:
        """Address verification with the domains' verdicts of a finished background check: refused rows move to
        `rejected`, notes to `flagged`."""
        verified = rows_verify(self.rows, domains)
        self.rows, self.flagged = verified.kept, verified.flagged
        self.rejected = sorted(self.rejected + verified.refused)
        return self


# --- columns and rows ---------------------------------------------------------------------------


def guess_mapping(header: list[str]) -> list[str]:
    """A column named like a contact field (contact_rows.COLUMN_ALIASES) maps to it, the first such column
    of each field; every other column is kept as a custom field under its own name."""
    mapping = []
    for name in header:
        target = column_field(name) or (FIELD if name.strip() else IGNORE)
        mapping.append(target if target not in mapping or target in (FIELD, IGNORE) else FIELD)
    return mapping


def column_samples(upload: Upload, count: int = SAMPLES) -> list[list[str]]:
    """The first *count* non-empty values of each column, to recognise it by."""
    samples: list[list[str]] = [[] for _ in upload.header]
    reader = csv.reader(io.StringIO(upload.text, newline=""))
    next(reader, None)
    for values in reader:
        for column, value in zip(samples, values, strict=False):
            if value.strip() and len(column) < count:
                column.append(value.strip()[:SAMPLE_LENGTH])
        if all(len(column) == count for column in samples):
            break
    return samples


def mapping_error(header: list[str], mapping: list[str]) -> str:
    if len(mapping) != len(header) or any(m not in dict(TARGETS) for m in mapping):
        return "Choose what each column is."
    if "email" not in mapping:
        return "One column must be the email address."
    named = [m for m in mapping if m not in (FIELD, IGNORE)]
    for target in set(named):
        if named.count(target) > 1:
            return f"Two columns are mapped to {dict(TARGETS)[target].lower()}; keep one."
    keys = [h.strip().lower() for h, m in zip(header, mapping, strict=True) if m == FIELD]
    if any(k in NAMED or not k for k in keys) or len(set(keys)) != len(keys):
        return "A custom field needs a column name of its own that is not a contact field; ignore that column."
    return ""


def parse(upload: Upload, mapping: list[str]) -> Parsed:
    """The rows as the enroll command checks them, with the mapping's names; duplicates of an address rejected."""
    names = [
        h.strip().lower() if m == FIELD else ("" if m == IGNORE else m)
        for h, m in zip(upload.header, mapping, strict=True)
    ]
    reader = csv.reader(io.StringIO(upload.text, newline=""))
    next(reader)
    parsed, seen = Parsed(), {}
    line = reader.line_num + 1
    for values in reader:
        if any(v.strip() for v in values):
            cells = {n: v.strip() for n, v in zip(names, values, strict=False) if n}
            row, reason = row_check(line, cells, extra=len(values) > len(names))
            if row is None:
                parsed.rejected.append((line, reason))
            elif row.email in seen:
                parsed.rejected.append((line, f"{row.email} duplicates line {seen[row.email]}"))
            else:
                seen[row.email] = line
                parsed.rows.append(row)
        line = reader.line_num + 1
    return parsed


# --- pages -------------------------------------------------------------------------------------


def _read_csv(file) -> tuple[list[str], str]:
    """The header and the text of an uploaded CSV, every row read once now: a file the csv module refuses (a cell
    over its limit) is refused here, in words (FileRefused), not on the mapping page later."""
    text = decode(file.read(), file.name)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        for _ in reader:
            pass
    except csv.Error as exc:
        raise FileRefused(f"{file.name}: line {reader.line_num}: {exc}; nothing was read") from None
    if not any(h.strip() for h in header):
        raise FileRefused("The first row must name the columns (one of them the email address).")
    return header, text


@ui_view(OPERATE, methods=("GET", "POST"))
def enroll_upload(request, pk: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    user_id = request.user.pk
    if request.method == "POST" and "discard" in request.POST:
        token = request.POST["discard"]
        upload_discard(user_id=user_id, token="" if token == "all" else token)
        return redirect("enroll_upload", pk=pk)
    error = ""
    if request.method == "POST":
        file = request.FILES.get("file")
        if file is None or file.size == 0:
            error = "Choose a CSV file with a header row."
        elif file.size > MAX_UPLOAD_BYTES:
            error = f"The file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; split it or use the command."
        # Before reading the file: one that cannot fit is refused without decoding it.
        elif refusal := uploads_usage(user_id=user_id).refusal(max(file.size, MIN_CHARGE_BYTES)):
            error = refusal
        else:
            try:
                header, text = _read_csv(file)
                token = upload_keep(user_id=user_id, upload=Upload(
                    sequence_id=pk, file=file.name[:200], header=header, text=text))
            except (FileRefused, QuotaFull) as exc:
                error = str(exc)
            else:
                return redirect("enroll_map", pk=pk, token=token)
    usage = uploads_usage(user_id=user_id)
    sequences = Sequence.objects.in_bulk({upload.sequence for upload in usage.mine})
    return render(
        request,
        "ui/enroll_upload.html",
        {
            "sequence": sequence,
            "error": error,
            "usage": usage,
            "kept": [(upload, sequences.get(upload.sequence)) for upload in usage.mine],
            "user_quota": upload_store.USER_QUOTA_BYTES,
            "total_quota": upload_store.TOTAL_QUOTA_BYTES,
            "kept_for": hours_words(UPLOAD_TTL),
        },
        status=400 if error else 200,
    )


def _mapping_from(data, header: list[str]) -> list[str] | None:
    if not any(f"col{i}" in data for i in range(len(header))):
        return None
    return [data.get(f"col{i}", IGNORE) for i in range(len(header))]


def _started(token: str) -> str | None:
    """The id of the run this upload started, if it did."""
    started = redis_queue().connection.get(upload_key(token) + ":job")
    return started.decode() if started is not None else None


def _verify_job(token: str, domains: list[str], *, start: bool) -> Job | None:
    """The background check of these domains: the one kept for the upload if it checks them, else (with `start`)
    a new one. One check per upload at a time: a waiting check of other domains (another email column) is
    canceled, so reloading the page with each column in turn cannot fill the queue."""
    queue = redis_queue()
    key = upload_key(token) + ":verify"
    digest = hashlib.sha256("\n".join(domains).encode()).hexdigest()[:32]
    kept = queue.connection.get(key)
    if kept is not None:
        kept_digest, _, job_id = kept.decode().partition(" ")
        try:
            job = Job.fetch(job_id, connection=queue.connection)
        except NoSuchJobError:
            job = None
        if job is not None and kept_digest == digest:
            return job
        if job is not None and start and job.get_status() == JobStatus.QUEUED:
            job.cancel()
    if not start:
        return None
    # Two pages asking at once may start two checks of the same domains: the later one is kept, both agree.
    job = queue.enqueue(
        "sequences.tasks.addresses_verify",
        domains,
        VERIFY_BUDGET_SECONDS,
        job_timeout=int(VERIFY_BUDGET_SECONDS) + 60,
        result_ttl=UPLOAD_TTL,
        failure_ttl=UPLOAD_TTL,
        meta={"kind": "address_verify", "done": 0, "total": len(domains)},
    )
    queue.connection.set(key, f"{digest} {job.id}", ex=UPLOAD_TTL)
    return job


def _map_url(pk: int, token: str, mapping: list[str], *, verify: bool, allow_missing: bool = False) -> str:
    query = {f"col{i}": target for i, target in enumerate(mapping)} | ({"verify": "1"} if verify else {})
    query |= {"allow_missing": "1"} if allow_missing else {}
    return f"{reverse('enroll_map', args=[pk, token])}?{urlencode(query)}"


@ui_view(OPERATE)
def enroll_map(request, pk: int, token: str):
    """Map the columns; with a mapping chosen, the dry run: what would be enrolled and what would not, and why.
    With "verify", the dry run waits for the background address check (the page reloads itself until it ends)."""
    sequence = get_object_or_404(Sequence, pk=pk)
    if (started := _started(token)) is not None:  # enrolled already: the upload is no longer kept
        return redirect("enroll_status", pk=pk, job_id=started)
    upload = Upload.load(token, pk)
    mapping = _mapping_from(request.GET, upload.header)
    error = mapping_error(upload.header, mapping) if mapping is not None else ""
    verify = request.GET.get("verify") == "1"
    context = {
        "sequence": sequence,
        "upload": upload,
        "token": token,
        "targets": TARGETS,
        "error": error,
        "columns": list(
            zip(range(len(upload.header)), upload.header, mapping or guess_mapping(upload.header),
                column_samples(upload), strict=True)
        ),
        "verify": verify,
        "budget": f"{VERIFY_BUDGET_SECONDS:g}",
    }
    if mapping is None or error:
        return render(request, "ui/enroll_map.html", context, status=400 if error else 200)
    parsed = parse(upload, mapping)
    context["mapping"] = mapping
    if verify:
        domains = rows_domains(parsed.rows)
        try:
            job = _verify_job(token, domains, start=True)
        except RedisError as exc:
            context["error"] = (f"The background queue is unavailable ({exc.__class__.__name__}); the addresses "
                                "cannot be checked now. Try again when it is back, or see the dry run without it.")
            context["unverified_url"] = _map_url(pk, token, mapping, verify=False)
            return render(request, "ui/enroll_map.html", context, status=503)
        checking = _progress(job)
        if not checking["finished"]:
            if checking["failed"]:  # said once: the next load starts a new check
                redis_queue().connection.delete(upload_key(token) + ":verify")
            context["checking"] = checking
            context["unverified_url"] = _map_url(pk, token, mapping, verify=False)
            return render(request, "ui/enroll_map.html", context)
        parsed.verify(verdicts_read(job.return_value()))
    allow_missing = request.GET.get("allow_missing") == "1"
    counts, _ = dry_run(sequence, parsed, allow_missing=allow_missing)
    context["dry_run"] = counts.shown()
    context["dry_run_sections"] = row_sections(context["dry_run"])
    context["allow_missing"] = allow_missing
    context["shown"] = ROWS_SHOWN
    if counts.missing:  # the same dry run with the rows that lack a value enrolled, or refused
        context["missing_url"] = _map_url(pk, token, mapping, verify=verify, allow_missing=not allow_missing)
    return render(request, "ui/enroll_map.html", context)


# Each kind of row an upload lists, under its count, in this order (`ui/_enroll_rows.html`).
ROW_KINDS = (
    ("rejected", "Rejected"),
    ("suppressed", "Suppressed — never enrolled"),
    ("already", "Already enrolled in this sequence — left as they are"),
    ("flagged", "Enrolled, with a note"),
)


def row_sections(shown: dict) -> list[tuple[str, str, list, int]]:
    """(kind, title, the rows listed, how many in all) of an upload's counts (`EnrollCounts.shown`)."""
    return [(kind, title, shown.get(kind, []), shown.get(f"n_{kind}", 0)) for kind, title in ROW_KINDS]


def dry_run(sequence: Sequence, parsed: Parsed, *,
            allow_missing: bool = False) -> tuple[EnrollCounts, list[ContactRow]]:
    """What enrolling the parsed rows would do (`EnrollCounts`), and the rows it would enroll; reads only."""
    return enrollments_dry_run_counts(sequence_id=sequence.pk, rows=parsed.rows, rejected=parsed.rejected,
                                      flagged=parsed.flagged, allow_missing=allow_missing)


@ui_view(OPERATE, methods=("POST",))
def enroll_run(request, pk: int, token: str):
    """Start the background job (once per upload) and go to its status page."""
    sequence = get_object_or_404(Sequence, pk=pk)
    if (started := _started(token)) is not None:
        return redirect("enroll_status", pk=pk, job_id=started)
    upload = Upload.load(token, pk)
    mapping = _mapping_from(request.POST, upload.header)
    if mapping is None or mapping_error(upload.header, mapping):
        return redirect("enroll_map", pk=pk, token=token)
    parsed = parse(upload, mapping)
    allow_missing = request.POST.get("allow_missing") == "1"
    if request.POST.get("verify") == "1":
        # The verdicts of the dry run's background check; without them, back to the page that waits for it.
        check = _verify_job(token, rows_domains(parsed.rows), start=False)
        if check is None or check.get_status() != JobStatus.FINISHED:
            return redirect(_map_url(pk, token, mapping, verify=True, allow_missing=allow_missing))
        parsed.verify(verdicts_read(check.return_value()))
    # The dry run again, as the page showed it: the run is given the rows it enrolls (the batches check them once
    # more, for what changed since) and the refused ones by kind, so its progress counts up to the number on the
    # button and its result repeats the dry run's counts.
    counts, rows = dry_run(sequence, parsed, allow_missing=allow_missing)
    actor = request.user.get_username()
    try:
        job = redis_queue().enqueue(
            "sequences.tasks.enrollment_upload",
            sequence.pk,
            [asdict(r) for r in rows],
            counts.plain(),
            actor,
            allow_missing=allow_missing,
            source=upload.file,
            job_timeout=3600,
            result_ttl=7 * 86400,
            failure_ttl=7 * 86400,
            meta={
                "kind": "enrollment_upload",
                "sequence_id": sequence.pk,
                "done": 0,
                "total": len(rows),
                "file": upload.file,
                "actor": actor,
            },
        )
    except Exception as exc:  # noqa: BLE001 - Redis down: say so instead of a 500
        return render(
            request,
            "ui/enroll_upload.html",
            {
                "sequence": sequence,
                "error": f"The background queue is unavailable ({exc.__class__.__name__}); "
                "nothing was enrolled. Try again when it is back.",
            },
            status=503,
        )
    redis_queue().connection.set(upload_key(token) + ":job", job.id, ex=UPLOAD_TTL)
    upload_release(token)
    return redirect("enroll_status", pk=pk, job_id=job.id)


def _job(pk: int, job_id: str) -> Job:
    try:
        job = Job.fetch(job_id, connection=redis_queue().connection)
    except NoSuchJobError:
        raise Http404("no such enrollment run (results are kept for a week)") from None
    if job.meta.get("kind") != "enrollment_upload" or job.meta.get("sequence_id") != pk:
        raise Http404("no such enrollment run")
    return job


STOPPED_BY = {JobStatus.STOPPED: "the job was stopped", JobStatus.CANCELED: "the job was canceled"}


def _failure(job: Job, status: JobStatus) -> str:
    """Why the job ended without a result, in one line: the exception's last line (without its module)."""
    if status in STOPPED_BY:
        return STOPPED_BY[status]
    result = job.latest_result()
    lines = (result.exc_string or "").strip().splitlines() if result is not None else []
    if not lines:
        return "the worker ended the job without a reason (it may have been killed)"
    name, _, message = lines[-1].partition(": ")
    name = name.rsplit(".", 1)[-1]
    # A ServiceError's message is written for the operator already; any other error is named.
    return message if name == ServiceError.__name__ and message else f"{name}: {message}".rstrip(": ")


def _progress(job: Job) -> dict:
    status = job.get_status()
    failed = status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)
    return {
        "status": status.value,
        "done": job.meta.get("done", 0),
        "total": job.meta.get("total", 0),
        "finished": status == JobStatus.FINISHED,
        "failed": failed,
        "reason": _failure(job, status) if failed else "",
    }


@ui_view(OPERATE)
def enroll_status(request, pk: int, job_id: str):
    sequence = get_object_or_404(Sequence, pk=pk)
    job = _job(pk, job_id)
    progress = _progress(job)
    result = _result(job.return_value()) if progress["finished"] else None
    return render(
        request,
        "ui/enroll_status.html",
        {
            "sequence": sequence,
            "job": job,
            "meta": job.meta,
            **progress,
            "result": result,
            "result_sections": row_sections(result) if result else [],
            "status_url": reverse("enroll_progress", args=[pk, job_id]),
            "shown": ROWS_SHOWN,
        },
    )


# The reasons the batch gives a row it refuses for being suppressed or already enrolled (`services.enrollments`).
_LEGACY_KIND = ((" is suppressed (", "suppressed"), (" is already enrolled in ", "already"),
                ("data was erased", "suppressed"))


def _result(result: dict | None) -> dict | None:
    """A run's result as the page shows it (`EnrollCounts.shown`). A run from before the counts were kept by kind
    listed every row not enrolled together: its rows are sorted by their reason's words."""
    if not isinstance(result, dict) or "n_rejected" in result:
        return result
    counts = EnrollCounts(enrolled=result.get("enrolled", 0))
    for line, reason in result.get("rejected", []):
        kind = next((kind for words, kind in _LEGACY_KIND if words in reason), "rejected")
        getattr(counts, kind).append((line, reason))
    return counts.shown() | {"contacts_created": result.get("contacts_created", 0),
                             "contacts_kept": result.get("contacts_kept", 0)}


@ui_view(OPERATE)
def enroll_progress(request, pk: int, job_id: str):
    """The status page's progress bar polls this (static/enroll.js)."""
    return JsonResponse(_progress(_job(pk, job_id)))
