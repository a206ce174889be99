from django.apps import AppConfig


class MeetingsConfig(AppConfig):
    name = "meetings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A booking source's signing key is sealed with the mailboxes' keys: `rotate_encryption_key` re-seals it.
        from mailboxes.sealed import sealed_columns_register

        from .models import SEALED, BookingSource

        sealed_columns_register(BookingSource, SEALED)
