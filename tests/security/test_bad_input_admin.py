"""Bad input in the Django admin is never a 5xx: each registered model's list and add pages, and the forms and links
on them, driven with the hostile values of the operator pages' sweep (tests/security/test_bad_input_sweep.py, issue
34, item 7). Slow (a minute): the admin's pages are the heaviest to render, and each hostile value renders one.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.api.conftest import api_roles  # noqa: F401 - the admins' webhook permission
from tests.security.sweep import Form, Found, forms_of
from tests.security.test_bad_input_sweep import (  # noqa: F401 - its world and templates
    HUGE_ID,
    _destructive,
    _form_requests,
    _send,
    production_templates,
    world,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_every_django_admin_page_and_form_answers_bad_input_without_a_5xx(world, production_templates):  # noqa: F811
    """The Django admin as an admin of the UI uses it: each registered model's list and add pages and the forms and
    links on them (filters, search, ordering, actions), the same way; a change page with an id past every column.
    The change forms are the add forms with the row's values (their fields pass the same checks), so they are
    left out to keep the sweep short: the Sequence's change page alone, with its steps inline, costs half a
    minute."""
    client, found = world["admin"], Found(logged_in=True)
    pages = ["/admin/"]
    for model in admin.site._registry:
        if not model._meta.managed:  # django_rq's dashboard entry: no table, its pages are tests/security's RQ test
            continue
        info = model._meta.app_label, model._meta.model_name
        first = model._default_manager.order_by("pk").first()
        pages += [reverse(f"admin:{info[0]}_{info[1]}_changelist"), reverse(f"admin:{info[0]}_{info[1]}_add")]
        if first is not None and not isinstance(first.pk, str):
            _send(client, found, "get", reverse(f"admin:{info[0]}_{info[1]}_change", args=[HUGE_ID]),
                  "a row id past every column")
    forms: dict[tuple, Form] = {}
    for url in pages:
        page = _send(client, found, "get", url, "the page")
        if page.status_code == 200 and page["Content-Type"].startswith("text/html"):
            for form in forms_of(page.content.decode(), url):
                if form.action.startswith("/admin/") and not form.action.startswith("/admin/logout/"):
                    forms.setdefault(form.key(), form)
    assert len(forms) > 15, sorted(f.action for f in forms.values())
    posts = []
    for form in forms.values():
        for method, url, what, body in _form_requests(form):
            if method == "get":
                _send(client, found, "get", url, what)
            else:
                posts.append((url, what, body))
    for url, what, body in sorted(posts, key=lambda p: _destructive(p[0])):
        _send(client, found, "post", url, what, body)
    assert not found.rows, found.report()
