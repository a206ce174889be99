from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The JSON API. Its models (tokens, idempotency keys, bulk enrollments) belong to the `sequences` app's
    tables and migrations (`app_label`); this app only loads them."""

    name = "sequences.api"
    label = "sequences_api"
    default_auto_field = "django.db.models.BigAutoField"
