"""The design DESIGN.md rejects, kept here only to be measured against.

One transaction locks the enrollment (the row every stop path locks), runs the
final check, authorizes, talks SMTP and records the submission, so the lock is
held for as long as the provider takes. The product never does this: its
authorize transaction commits before the hand-off (sequences.pipeline). A stop
of this enrollment -- the commit of a reply -- waits for the provider here.
"""

from __future__ import annotations

from django.db import transaction

from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from sequences import services
from sequences.jobstates import job_move
from sequences.messages import message_prepare
from sequences.models import Enrollment, SendJob

S = SendJob.State


def send_job_process_lock_held(*, job_id: int, worker_id: str) -> str:
    """claim -> prepare -> [lock enrollment, check, authorize, SMTP, submitted] in one transaction."""
    claimed = services.send_job_claim(job_id=job_id, worker_id=worker_id)
    if claimed is None:
        return "noop"
    prepared = message_prepare(job_id=job_id)
    with transaction.atomic():
        # The same lock mode as the product's stop and authorize paths (FOR NO KEY UPDATE).
        enrollment = (
            Enrollment.objects.select_for_update(of=("self",), no_key=True)
            .select_related("contact", "sequence")
            .get(pk=claimed.enrollment_id)
        )
        mailbox = Mailbox.objects.get(pk=enrollment.sequence.mailbox_id)
        job = SendJob.objects.select_related("step").get(pk=job_id)
        job._email = enrollment.contact.email  # type: ignore[attr-defined]
        if job.state != S.CLAIMED:
            return job.state
        reason = services._final_check(job=job, enrollment=enrollment, mailbox=mailbox)
        if reason:
            job_move(job=job, to=S.CANCELED, worker_id=worker_id, event="job_canceled",
                     fields={"cancel_reason": reason}, reason=reason, final_check=True)
            return S.CANCELED
        job_move(job=job, to=S.AUTHORIZED, worker_id=worker_id, final_check=True, lock_held=True)
        # The network call inside the transaction: exactly what the product forbids.
        submission = transport_for(mailbox).send(sender=prepared.sender, recipient=prepared.recipient,
                                                 message=prepared.data)
        job_move(job=job, to=S.SUBMITTED, worker_id=worker_id, fields={"smtp_reply": submission.reply},
                 smtp_reply=submission.reply)
    return S.SUBMITTED
