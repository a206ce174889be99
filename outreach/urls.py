from django.contrib import admin
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path, re_path

from api.main import api_urls
from api.routes import replies as replies_api
from outreach import health, metrics

from .rq_admin import rq_admin_urls

urlpatterns = [
    # For load balancers and orchestrators (no login): can this instance serve; is the process alive.
    path("healthz", health.healthz, name="healthz"),
    path("healthz/live", health.live, name="healthz-live"),
    # Prometheus (a bearer token, OUTREACH_METRICS_TOKEN; off without it).
    path("metrics", metrics.metrics, name="metrics"),
    # Browsers ask for /favicon.ico whatever a page's <link rel="icon"> says (the admin, the API docs, a download):
    # sent once, permanently, to the one icon, so no request of it is a "Not Found" warning in the log.
    path("favicon.ico", lambda request: redirect(static("favicon.svg"), permanent=True), name="favicon"),
    path("admin/rq/", rq_admin_urls()),
    # The inbound ledger's and the watchers' admin pages moved with their models to the inbound app: a bookmark
    # of the old address still finds them.
    re_path(r"^admin/mailboxes/(?P<rest>(inboundmessage|watchlease|watcherprocess)/.*)$",
            lambda request, rest: redirect(f"/admin/inbound/{rest}", permanent=True)),
    path("admin/", admin.site.urls),
    # The JSON API (token auth): /api/v1/..., schema /api/openapi.json, docs /api/docs.
    path("api/", api_urls({"/v1/replies": replies_api.router})),
    # Public endpoints (no login): one-click unsubscribe, provider webhooks.
    path("", include("ui.public")),
    # The operator UI (login required): the replies inbox, then everything else.
    path("", include("ui.replies_urls")),
    path("", include("ui.urls")),
]
