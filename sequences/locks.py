"""The one lock order: enrollment rows (ascending id) -> sequence row -> mailbox row -> job rows -> daily counter.

The final check (`services.sending.send_job_authorize`) locks the job's
enrollment; every stop path (stop, pause of an enrollment, sequence or mailbox,
suppression, reply ingestion, provider events, the record of a retry) locks
the same enrollment rows before it changes anything. So a stop and an
authorization of the same enrollment are serialized: whichever commits first
wins, and the other sees its effect. Reading the ledger or a paused flag
without that common lock would serialize nothing under READ COMMITTED.

The final check finds the enrollment from the job inside its locking
statement (`sequences.loads.job_lock`) and reads everything else in the next
statement, after the lock was granted: a single statement that locked and
read would see, for the rows it did not lock, the snapshot from before it
waited. It no longer locks the mailbox row: the daily cap is a counter row
(`sequences.daily_cap`), taken last, with one atomic conditional upsert.

Every function here requires the caller's transaction.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet

from mailboxes.models import Mailbox

from .loads import columns_of, instances
from .models import Contact, Enrollment, Sequence


def enrollments_lock(qs: QuerySet[Enrollment]) -> list[Enrollment]:
    """Lock enrollments in ascending id order (with their contact and sequence loaded)."""
    # FOR NO KEY UPDATE: conflicts with itself (stop vs authorize) but not with
    # the FOR KEY SHARE that inserting a timeline row referencing the
    # enrollment takes; a plain FOR UPDATE would deadlock against the
    # dispatcher, which holds job rows while it writes their events.
    return list(qs.select_for_update(of=("self",), no_key=True).select_related("contact", "sequence").order_by("id"))


def person_enrollments_lock(email: str) -> list[Enrollment]:
    """Lock the enrollments of the contact with this (normalized) address that are not stopped, as
    enrollments_lock does (ascending id, contact and sequence loaded): one hand-written statement, for the
    stop that follows every reply."""
    lock = " FOR NO KEY UPDATE OF e" if connection.features.has_select_for_no_key_update else ""
    tables = {alias: model._meta.db_table for alias, model in (("e", Enrollment), ("c", Contact), ("s", Sequence))}
    sql = (f"SELECT {columns_of('e', Enrollment)}, {columns_of('c', Contact)}, {columns_of('s', Sequence)} "
           f"FROM {tables['e']} e JOIN {tables['c']} c ON c.id = e.contact_id "
           f"JOIN {tables['s']} s ON s.id = e.sequence_id "
           f"WHERE c.email = %s AND e.status <> %s ORDER BY e.id{lock}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [email, Enrollment.Status.STOPPED.value])
        rows = cursor.fetchall()
    locked = []
    for row in rows:
        enrollment, contact, sequence = instances((Enrollment, Contact, Sequence), row)
        enrollment.contact, enrollment.sequence = contact, sequence
        locked.append(enrollment)
    return locked


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
