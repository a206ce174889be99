"""A model instance's INSERT written out, so that what belongs with it runs in the same statement.

Django compiles the INSERT (values, database defaults, field preparation); the caller wraps it in a
data-modifying CTE with its event or another write, and the values the database decided come back
into the instance as `Model.save` would leave them. PostgreSQL only: elsewhere the callers save.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.sql import InsertQuery


def insert_sql(instance: Model) -> tuple[str, list[Any], list[Field]]:
    """(SQL, params) of the new `instance`'s INSERT without RETURNING, and the fields to return: the primary
    key and the values the database decides (a db_default such as its clock), as Model.save returns them."""
    meta = instance._meta
    pk_set = instance.pk is not None
    fields = [f for f in meta.local_concrete_fields if not f.generated and (pk_set or f is not meta.auto_field)]
    returned = [meta.pk, *(f for f in fields if f is not meta.pk
                           and hasattr(f.pre_save(instance, add=True), "resolve_expression"))]
    query = InsertQuery(type(instance))
    query.insert_values(fields, [instance])
    ((sql, params),) = query.get_compiler(connection=connection).as_sql()
    return sql, list(params), returned


@cache
def column_converters(field: Field, vendor: str) -> tuple[Any, tuple]:
    """A concrete field's column and the converters the ORM applies to a value read from it (`vendor`: the
    connection's, which decides them)."""
    col = field.get_col(field.model._meta.db_table)
    return col, tuple(connection.ops.get_db_converters(col) + field.get_db_converters(connection))


def converted(field: Field, value: Any) -> Any:
    """A value read from the field's column, as the ORM would hand it to the instance."""
    col, converters = column_converters(field, connection.vendor)
    for converter in converters:
        value = converter(value, col, connection)
    return value


def returned_assign(instance: Model, fields: list[Field], values: list[Any]) -> None:
    """Set what RETURNING gave back for `fields` on the instance, converted as the ORM would; it is saved now."""
    for field, value in zip(fields, values, strict=True):
        setattr(instance, field.attname, converted(field, value))
    instance._state.adding, instance._state.db = False, connection.alias


def row_insert(instance: Model, *, also: tuple[str, list] | None = None) -> None:
    """INSERT the new `instance` and run `also` (SQL, params: a data-modifying statement without RETURNING)
    in the same statement on PostgreSQL; elsewhere save, then run it."""
    if connection.vendor != "postgresql":
        instance.save(force_insert=True)
        if also is not None:
            with connection.cursor() as cursor:
                cursor.execute(*also)
        return
    sql, params, returned = insert_sql(instance)
    also_sql, also_params = (f"WITH also AS ({also[0]}) ", also[1]) if also is not None else ("", [])
    with connection.cursor() as cursor:
        cursor.execute(f"{also_sql}{sql} RETURNING {', '.join(f.column for f in returned)}", [*also_params, *params])
        returned_assign(instance, returned, list(cursor.fetchone()))


def ids_reserve(model: type[Model], count: int) -> list[int]:
    """The next `count` ids of `model`'s table, taken now (for rows written by COPY, which returns none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                       [model._meta.db_table, model._meta.pk.column, count])
        return [row[0] for row in cursor.fetchall()]


def rows_copy(instances: list[Model]) -> None:
    """Write new instances of one model, their ids set (`ids_reserve`), with one COPY: far cheaper than an
    INSERT of many rows' parameters. Columns the database fills (a db_default) are left to it."""
    if not instances:
        return
    model = type(instances[0])
    meta = model._meta
    first = instances[0]
    fields = [f for f in meta.local_concrete_fields
              if not f.generated and not hasattr(f.pre_save(first, add=True), "resolve_expression")]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    # Django's error classes (IntegrityError for a unique violation), as for any statement it runs.
    with connection.wrap_database_errors, connection.cursor() as cursor, \
            cursor.cursor.copy(f'COPY "{meta.db_table}" ({columns}) FROM STDIN') as copy:
        for instance in instances:
            copy.write_row([f.get_db_prep_save(f.pre_save(instance, add=True), connection) for f in fields])
    for instance in instances:
        instance._state.adding, instance._state.db = False, connection.alias
