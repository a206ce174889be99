"""Every statement the Django ORM cannot say, and every branch on the database vendor, besides the database's
clock (`db.clock`): here and nowhere else.

The product runs the same code on SQLite (the local run's embedded default) and PostgreSQL (production),
through the ORM. What is left here:

- `EmailDomain`: the part of an address after its "@", with the "@" written into the statement: the ORM's
  `Substr`/`StrIndex` bind it as a parameter, and an expression index serves only the very expression it
  was built on (SQLite never matches one holding a parameter; PostgreSQL not in a generic plan).
- `rows_copied()`: a big import's rows through PostgreSQL's `COPY`, their ids drawn from the table's sequence
  first (COPY returns nothing). `bulk_create` builds one INSERT of N rows in Python, field by field, and that
  work, not the database, bounds a CSV import; SQLite keeps `bulk_create`.
- `like_indexes_dropped()`: a migration operation that drops the `varchar_pattern_ops` twin Django gives
  an indexed CharField on PostgreSQL (nothing here searches by prefix; each index costs every write).
"""

from __future__ import annotations

from django.db import connection, connections, migrations
from django.db.models import CharField, Func, Model
from django.db.models.expressions import DatabaseDefault


class EmailDomain(Func):
    """The domain of an address column ("ada@acme.test" -> "acme.test"), the same text for its index and for
    every lookup by it (`sequences.Contact`'s contact_email_domain_idx). A column only: it is written twice."""

    arity = 1
    template = "SUBSTR(%(expressions)s, STRPOS(%(expressions)s, '@') + 1)"
    output_field = CharField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="SUBSTR(%(expressions)s, INSTR(%(expressions)s, '@') + 1)",
                           **extra_context)


def rows_copied(objs: list[Model], *, batch: int = 100) -> list[Model]:
    """Insert unsaved rows of one model, as `bulk_create(objs)` does (each gets its id); by COPY on PostgreSQL.

    Below `batch` rows, and on SQLite, it is `bulk_create`. A column whose value is the database's own default
    (`db_default`, left unset) is left to the database. No save signals, as with `bulk_create`.
    """
    if not objs:
        return objs
    model = type(objs[0])
    if connection.vendor != "postgresql" or len(objs) < batch:
        return model.objects.bulk_create(objs)
    meta = model._meta
    fields = [f for f in meta.concrete_fields
              if f is not meta.pk and not isinstance(getattr(objs[0], f.attname), DatabaseDefault)]
    db = connections[connection.alias]  # the connection itself: `connection` is a per-call proxy
    quote = db.ops.quote_name
    with db.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                       [meta.db_table, meta.pk.column, len(objs)])
        ids = [row[0] for row in cursor.fetchall()]
        columns = ", ".join(quote(c) for c in [meta.pk.column, *(f.column for f in fields)])
        prepared: list[dict] = [{} for _ in fields]
        with cursor.copy(f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN") as copy:
            for obj, pk in zip(objs, ids, strict=True):
                obj.pk = pk
                copy.write_row([pk, *(_prepared(f, f.pre_save(obj, True), seen, db)
                                      for f, seen in zip(fields, prepared, strict=True))])
    for obj in objs:
        obj._state.adding, obj._state.db = False, db.alias
    return objs


def _prepared(field, value, seen: dict, db):
    """`field.get_db_prep_save(value)`, worked out once per distinct value of a column (`seen`: the column's
    values so far, by type and value). The rows of a batch share most of theirs (a step, a state, empty
    columns): preparing every cell again was about a fifth of a CSV import's time. An unhashable value (a JSON
    field's dict) is prepared every time."""
    try:
        key = (value.__class__, value)
        found = seen.get(key, seen)
    except TypeError:
        return field.get_db_prep_save(value, db)
    if found is seen:
        found = seen[key] = field.get_db_prep_save(value, db)
    return found


def like_indexes_dropped(*fields: tuple[str, str, str]) -> migrations.RunPython:
    """Drop the `_like` index of each (app label, model, field) on PostgreSQL; reversible; nothing elsewhere."""

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
