"""Contacts: search by address, name, company or domain, and one contact's history everywhere.

Reads only. The search is paged and every filter is one an index serves on PostgreSQL (the
trigram indexes of the contacts migration): an address or a part of one, a name or a company,
or `@domain` for everyone at a domain.
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Lower
from django.shortcuts import get_object_or_404, render

from inbound.models import InboundMessage
from sequences import job_rows as labelled
from sequences.models import GIVEN_REASON_CHOICES, Contact, Sequence, Suppression
from sequences.permissions import MANAGE_SUPPRESSIONS, OPERATE, VIEW_ENROLLMENT
from sequences.selectors import jobs_with_labels, normalize_email, suppression_active_for

from .access import page_of, query_without_page, ui_view
from .forms import SearchForm

LIST_PAGE = 20  # contacts a page: on a phone each is a card of five lines or more


def contacts_search(q: str) -> QuerySet[Contact]:
    """Contacts matching `q`: `@domain` matches the domain; anything else a part of address, name or company."""
    qs = Contact.objects.all()
    q = q.strip()
    if q.startswith("@"):
        qs = qs.filter(email__iendswith=normalize_email(q))
    elif q:
        words = q.split()
        for word in words:
            # Addresses are stored lowercased; `icontains` (UPPER(email) LIKE) is what the trigram index serves.
            qs = qs.filter(
                Q(email__icontains=normalize_email(word))
                | Q(first_name__icontains=word)
                | Q(last_name__icontains=word)
                | Q(company__icontains=word)
            )
    if not q:
        return qs.order_by("email")
    # Ordered by an expression, not the column: otherwise PostgreSQL walks the whole email index in
    # order, testing every contact against the pattern, instead of reading the few the trigram
    # indexes find and sorting them (addresses are stored lowercased: the order is the same).
    return qs.order_by(Lower("email"))


@ui_view(VIEW_ENROLLMENT)
def contact_list(request):
    form = SearchForm(request.GET)
    q = form.cleaned_data["q"].strip() if form.is_valid() else ""
    page = page_of(request, contacts_search(q), per_page=LIST_PAGE)
    counts = dict(
        Contact.objects.filter(pk__in=[c.pk for c in page]).annotate(n=Count("enrollments")).values_list("pk", "n")
    )
    return render(
        request,
        "ui/contact_list.html",
        {
            "page": page,
            "rows": [(c, counts.get(c.pk, 0)) for c in page],
            "q": q,
            "query": query_without_page(request),
        },
    )


@ui_view(VIEW_ENROLLMENT)
def contact_detail(request, pk: int):
    contact = get_object_or_404(Contact, pk=pk)
    enrollments = contact.enrollments.select_related("sequence__mailbox").order_by("-id")
    jobs = jobs_with_labels().filter(enrollment__contact=contact).order_by("-id")[:200]
    domain = "@" + contact.email.rsplit("@", 1)[-1]
    inbound = (
        InboundMessage.objects.filter(Q(enrollment__contact=contact) | Q(from_address__iexact=contact.email))
        .select_related("mailbox", "enrollment__sequence")
        .order_by("-committed_at", "-id")[:100]
    )
    return render(
        request,
        "ui/contact_detail.html",
        {
            "contact": contact,
            "enrollments": enrollments,
            "job_rows": labelled.job_rows(jobs),
            "ledger": Suppression.objects.filter(value__in=[contact.email, domain]).order_by("-id"),
            "blocked": suppression_active_for(contact.email),
            "inbound": inbound,
            "fields": sorted((contact.fields or {}).items()),
            "can_operate": request.user.has_perm(OPERATE),
            "can_suppress": request.user.has_perm(MANAGE_SUPPRESSIONS),
            "sequences": Sequence.objects.exclude(enrollments__contact=contact).order_by("name"),
            "reasons": GIVEN_REASON_CHOICES,
        },
    )
