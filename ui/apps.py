from django.apps import AppConfig


class UiConfig(AppConfig):
    """The operator UI: pages, forms and their queries, above every domain app (no model of its own)."""

    name = "ui"
    label = "ui"
