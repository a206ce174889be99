"""The API docs page in Debian's Chromium under the project's Content-Security-Policy: it renders, nothing is refused.

Swagger UI comes from django-ninja's own static files ("ninja" in
INSTALLED_APPS), so the page needs nothing from another origin and no inline
script; the browser would report any refused load or script as a CSP violation.
"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from tests.ui.conftest import browser_type_launch_args  # noqa: F401 - Debian's Chromium

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.one_database("the API docs page in a browser: static files and the CSP", on="sqlite")]


def test_the_docs_page_renders_every_resource_under_the_csp(live_server, page: Page):
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None)
    page.goto(f"{live_server.url}/api/docs")
    for tag in ("contacts", "enrollments", "sequences", "suppressions", "timeline"):
        expect(page.locator(f"#operations-tag-{tag}")).to_be_visible(timeout=20000)
    expect(page.get_by_text("/api/v1/enrollments/{enrollment_id}/stop")).to_be_visible()
    assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
    assert outside == []
