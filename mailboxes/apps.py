from django.apps import AppConfig


class MailboxesConfig(AppConfig):
    name = "mailboxes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # ESP tracking webhooks (anymail's signal) -> the provider-event ledger.
        from anymail.signals import tracking

        from . import checks  # noqa: F401 - registers the start-up checks
        from .webhooks import tracking_received

        tracking.connect(tracking_received, dispatch_uid="outreach.mailboxes.tracking")
