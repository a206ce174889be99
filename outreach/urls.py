from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
    # Public endpoints (no login): one-click unsubscribe, provider webhooks.
    path("", include("sequences.web.public")),
    # The operator UI (login required).
    path("", include("sequences.web.urls")),
]
