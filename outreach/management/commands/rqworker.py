"""`manage.py rqworker`: django-rq's worker command, the same command line, started without Django's system checks.

The checks import the URLconf (every page and the API's schemas), a second of CPU at each start, for a process
that serves no URL. They run where they matter: `manage.py migrate` and `manage.py check` (scripts/run runs
`migrate` before it starts anything), and `runserver`. The `outreach` app comes before `django_rq` in
INSTALLED_APPS, so this command is the one that runs.
"""

from __future__ import annotations

from django_rq.management.commands.rqworker import Command as DjangoRqWorkerCommand


class Command(DjangoRqWorkerCommand):
    requires_system_checks = []  # a worker serves no URL: see above
