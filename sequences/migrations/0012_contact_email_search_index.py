# The contacts search's trigram index on the address moves to UPPER(email), as on the other columns.
#
# On the plain column, PostgreSQL (pg_trgm >= 1.4) also answers `email = ANY(...)` from the trigram index, and
# its planner prefers it to the unique btree for an IN list: ingestion's lookups of a batch's senders
# (`email IN (200 addresses)`) took tens of milliseconds each at a few thousand contacts. On UPPER(email) the
# trigram index serves only what it is for, the case-insensitive LIKE of a search or a domain ("@corp.test"),
# and equality stays on the btree.

from django.db import migrations

FORWARD = [
    "DROP INDEX IF EXISTS contact_email_trgm",
    "CREATE INDEX IF NOT EXISTS contact_email_upper_trgm ON sequences_contact "
    "USING gin (UPPER(email::text) gin_trgm_ops)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS contact_email_upper_trgm",
    "CREATE INDEX IF NOT EXISTS contact_email_trgm ON sequences_contact USING gin (email gin_trgm_ops)",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0011_daily_send_count"),
    ]

    operations = [
        migrations.RunPython(_run(FORWARD), _run(BACKWARD)),
    ]
