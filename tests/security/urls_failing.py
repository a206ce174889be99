"""The project's URLs and one view that fails, to see what a 500 leaves in the log."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from outreach.urls import urlpatterns as project


@login_not_required
def failing(request):
    raise RuntimeError("a view that fails")


urlpatterns = [path("failing-for-tests/", failing), *project]
