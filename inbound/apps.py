from django.apps import AppConfig


class InboundConfig(AppConfig):
    name = "inbound"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # ESP tracking webhooks (anymail's signal) -> the provider-event ledger; the start-up checks.
        from anymail.signals import tracking

        from . import checks  # noqa: F401 - registers the start-up checks
        from .webhooks import tracking_received

        tracking.connect(tracking_received, dispatch_uid="outreach.mailboxes.tracking")
        # `[[sequence.on_reply]]` in a sequence's TOML: the reply rules (inbound.reply_rules).
        from sequences.config.parts import sequence_part_register

        from .reply_rules_config import PART

        sequence_part_register(PART)
