"""What a pause, stop, resume or bulk action did, shown on the page it returns to, in plain words.

The counts (and each step's) first; then, folded in a <details>, the people it concerned, a page at a
time: the emails it canceled and the ones that had already left. Job numbers, versions, Message-IDs and
worker ids only behind each row's "details". The result is kept in the session under the object's key
with a token; the redirect carries the token (`?result=`), so a reload or a page of the list shows it
again and an ordinary visit does not.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator

from sequences.labels import step_summary_words, stop_summary_sentences, when_words
from sequences.models import SendJob
from sequences.selectors import jobs_with_labels
from sequences.stop_summary import StopSummary

S = SendJob.State
KEPT_IDS = 5000  # ids kept per list; the counts are always complete
LIST_PAGE = 20  # people per page of the folded list
BEFORE = {"pause": "you paused", "stop": "you stopped"}


def stop_result(summary: StopSummary, *, action: str, target: str) -> dict[str, Any]:
    """What a view keeps in the session for the page it redirects to: the counts, each step's, the job ids."""
    return {
        "action": action, "target": target, **summary.as_dict(),
        "steps": sorted([p, *counts] for p, counts in summary.steps.items()),
        "job_ids_canceled": summary.job_ids_canceled[:KEPT_IDS],
        "job_ids_passed": summary.job_ids_passed[:KEPT_IDS],
    }


def result_keep(request, key: str, result: dict[str, Any]) -> str:
    """Keep `result` under `key`; returns the query string that shows it ("?result=<token>#result")."""
    token = secrets.token_urlsafe(6)
    request.session[key] = {**result, "token": token}
    return f"?result={token}#result"


def result_kept(request, key: str) -> dict[str, Any] | None:
    """The result kept under `key`, with its sentences and one page of its list, when the URL names it."""
    result = request.session.get(key)
    if not result or request.GET.get("result") != result.get("token"):
        return None
    if "job_ids_canceled" not in result:
        return result
    before = BEFORE.get(result["action"], "you paused")
    steps = [step_summary_words(*row) for row in result.get("steps", []) if any(row[1:])]
    canceled, passed = result["job_ids_canceled"], result["job_ids_passed"]
    page = Paginator(canceled + passed, LIST_PAGE).get_page(request.GET.get("rpage"))
    jobs = {j.pk: j for j in jobs_with_labels().filter(pk__in=list(page.object_list))}
    canceled_now = set(canceled)
    return {
        **result,
        "sentences": stop_summary_sentences(canceled=result["canceled"], in_flight=result["in_flight"],
                                            submitted=result["submitted"], before=before),
        "step_lines": steps,
        "people": [summary_row(jobs[pk], canceled=pk in canceled_now) for pk in page.object_list if pk in jobs],
        "people_page": page,
        "people_total": len(canceled) + len(passed),
        "list_open": "rpage" in request.GET,
    }


@dataclass
class SummaryRow:
    job: SendJob
    words: str
    tone: str
    details: str


def summary_row(job: SendJob, *, canceled: bool) -> SummaryRow:
    """One email of the folded list in plain words; the engine's words only in `details`."""
    details = f"email #{job.pk}, version {job.version}, Message-ID {job.message_id}"
    if job.worker_id:
        details += f", worker {job.worker_id}"
    if canceled or job.state == S.CANCELED:
        return SummaryRow(job, "canceled — will not be sent", "never-sent", details)
    if job.state == S.AUTHORIZED:
        return SummaryRow(job, "was being handed to the mail server — cannot be recalled", "cannot-recall", details)
    if job.state == S.UNKNOWN:
        return SummaryRow(job, "may have been sent (the mail server did not confirm) — cannot be recalled",
                          "unknown", details)
    if job.state == S.FAILED:
        return SummaryRow(job, "the mail server refused it — not sent", "failed", details)
    return SummaryRow(job, f"sent {when_words(job.submitted_at)} — cannot be recalled", "cannot-recall", details)
