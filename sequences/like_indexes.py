"""A migration operation that drops the `_like` indexes Django adds on PostgreSQL beside a CharField's index.

Django gives every indexed or unique CharField on PostgreSQL a second index with
`varchar_pattern_ops`, for `LIKE 'prefix%'`. Nothing here searches by prefix
(the admin's search and the incident pages use `icontains` and `iendswith`,
which that index cannot serve), and each index is written again by every row
inserted and by every update of a row that is not HOT (a job's or an
enrollment's state move), so those indexes only cost.
"""

from __future__ import annotations

from django.db import migrations


def like_indexes_dropped(*fields: tuple[str, str, str]) -> migrations.RunPython:
    """Drop the `_like` index of each (app label, model, field); reversible. PostgreSQL only."""

    def each(apps, schema_editor):
        for app_label, model_name, field_name in fields:
            model = apps.get_model(app_label, model_name)
            column = model._meta.get_field(field_name).column
            table = model._meta.db_table
            yield table, column, schema_editor._create_index_name(table, [column], suffix="_like")

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for _, _, name in each(apps, schema_editor):
                schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")

    def create(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for table, column, name in each(apps, schema_editor):
                schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {schema_editor.quote_name(name)} ON "
                                      f"{schema_editor.quote_name(table)} ({schema_editor.quote_name(column)} "
                                      "varchar_pattern_ops)")

    return migrations.RunPython(drop, create)
