from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The JSON API, an interface above every domain app. Its models (tokens, idempotency keys, bulk enrollments)
    keep the `sequences` app's tables and migrations (`app_label`); this app loads them."""

    name = "api"
    label = "api"
    default_auto_field = "django.db.models.BigAutoField"
