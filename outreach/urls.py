from django.contrib import admin
from django.urls import include, path

from sequences.api.main import api_urls

urlpatterns = [
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
    # The JSON API (token auth): /api/v1/..., schema /api/openapi.json, docs /api/docs.
    path("api/", api_urls()),
    # Public endpoints (no login): one-click unsubscribe, provider webhooks.
    path("", include("sequences.web.public")),
    # The operator UI (login required).
    path("", include("sequences.web.urls")),
]
