# Indexes for the operator UI's pages at a million jobs (see BENCHMARKS.md, "pages").

from django.db import migrations

# PostgreSQL only: the trigram indexes serve the contacts search (a part of an address, a name or a
# company, `@domain`); the others the dashboard's sends chart and the sequences list's counts.
# SQLite (the local demo) keeps its plain tables. CREATE EXTENSION needs a role allowed to create
# it (a superuser, or the database's owner on PostgreSQL 13+ for this trusted extension).
FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS contact_email_trgm ON sequences_contact USING gin (email gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS contact_first_name_trgm ON sequences_contact "
    "USING gin (UPPER(first_name::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS contact_last_name_trgm ON sequences_contact "
    "USING gin (UPPER(last_name::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS contact_company_trgm ON sequences_contact "
    "USING gin (UPPER(company::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS sendjob_submitted_at_idx ON sequences_sendjob (submitted_at) "
    "WHERE submitted_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS enrollment_sequence_status_idx ON sequences_enrollment (sequence_id, status)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS contact_email_trgm",
    "DROP INDEX IF EXISTS contact_first_name_trgm",
    "DROP INDEX IF EXISTS contact_last_name_trgm",
    "DROP INDEX IF EXISTS contact_company_trgm",
    "DROP INDEX IF EXISTS sendjob_submitted_at_idx",
    "DROP INDEX IF EXISTS enrollment_sequence_status_idx",
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
        ("sequences", "0009_api_tokens_webhooks"),
    ]

    operations = [
        migrations.RunPython(_run(FORWARD), _run(BACKWARD)),
    ]
