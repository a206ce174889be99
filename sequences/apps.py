from django.apps import AppConfig


class SequencesConfig(AppConfig):
    name = "sequences"
    default_auto_field = "django.db.models.BigAutoField"
