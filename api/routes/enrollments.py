"""/api/v1/enrollments: create, bulk create, get with honest job labels, list, pause, resume, stop."""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Status

from api.models import BulkEnrollment
from sequences.models import Enrollment, Sequence
from sequences.permissions import OPERATE, VIEW_ENROLLMENT
from sequences.services import stops
from sequences.storable import row_id

from ..auth import actor_of, needs
from ..bulk import bulk_enrollment_submit, bulk_out
from ..contacts import BadRow, contact_row, enrollment_create_from_row
from ..present import enrollment_out, enrollment_row, page_of, stop_out
from ..schemas import BulkIn, BulkOut, EnrollIn, EnrollmentActionOut, EnrollmentOut, EnrollmentPage, Error, StopIn

router = Router(tags=["enrollments"])


@router.post("", response={201: EnrollmentOut, 404: Error, 409: Error, 422: Error})
@needs(OPERATE)
def enrollment_create(request, body: EnrollIn):
    """Enroll one contact (created or, with update_contact, updated as `enroll` does) and schedule step 1."""
    row = contact_row(body.dict())
    get_object_or_404(Sequence, pk=body.sequence_id)
    enrollment = enrollment_create_from_row(
        sequence_id=body.sequence_id, row=row, update_contact=body.update_contact, actor=actor_of(request)
    )
    return Status(201, enrollment_out(enrollment.pk))


@router.get("", response=EnrollmentPage)
@needs(VIEW_ENROLLMENT)
def enrollment_list(request, sequence_id: int | None = None, status: str = "", page: int = 1, per_page: int = 50):
    """Enrollments, newest first, of one sequence and/or in one status (active, paused, stopped, completed)."""
    qs = Enrollment.objects.select_related("contact")
    if sequence_id is not None:  # past every id (SQLite cannot even compare it): no sequence's
        qs = qs.filter(sequence_id=sequence_id) if row_id(sequence_id) is not None else qs.none()
    if status:
        qs = qs.filter(status=status)
    return page_of(qs.order_by("-id"), page=page, per_page=per_page, item=enrollment_row)


@router.post("/bulk", response={202: BulkOut, 422: Error})
@needs(OPERATE)
def enrollment_bulk(request, body: BulkIn):
    """Enroll up to 10,000 contacts in the background; follow `status_url` for progress and per-row results."""
    bulk = bulk_enrollment_submit(
        sequence_id=body.sequence_id,
        contacts=[c.dict() for c in body.contacts],
        update_contacts=body.update_contacts,
        token_id=request.auth.pk,
    )
    bulk.refresh_from_db()
    return Status(202, bulk_out(bulk, status_url=_status_url(request, bulk.pk)))


@router.get("/bulk/{bulk_id}", response={200: BulkOut, 404: Error})
@needs(VIEW_ENROLLMENT)
def enrollment_bulk_status(request, bulk_id: int):
    bulk = get_object_or_404(BulkEnrollment, pk=bulk_id)
    return bulk_out(bulk, status_url=_status_url(request, bulk.pk))


def _status_url(request, bulk_id: int) -> str:
    return request.build_absolute_uri(reverse("api:enrollment_bulk_status", kwargs={"bulk_id": bulk_id}))


@router.get("/{enrollment_id}", response={200: EnrollmentOut, 404: Error})
@needs(VIEW_ENROLLMENT)
def enrollment_get(request, enrollment_id: int):
    """An enrollment with each job's honest label: never sent, in flight, already submitted, outcome unknown."""
    get_object_or_404(Enrollment, pk=enrollment_id)
    return enrollment_out(enrollment_id)


@router.post("/{enrollment_id}/pause", response={200: EnrollmentActionOut, 404: Error, 409: Error})
@needs(OPERATE)
def enrollment_pause(request, enrollment_id: int):
    get_object_or_404(Enrollment, pk=enrollment_id)
    summary = stops.enrollment_pause(enrollment_id=enrollment_id, actor=actor_of(request))
    return {"enrollment": enrollment_out(enrollment_id), "result": stop_out(summary)}


@router.post("/{enrollment_id}/resume", response={200: EnrollmentActionOut, 404: Error, 409: Error})
@needs(OPERATE)
def enrollment_resume(request, enrollment_id: int):
    get_object_or_404(Enrollment, pk=enrollment_id)
    stops.enrollment_resume(enrollment_id=enrollment_id, actor=actor_of(request))
    return {"enrollment": enrollment_out(enrollment_id), "result": None}


@router.post("/{enrollment_id}/stop", response={200: EnrollmentActionOut, 404: Error, 409: Error, 422: Error})
@needs(OPERATE)
def enrollment_stop(request, enrollment_id: int, body: StopIn | None = None):
    """Stop for good: pending jobs are canceled; what had passed the hand-off is counted, never recalled."""
    get_object_or_404(Enrollment, pk=enrollment_id)
    if request.body.strip() not in (b"", b"null") and not request.body.lstrip().startswith(b"{"):
        # The body is optional, but one that is there is an object: an array or a number is not "no reason"
        # (the schema would read it as an empty object).
        raise BadRow('the body is a JSON object, e.g. {"reason": "operator"}, or nothing')
    reason = body.reason if body else Enrollment.StopReason.OPERATOR
    if reason != Enrollment.StopReason.OPERATOR:
        # A reply, an unsubscribe, a complaint or a bounce is evidence the system records itself; an operator's
        # stop saying so would be counted as one in the results.
        raise BadRow(f"reason: an operator stops with {Enrollment.StopReason.OPERATOR.value!r}, not {reason[:40]!r} "
                     "(outcomes such as replies, complaints and bounces come from evidence)")
    summary = stops.enrollment_stop(
        enrollment_id=enrollment_id, reason=reason, actor=actor_of(request), source="api"
    )
    return {"enrollment": enrollment_out(enrollment_id), "result": stop_out(summary)}
