"""The one lock order: enrollment rows (ascending id) -> sequence row -> mailbox row -> job rows -> daily counter.

The final check (`services.sending.send_job_authorize`) locks the job's
enrollment; every stop path (stop, pause of an enrollment, sequence or mailbox,
suppression, reply ingestion, provider events, the record of a retry) locks
the same enrollment rows before it changes anything. So a stop and an
authorization of the same enrollment are serialized: whichever commits first
wins, and the other sees its effect. Reading the ledger or a paused flag
without that common lock would serialize nothing under READ COMMITTED.

The final check finds the enrollment from the job inside its locking
statement (`job_enrollment_lock`) and reads everything else after the lock
was granted: a single statement that locked and read would see, for the rows
it did not lock, the snapshot from before it waited. It then locks the
mailbox row, which a pause or block that does not lock the enrollments first
(the deliverability guardrail, a mailbox-level failure) updates: either that
change committed before and is seen, or it waits for the final check. The
daily cap's counter row (`sequences.daily_cap`) is taken last.

Every function here requires the caller's transaction.
"""

from __future__ import annotations

from django.db.models import QuerySet

from mailboxes.models import Mailbox

from .models import Enrollment, SendJob, Sequence


def enrollments_lock(qs: QuerySet[Enrollment]) -> list[Enrollment]:
    """Lock enrollments in ascending id order (with their contact and sequence loaded)."""
    # FOR NO KEY UPDATE: conflicts with itself (stop vs authorize) but not with
    # the FOR KEY SHARE that inserting a timeline row referencing the
    # enrollment takes; a plain FOR UPDATE would deadlock against the
    # dispatcher, which holds job rows while it writes their events.
    return list(qs.select_for_update(of=("self",), no_key=True).select_related("contact", "sequence").order_by("id"))


def person_enrollments_lock(email: str) -> list[Enrollment]:
    """Lock the enrollments of the contact with this (normalized) address that are not stopped, as
    enrollments_lock does: the stop that follows every reply."""
    return enrollments_lock(Enrollment.objects.filter(contact__email=email).exclude(status=Enrollment.Status.STOPPED))


def job_enrollment_lock(job_id: int) -> int:
    """Lock the enrollment of a send job (the row every stop path locks), found from the job in the locking
    statement itself; its id. The caller reads the rows after the lock was granted. Raises
    SendJob.DoesNotExist."""
    found = list(Enrollment.objects.filter(jobs__pk=job_id).select_for_update(of=("self",), no_key=True)
                 .values_list("pk", flat=True))
    if not found:
        raise SendJob.DoesNotExist(f"send job {job_id} does not exist")
    return found[0]


def enrollment_lock(*, enrollment_id: int) -> Enrollment:
    """Lock one enrollment, as every stop and the final check do (first, before mailbox and jobs)."""
    (enrollment,) = enrollments_lock(Enrollment.objects.filter(pk=enrollment_id))
    return enrollment


def sequence_lock(*, sequence_id: int) -> Sequence:
    """Lock a sequence row: after its enrollments, before its mailbox."""
    return Sequence.objects.select_for_update(no_key=True).get(pk=sequence_id)


def mailbox_lock(*, mailbox_id: int) -> Mailbox:
    """Lock a mailbox row: after the enrollments (and sequence), before any job."""
    return Mailbox.objects.select_for_update(no_key=True).get(pk=mailbox_id)
