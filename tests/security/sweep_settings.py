"""Settings for the control of tests/security/test_schema_sweep.py: the project's, with the URLs of
tests.security.sweep_urls (one more API operation, which answers outside its schema)."""

from outreach.settings import *  # noqa: F403

ROOT_URLCONF = "tests.security.sweep_urls"
SILENCED_SYSTEM_CHECKS = ["urls.W005"]  # the API's namespace twice: the project's mount is shadowed by this one
