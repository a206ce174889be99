"""`flush` in the test run: on PostgreSQL the tables are emptied by DELETE instead of one TRUNCATE of them all.

pytest-django flushes the database after each transactional test (Django's TransactionTestCase, sequences
not reset): some 570 times a pass. PostgreSQL's TRUNCATE gives each of the ~60 tables a new file and removes
the old one at commit, about 0.3 s per flush on an idle machine and over 1 s on a busy one, while a DELETE of
the few rows a test leaves costs next to nothing. The foreign keys Django makes on PostgreSQL are checked at
commit (DEFERRABLE INITIALLY DEFERRED), so the tables are emptied in one transaction, in any order. Listed in
INSTALLED_APPS by outreach.test_settings only. Asked to reset sequences (`manage.py flush` itself), or on
SQLite (whose flush already deletes), Django's own flush runs.
"""

from __future__ import annotations

from django.apps import apps
from django.core.management.commands import flush
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections, transaction


class Command(flush.Command):
    def handle(self, **options):
        database = options["database"]
        connection = connections[database]
        if connection.vendor != "postgresql" or options.get("reset_sequences", True) or options["interactive"]:
            return super().handle(**options)
        tables = set(connection.introspection.django_table_names(only_existing=True, include_views=False))
        models = [m for m in apps.get_models(include_auto_created=True)
                  if m._meta.managed and not m._meta.proxy and m._meta.db_table in tables]
        with transaction.atomic(using=database):
            for model in models:
                # One `DELETE FROM table` (no signals, no cascade collection: every table is emptied).
                model._base_manager.using(database).all()._raw_delete(database)
        if models and not options.get("inhibit_post_migrate", False):
            emit_post_migrate_signal(options["verbosity"], False, database)
