"""The people behind a number on the results: who failed, who is held, at one step or in the whole sequence.

From here an operator fixes the contact (its page) and retries a failed step (`job_retry`, through the final
check like any send). The filters are the ones the results count with (`results.failed_q`, `results.held_q`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404
from django.shortcuts import get_object_or_404, render

from sequences.labels import job_label_and_tone
from sequences.models import SendJob, Sequence
from sequences.permissions import OPERATE, VIEW
from sequences.selectors import jobs_with_labels
from sequences.sending_mailbox import enrollment_mailbox
from sequences.storable import row_id

from .access import page_of, query_without_page, ui_view
from .hold_words import holds_of, mailbox_words
from .results import failed_q, held_q

SHOWN = {"failed": ("Failed", failed_q), "held": ("Held", held_q)}


@dataclass
class PersonRow:
    job: SendJob
    words: str
    tone: str


@ui_view(VIEW)
def sequence_people(request, pk: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    show = request.GET.get("show", "")
    if show not in SHOWN:
        raise Http404("no such list")
    title, q = SHOWN[show]
    step = request.GET.get("step", "")
    jobs = jobs_with_labels().filter(q(), enrollment__sequence=sequence)
    if (position := row_id(step)) is not None:
        jobs = jobs.filter(step__position=position)
    page = page_of(request, jobs.order_by("step__position", "id"), per_page=25)
    holds = holds_of(list(page)) if show == "held" else {}
    people = []
    for job in page:
        if show == "failed":
            label = job_label_and_tone(job, brief=True)
            people.append(PersonRow(job, label.text, label.tone))
        else:
            hold = holds.get(job.pk)
            words = hold.text if hold else mailbox_words(enrollment_mailbox(job.enrollment)) or "On hold"
            people.append(PersonRow(job, words, "pending"))
    return render(request, "ui/sequence_people.html", {
        "sequence": sequence, "show": show, "title": title, "step": step if position is not None else "",
        "page": page, "people": people, "query": query_without_page(request),
        "can_operate": request.user.has_perm(OPERATE), "here": request.get_full_path(),
    })
