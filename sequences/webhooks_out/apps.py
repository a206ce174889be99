from django.apps import AppConfig


class WebhooksOutConfig(AppConfig):
    """Outbound webhooks. Its models belong to the `sequences` app's tables and migrations (`app_label`).

    At start-up it subscribes the outbox to the timeline (`sequences.timeline.listener_add`): every event is
    offered to the outbox in its own transaction, and the timeline imports nothing of the webhooks."""

    name = "sequences.webhooks_out"
    label = "sequences_webhooks_out"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ..timeline import listener_add
        from .outbox import outbox_write

        listener_add(outbox_write)
