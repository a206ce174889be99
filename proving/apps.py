from django.apps import AppConfig


class ProvingConfig(AppConfig):
    """Drills, benchmarks and the harness they share with the tests; no models."""

    name = "proving"
