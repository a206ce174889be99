"""/api/v1/contacts: upsert (lossless, as `enroll`), get by address, search.

No `from __future__ import annotations` in the route modules: ninja reads the annotations of the
permission-wrapped views at runtime, through the wrapper (whose globals are not this module's).
"""

from django.db.models import Q
from django.shortcuts import get_object_or_404
from ninja import Router, Status

from sequences.models import Contact
from sequences.permissions import OPERATE, VIEW_ENROLLMENT
from sequences.selectors import normalize_email

from ..auth import needs
from ..contacts import contact_row, contact_upsert_lossless
from ..present import contact_out, page_of
from ..schemas import ContactIn, ContactOut, ContactPage, ContactUpsertOut, Error, SearchText

router = Router(tags=["contacts"])


@router.post("", response={200: ContactUpsertOut, 201: ContactUpsertOut, 422: Error})
@needs(OPERATE)
def contact_upsert(request, body: ContactIn):
    """Create a contact, or change an existing one in the non-empty values given (template fields merged)."""
    contact, created, changed = contact_upsert_lossless(row=contact_row(body.dict()))
    return Status(201 if created else 200, {"contact": contact_out(contact), "created": created, "changed": changed})


@router.get("", response=ContactPage)
@needs(VIEW_ENROLLMENT)
def contact_search(request, q: SearchText = "", page: int = 1, per_page: int = 50):
    """Contacts whose address, name or company contains `q`."""
    qs = Contact.objects.all()
    if q.strip():
        q = q.strip()
        qs = qs.filter(
            Q(email__icontains=q) | Q(first_name__icontains=q) | Q(last_name__icontains=q) | Q(company__icontains=q)
        )
    return page_of(qs.order_by("email"), page=page, per_page=per_page, item=contact_out)


@router.get("/{email}", response={200: ContactOut, 404: Error})
@needs(VIEW_ENROLLMENT)
def contact_get(request, email: str):
    return contact_out(get_object_or_404(Contact, email=normalize_email(email)))
