"""The project's URLs, the API with one more operation: GET /api/v1/broken/{sequence_id} answers a sequence that
exists with a body its schema refuses (an `id` that is text), and any other id with the documented 404."""

from __future__ import annotations

from django.http import Http404, JsonResponse
from django.urls import path
from ninja import Router

from api.main import api_urls
from api.routes import replies as replies_api
from api.schemas import Error, SequenceOut
from sequences.models import Sequence
from sequences.storable import MAX_ROW_ID

router = Router(tags=["broken"])


@router.get("/{sequence_id}", response={200: SequenceOut, 404: Error})
def broken(request, sequence_id: int):
    if not 0 < sequence_id <= MAX_ROW_ID or not Sequence.objects.filter(pk=sequence_id).exists():
        raise Http404
    return JsonResponse({"id": "not a number"})


# Mounted before the project's URLs are built: ninja takes no router once its URLs exist.
api = path("api/", api_urls({"/v1/replies": replies_api.router, "/v1/broken": router}))

from outreach import urls as project  # noqa: E402 - after the mount above

urlpatterns = [api, *project.urlpatterns]
