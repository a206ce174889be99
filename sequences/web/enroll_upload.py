"""Enroll contacts from the browser: upload a CSV, map its columns, see a dry run, then enroll in the background.

The rows are checked as the `enroll` command checks them (`sequences.contact_rows.row_check`) and written by
the one batch path, `enrollments_create_batch` (a refused row changes nothing); the dry run asks the same
service what it would refuse (`enrollments_dry_run`). Suppressed addresses are never
enrolled. Each step is a page that can be reloaded: the upload is kept in Redis under a token,
the mapping and the dry run are a GET, the run is one POST that redirects to the job's status
page (a second POST of the same upload finds the job it already started).
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from dataclasses import asdict, dataclass, field

import django_rq
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from mailboxes.address_check import rows_verify
from sequences.contact_rows import NAMED, FileRefused, column_field, decode, row_check

from ..models import Sequence
from ..permissions import OPERATE
from ..services.common import ServiceError
from ..services.enrollments import ContactRow, Refusal, enrollments_dry_run
from .access import ui_view

UPLOAD_TTL = 24 * 3600  # an upload not run within a day is forgotten
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
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
SHOWN_REJECTED = 200
SAMPLES = 3  # values shown under each column of the mapping page
SAMPLE_LENGTH = 60


def _redis():
    # The job carries its rows: nothing waits for a database commit.
    return django_rq.get_queue("default", commit_mode="auto")


def _key(token: str) -> str:
    return f"outreach:enroll-upload:{token}"


@dataclass
class Upload:
    sequence_id: int
    file: str
    header: list[str]
    text: str

    @classmethod
    def load(cls, token: str, sequence_id: int) -> Upload:
        raw = _redis().connection.get(_key(token)) if token.isalnum() else None
        if raw is None:
            raise Http404("This upload is no longer kept (uploads are kept for a day); upload the file again.")
        upload = cls(**json.loads(raw))
        if upload.sequence_id != sequence_id:
            raise Http404("no such upload")
        return upload


@dataclass
class Parsed:
    rows: list[ContactRow] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, reason): rows that cannot be enrolled
    flagged: list[tuple[int, str]] = field(default_factory=list)  # (line, note): enrolled, with a note (--verify)

    def verify(self) -> Parsed:
        """Address verification (DNS, once per domain): refused rows move to `rejected`, notes to `flagged`."""
        verified = rows_verify(self.rows)
        self.rows, self.flagged = verified.kept, verified.flagged
        self.rejected = sorted(self.rejected + verified.refused)
        return self


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


@ui_view(OPERATE, methods=("GET", "POST"))
def enroll_upload(request, pk: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    error = ""
    if request.method == "POST":
        file = request.FILES.get("file")
        if file is None or file.size == 0:
            error = "Choose a CSV file with a header row."
        elif file.size > MAX_UPLOAD_BYTES:
            error = f"The file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; split it or use the command."
        else:
            try:
                text = decode(file.read(), file.name)
                reader = csv.reader(io.StringIO(text, newline=""))
                header = next(reader, [])
                for _ in reader:  # every row read once now: one the csv module refuses (a cell over its limit)
                    pass          # refuses the file here, in words, not the mapping page later
            except FileRefused as exc:
                error = str(exc)
            except csv.Error as exc:
                error = f"{file.name}: line {reader.line_num}: {exc}; nothing was read"
            else:
                if not any(h.strip() for h in header):
                    error = "The first row must name the columns (one of them the email address)."
                else:
                    token = secrets.token_hex(12)
                    upload = Upload(sequence_id=pk, file=file.name[:200], header=header, text=text)
                    _redis().connection.set(_key(token), json.dumps(asdict(upload)), ex=UPLOAD_TTL)
                    return redirect("enroll_map", pk=pk, token=token)
    return render(
        request, "ui/enroll_upload.html", {"sequence": sequence, "error": error}, status=400 if error else 200
    )


def _mapping_from(data, header: list[str]) -> list[str] | None:
    if not any(f"col{i}" in data for i in range(len(header))):
        return None
    return [data.get(f"col{i}", IGNORE) for i in range(len(header))]


@ui_view(OPERATE)
def enroll_map(request, pk: int, token: str):
    """Map the columns; with a mapping chosen, the dry run: what would be enrolled and what would not, and why."""
    sequence = get_object_or_404(Sequence, pk=pk)
    upload = Upload.load(token, pk)
    mapping = _mapping_from(request.GET, upload.header)
    error = mapping_error(upload.header, mapping) if mapping is not None else ""
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
    }
    verify = request.GET.get("verify") == "1"
    context["verify"] = verify
    if mapping is not None and not error:
        parsed = parse(upload, mapping)
        context["dry_run"] = dry_run(sequence, parsed.verify() if verify else parsed)
        context["mapping"] = mapping
    return render(request, "ui/enroll_map.html", context, status=400 if error else 200)


def dry_run(sequence: Sequence, parsed: Parsed) -> dict:
    refused = enrollments_dry_run(sequence_id=sequence.pk, rows=parsed.rows)
    suppressed = [
        (r.line, refused[r.email].reason)
        for r in parsed.rows
        if r.email in refused and refused[r.email].kind in (Refusal.SUPPRESSED, Refusal.ERASED)
    ]
    enrolled = [
        (r.line, refused[r.email].reason)
        for r in parsed.rows
        if r.email in refused and refused[r.email].kind == Refusal.ALREADY_ENROLLED
    ]
    zones = [
        (r.line, refused[r.email].reason)
        for r in parsed.rows
        if r.email in refused and refused[r.email].kind == Refusal.TIMEZONE
    ]
    missing = [
        (r.line, refused[r.email].reason)
        for r in parsed.rows
        if r.email in refused and refused[r.email].kind == Refusal.MISSING_VALUE
    ]
    rejected = sorted(parsed.rejected + zones + missing)
    return {
        "n_missing": len(missing),
        "valid": len(parsed.rows) - len(refused),
        "rejected": rejected[:SHOWN_REJECTED],
        "n_rejected": len(rejected),
        "suppressed": suppressed[:SHOWN_REJECTED],
        "n_suppressed": len(suppressed),
        "already": enrolled[:SHOWN_REJECTED],
        "n_already": len(enrolled),
        "flagged": parsed.flagged[:SHOWN_REJECTED],
    }


@ui_view(OPERATE, methods=("POST",))
def enroll_run(request, pk: int, token: str):
    """Start the background job (once per upload) and go to its status page."""
    sequence = get_object_or_404(Sequence, pk=pk)
    upload = Upload.load(token, pk)
    mapping = _mapping_from(request.POST, upload.header)
    if mapping is None or mapping_error(upload.header, mapping):
        return redirect("enroll_map", pk=pk, token=token)
    redis = _redis().connection
    started = redis.get(_key(token) + ":job")
    if started is not None:
        return redirect("enroll_status", pk=pk, job_id=started.decode())
    parsed = parse(upload, mapping)
    if request.POST.get("verify") == "1":
        parsed.verify()
    actor = request.user.get_username()
    try:
        job = _redis().enqueue(
            "sequences.tasks.enrollment_upload",
            sequence.pk,
            [asdict(r) for r in parsed.rows],
            parsed.rejected,
            actor,
            allow_missing=request.POST.get("allow_missing") == "1",
            source=upload.file,
            job_timeout=3600,
            result_ttl=7 * 86400,
            failure_ttl=7 * 86400,
            meta={
                "kind": "enrollment_upload",
                "sequence_id": sequence.pk,
                "done": 0,
                "total": len(parsed.rows),
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
    redis.set(_key(token) + ":job", job.id, ex=UPLOAD_TTL)
    return redirect("enroll_status", pk=pk, job_id=job.id)


def _job(pk: int, job_id: str) -> Job:
    try:
        job = Job.fetch(job_id, connection=_redis().connection)
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
    return render(
        request,
        "ui/enroll_status.html",
        {
            "sequence": sequence,
            "job": job,
            "meta": job.meta,
            **progress,
            "result": job.return_value() if progress["finished"] else None,
            "status_url": reverse("enroll_progress", args=[pk, job_id]),
        },
    )


@ui_view(OPERATE)
def enroll_progress(request, pk: int, job_id: str):
    """The status page's progress bar polls this (static/enroll.js)."""
    return JsonResponse(_progress(_job(pk, job_id)))
