"""Holds in words: why a live email waits, as the operator should read it.

Display only; the final check and the out-of-office hold decide (`services.sending`, `services.holds`), and
what they decided is read back from what they stored:

- out of office: the job's last move back to scheduled is `job_held_out_of_office` (its `until`), and the
  person's `out_of_office_hold` event keeps the sentence of the auto-reply;
- the reply view: the job's last move back to scheduled is the final check's deferral with reason
  `reply_view` (its `detail` the words of the view; the job's time is its next check);
- the mailbox: blocked or paused now (the mailbox row itself, as the final check reads it).

"On hold until Tue 15 Dec (out of office: '…back on 14 December')".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sequences.labels import when_words
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.reasons import Reason
from sequences.sending_mailbox import enrollment_mailbox
from sequences.timeline import Event

S = SendJob.State
# The events that move a job (back) to scheduled: the last of them says why a scheduled job waits.
TO_SCHEDULED = (Event.JOB_SCHEDULED, Event.JOB_DEFERRED, Event.JOB_RETRY_SCHEDULED, Event.JOB_HELD,
                Event.JOB_HELD_OUT_OF_OFFICE)
SHOWN_CHARS = 40  # of the auto-reply's sentence
# Words that announce a return or the end of an absence, for holds recorded without the quote itself.
_RETURN_WORDS = re.compile(r"\b(back|return|returning|until|till|zurück|bis|retour|de retour|jusqu|hasta|"
                           r"volveré|regreso)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Hold:
    kind: str  # "out_of_office" | "reply_view" | "mailbox"
    text: str


def _day(moment: datetime) -> str:
    return f"{moment:%a %-d %b}"


def quoted_tail(sentence: str, quote: str = "") -> str:
    """The part of an auto-reply's sentence that says when: "…back on 14 December", "…bis zum 14. Dezember nicht im
    Büro…". From the recorded quote (the words from the return to the date), else from the last return word, else
    the sentence's last words; whole words only."""
    sentence = " ".join(sentence.split()).rstrip(" .!")
    quote = " ".join(quote.split())
    start = sentence.find(quote) if quote else -1
    if start < 0:
        found = list(_RETURN_WORDS.finditer(sentence))
        start = found[-1].start() if found else _word_start(sentence, max(len(sentence) - SHOWN_CHARS, 0))
    tail = sentence[start:]
    if len(tail) > SHOWN_CHARS + 20:
        cut = tail[: SHOWN_CHARS + 20].rsplit(" ", 1)[0]
        tail = (cut if len(cut) >= len(quote) else quote) + "…"
    return ("…" if start else "") + tail


def _word_start(sentence: str, at: int) -> int:
    """`at`, moved forward to the start of a word."""
    if at == 0 or sentence[at - 1] == " ":
        return at
    space = sentence.find(" ", at)
    return space + 1 if space >= 0 else at


def out_of_office_words(until: datetime, sentence: str, quote: str = "") -> str:
    if sentence:
        return f"On hold until {_day(until)} (out of office: '{quoted_tail(sentence, quote)}')"
    return f"On hold until {_day(until)} (out of office; the auto-reply gave no return date)"


def reply_view_words(mailbox_name: str, until: datetime | None, detail: str) -> str:
    why = f" ({detail})" if detail else ""
    again = f"; it checks again at {when_words(until)}" if until else ""
    return (f"On hold: the mailbox {mailbox_name} cannot read its replies right now, so follow-ups wait until it "
            f"can{why}{again}")


def mailbox_words(mailbox) -> str:
    """A paused or blocked mailbox holds every email it sends, or ''."""
    if mailbox.paused:
        return f"On hold: the mailbox {mailbox.name} is paused; nothing leaves it until it is resumed"
    if mailbox.blocked_at is not None:
        probe = f"; the next connection check is at {when_words(mailbox.next_probe_at)}" if mailbox.next_probe_at \
            else ""
        return (f"On hold: the mailbox {mailbox.name} cannot send since {when_words(mailbox.blocked_at)} "
                f"({mailbox.blocked_reason}){probe}")
    return ""


def holds_of(jobs: list[SendJob]) -> dict[int, Hold]:
    """The hold of each scheduled job that has one recorded (out of office, reply view): two queries at most.

    The jobs come with their enrollment, contact and mailbox loaded (`send_when_rows`, `jobs_with_labels`).
    """
    waiting = {job.pk: job for job in jobs if job.state == S.SCHEDULED}
    if not waiting:
        return {}
    last: dict[int, tuple[str, dict]] = {}
    moves = (TimelineEvent.objects.filter(job_id__in=list(waiting), kind__in=TO_SCHEDULED)
             .order_by("at", "id").values_list("job_id", "kind", "data"))
    for job_id, kind, data in moves:
        last[job_id] = (kind, data or {})
    away = {waiting[pk].enrollment_id for pk, (kind, _) in last.items() if kind == Event.JOB_HELD_OUT_OF_OFFICE}
    sentences: dict[int, tuple[str, str]] = {}
    if away:
        for enrollment_id, data in (TimelineEvent.objects.filter(enrollment_id__in=away, kind=Event.OUT_OF_OFFICE_HOLD)
                                    .order_by("at", "id").values_list("enrollment_id", "data")):
            sentences[enrollment_id] = ((data or {}).get("sentence", ""), (data or {}).get("quote", ""))
    holds = {}
    for pk, (kind, data) in last.items():
        job = waiting[pk]
        if kind == Event.JOB_HELD_OUT_OF_OFFICE:
            until = _parsed(data.get("until")) or job.scheduled_at
            holds[pk] = Hold(Reason.OUT_OF_OFFICE,
                             out_of_office_words(until, *sentences.get(job.enrollment_id, ("", ""))))
        elif kind == Event.JOB_DEFERRED and data.get("reason") == Reason.REPLY_VIEW:
            # The job's own time is its next check: the re-checks that found the same hold wrote no event.
            holds[pk] = Hold(Reason.REPLY_VIEW, reply_view_words(enrollment_mailbox(job.enrollment).name,
                                                                 job.scheduled_at, data.get("detail", "")))
    return holds


def enrollment_hold(enrollment: Enrollment, upcoming: SendJob | None) -> Hold | None:
    """What holds an active enrollment's next email, if anything does: its mailbox, or its job's recorded hold."""
    if enrollment.status != Enrollment.Status.ACTIVE:
        return None
    words = mailbox_words(enrollment_mailbox(enrollment))
    if words:
        return Hold("mailbox", words)
    return holds_of([upcoming]).get(upcoming.pk) if upcoming is not None else None


def _parsed(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
