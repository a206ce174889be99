"""/api/v1/sequences: list, get with steps, pause, resume, launch (a draft)."""

from django.shortcuts import get_object_or_404
from ninja import Router

from sequences.models import Sequence
from sequences.permissions import OPERATE, VIEW
from sequences.services import stops

from ..auth import actor_of, needs
from ..present import sequence_out, stop_out
from ..schemas import Error, SequenceActionOut, SequenceOut

router = Router(tags=["sequences"])


@router.get("", response=list[SequenceOut])
@needs(VIEW)
def sequence_list(request):
    return [sequence_out(pk) for pk in Sequence.objects.order_by("name").values_list("pk", flat=True)]


@router.get("/{sequence_id}", response={200: SequenceOut, 404: Error})
@needs(VIEW)
def sequence_get(request, sequence_id: int):
    get_object_or_404(Sequence, pk=sequence_id)
    return sequence_out(sequence_id)


@router.post("/{sequence_id}/pause", response={200: SequenceActionOut, 404: Error})
@needs(OPERATE)
def sequence_pause(request, sequence_id: int):
    """Pause: every job not yet authorized is canceled; what had passed the hand-off is counted."""
    get_object_or_404(Sequence, pk=sequence_id)
    summary = stops.sequence_pause(sequence_id=sequence_id, actor=actor_of(request))
    return {"sequence": sequence_out(sequence_id), "result": stop_out(summary)}


@router.post("/{sequence_id}/resume", response={200: SequenceActionOut, 404: Error})
@needs(OPERATE)
def sequence_resume(request, sequence_id: int):
    get_object_or_404(Sequence, pk=sequence_id)
    scheduled = stops.sequence_resume(sequence_id=sequence_id, actor=actor_of(request))
    return {"sequence": sequence_out(sequence_id), "scheduled": scheduled}


@router.post("/{sequence_id}/launch", response={200: SequenceActionOut, 404: Error, 409: Error})
@needs(OPERATE)
def sequence_launch(request, sequence_id: int):
    """Launch a draft: its waiting emails are sent from the next dispatcher pass; 409 when it is not a draft."""
    get_object_or_404(Sequence, pk=sequence_id)
    waiting = stops.sequence_launch(sequence_id=sequence_id, actor=actor_of(request))
    return {"sequence": sequence_out(sequence_id), "scheduled": waiting}
