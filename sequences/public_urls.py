"""Public endpoints, outside the login wall: one-click unsubscribe and the ESPs' tracking webhooks."""

from django.urls import include, path

from . import public_views

urlpatterns = [
    path("u/<str:token>/", public_views.unsubscribe, name="unsubscribe"),
    # anymail's tracking webhooks (…/webhooks/anymail/sendgrid/tracking/ etc.), behind HTTP basic auth.
    path("webhooks/anymail/", include("mailboxes.webhook_urls")),
]
