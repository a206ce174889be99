"""Upgrades keep data: a database of the previous release, filled as that release filled it, is migrated to this
code, and every row is still there, unchanged, and the app serves it.

The database is a new one next to the suite's (a SQLite file, or a PostgreSQL database on the same server,
dropped at the end). It is migrated to the previous release's migrations (tests/ops/upgrade_data.py), its tables
are checked against that release's schema, rows are written with that state's historical models, and then
`migrate` runs as an operator runs it. After it, read by raw SQL through the table names (which models moving
between apps never change): every table holds the same rows with the same values in every column it had;
Django's own bookkeeping may only gain rows (and a moved model's content type its new app). Then today's models
load every row, the stored mailbox passwords still decrypt and go where they were entered for, and the pages
(as an admin, and as a staff member whose role's permissions must follow the moved models) show the old data.
"""

from __future__ import annotations

from collections import Counter

import pytest
from cryptography.fernet import Fernet
from django.apps import apps as current_apps
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV
from mailboxes.selectors import imap_password_missing, mailbox_secret
from proving.harness import template
from proving.harness.stack import dedicated_database
from tests.ops import upgrade_data as old

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Django's bookkeeping: a migration adds rows here (applied migrations, new models' content types and
# permissions); none may go. A model moved to another app keeps its content type row under the new label.
BOOKKEEPING = {"django_migrations", "auth_permission", "auth_group_permissions"}
# Role groups a later migration adds (workspaces/0002: the client role); every group there before stays as it was.
NEW_GROUPS = {"clients"}
CONTENT_TYPES = "django_content_type"
# The tables of the models being moved between apps: the old data must fill them for the test to mean much.
MOVED_TABLES = {"mailboxes_inboundmessage", "mailboxes_watchlease", "mailboxes_watcherprocess",
                "sequences_replymatch", "sequences_datarequest"}
# Columns an upgrade drops or rewrites on purpose (table -> columns), each with why in a comment; every other
# column of every row must come through unchanged, and a missing one is lost data.
NOT_KEPT: dict[str, set[str]] = {}


@pytest.fixture
def upgrade_db(tmp_path, monkeypatch):
    """A new, empty database, active for the test; dropped afterwards."""
    monkeypatch.delenv(template.TEMPLATE_ENV, raising=False)  # empty, not a copy of the run's migrated template
    sqlite_file = str(tmp_path / "upgrade.sqlite3") if connection.vendor == "sqlite" else None  # removed by drop()
    database = dedicated_database(tmpdir=tmp_path, name=sqlite_file)
    assert not database.copied
    ContentType.objects.clear_cache()  # its ids are the suite database's
    try:
        with database.active():
            yield database
    finally:
        ContentType.objects.clear_cache()
        database.drop()


def test_an_upgrade_from_the_previous_release_keeps_every_row_and_serves_it(upgrade_db, monkeypatch):
    key = Fernet.generate_key()
    monkeypatch.setenv(KEYS_ENV, key.decode())

    historical = old.previous_release_migrate(connection)
    built = old.schema_of(connection)
    ours = {t: c for t, c in built.items() if t.split("_", 1)[0] in old.PREVIOUS_RELEASE}
    assert ours == old.PREVIOUS_SCHEMA, (
        "today's copies of the previous release's migrations no longer build that release's tables: an applied "
        f"migration was edited. {_schema_diff(old.PREVIOUS_SCHEMA, ours)}")
    data = old.old_data_write(historical, key=key)
    before = old.rows_of(connection, built)
    assert MOVED_TABLES <= {table for table, rows in before.items() if rows}

    call_command("migrate", interactive=False, verbosity=0)

    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    now = old.schema_of(connection)
    lost = {t: sorted(set(cols) - set(now.get(t, ())) - NOT_KEPT.get(t, set())) for t, cols in built.items()}
    lost = {t: cols for t, cols in lost.items() if cols}
    assert not lost, f"the upgrade dropped tables or columns (their data with them): {lost}"
    kept = {t: [c for c in cols if c not in NOT_KEPT.get(t, ())] for t, cols in built.items()}
    after = old.rows_of(connection, kept)
    _same_rows(before, after, kept)
    _spot_checks(data)
    _every_row_in_the_one_workspace()
    _current_models_load_every_row(after)
    _secrets_still_open(data)
    _pages_show_the_old_data(data)


def _schema_diff(expected: dict, found: dict) -> str:
    return "; ".join(f"{t}: previous release {expected.get(t)}, now {found.get(t)}"
                     for t in sorted(set(expected) | set(found)) if expected.get(t) != found.get(t))


def _same_rows(before: dict[str, Counter], after: dict[str, Counter], schema: dict[str, list[str]]) -> None:
    """Every row of every table, unchanged; bookkeeping tables may only gain rows."""
    for table, rows in before.items():
        columns = schema[table]
        gone = rows - after[table]
        if table in BOOKKEEPING:
            assert not gone, f"{table}: rows lost in the upgrade: {_shown(columns, gone)}"
        elif table == "auth_group":
            name = columns.index("name")
            new = after[table] - rows
            assert not gone and {r[name] for r in new} <= NEW_GROUPS, (
                f"{table}: the upgrade changed its rows: before {_shown(columns, gone)}, after {_shown(columns, new)}")
        elif table == CONTENT_TYPES:  # a moved model's row changes its app_label, keeps its id and model name
            pk, name = columns.index("id"), columns.index("model")
            assert {(r[pk], r[name]) for r in rows} <= {(r[pk], r[name]) for r in after[table]}, (
                f"content types lost: {_shown(columns, gone)}")
        else:
            new = after[table] - rows
            assert not gone and not new, (f"{table}: the upgrade changed its rows: before "
                                          f"{_shown(columns, gone)}, after {_shown(columns, new)}")


def _every_row_in_the_one_workspace() -> None:
    """The install becomes one workspace, "Default", with every mailbox, sequence, contact, token and ledger entry in
    it (workspaces/0001, mailboxes/0028, sequences/0023)."""
    from workspaces.models import Workspace

    assert list(Workspace.objects.values_list("name", flat=True)) == ["Default"]
    default = Workspace.objects.get().pk
    for table in ("mailboxes_mailbox", "sequences_sequence", "sequences_contact", "sequences_suppression",
                  "sequences_operatoraction"):
        total = _scalar(f"SELECT COUNT(*) FROM {table}", [])  # noqa: S608 - a table name of this list
        assert total > 0, f"{table}: the old data wrote no row to move"
        assert _scalar(f"SELECT COUNT(*) FROM {table} WHERE workspace_id = %s", [default]) == total, table  # noqa: S608


def _shown(columns: list[str], rows: Counter) -> list[dict]:
    return [dict(zip(columns, row, strict=True)) for row in rows]


def _scalar(sql: str, params: list) -> object:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (value,) = cursor.fetchone()
    return value


def _spot_checks(data: old.OldData) -> None:
    """A few values read through the table names, in words a reader checks at a glance."""
    assert _scalar("SELECT reply_text FROM mailboxes_inboundmessage WHERE id = %s",
                   [data.reply_inbound_id]) == data.reply_text
    assert _scalar("SELECT smtp_password_sealed FROM mailboxes_mailbox WHERE id = %s",
                   [data.mailbox_id]) == data.sealed_smtp
    for job_id, state in data.job_states.items():
        assert _scalar("SELECT state FROM sequences_sendjob WHERE id = %s", [job_id]) == state
    assert _scalar("SELECT first_name FROM sequences_contact WHERE email = %s", ["zoe@contoso.example"]) == "Zoë"
    assert _scalar("SELECT reason FROM sequences_suppression WHERE value = %s", [data.suppressed]) == "unsubscribe"
    assert _scalar("SELECT COUNT(*) FROM sequences_datarequest WHERE address = %s", [data.suppressed]) == 1


def _current_models_load_every_row(after: dict[str, Counter]) -> None:
    """Today's models, wherever they live now, read every row of their tables."""
    read = set()
    for model in current_apps.get_models():
        table = model._meta.db_table
        if model._meta.proxy or not model._meta.managed or table not in after:
            continue
        assert len(list(model._base_manager.all())) == sum(after[table].values()), model._meta.label
        read.add(table)
    assert MOVED_TABLES <= read


def _secrets_still_open(data: old.OldData) -> None:
    mailbox = Mailbox.objects.get(pk=data.mailbox_id)
    assert mailbox_secret(mailbox, "smtp_password") == old.SMTP_PASSWORD
    assert mailbox_secret(mailbox, "imap_password") == old.IMAP_PASSWORD
    assert imap_password_missing(mailbox) == ""


def _get(client: Client, url: str, *words: str) -> None:
    page = client.get(url)
    assert page.status_code == 200, (url, page.status_code)
    body = page.content.decode()
    for word in words:
        assert word in body, f"{url} does not show {word!r}"


def _pages_show_the_old_data(data: old.OldData) -> None:
    admin = Client()
    admin.force_login(User.objects.get(username="admin"))
    ada, zoe = data.contact_ids["ada@northwind.example"], data.contact_ids["zoe@contoso.example"]
    _get(admin, reverse("dashboard"), data.sequence_name)
    _get(admin, reverse("sequence_detail", args=[data.sequence_id]), data.sequence_name, "ada@northwind.example")
    _get(admin, reverse("contact_detail", args=[ada]), "ada@northwind.example", "Lovelace", "Northwind")
    _get(admin, reverse("contact_detail", args=[zoe]), "zoe@contoso.example", "Zoë", "Ångström")
    _get(admin, reverse("enrollment_detail", args=[data.replied_enrollment_id]), "ada@northwind.example")
    _get(admin, reverse("reply_list"), "ada@northwind.example")
    _get(admin, reverse("reply_detail", args=[data.replied_enrollment_id]), "Thursday at 10 works")
    _get(admin, reverse("inbound_detail", args=[data.reply_inbound_id]), "ada@northwind.example")
    _get(admin, reverse("inbound_probable"), "kim@contoso.example")
    _get(admin, reverse("suppression_list"), data.suppressed)
    _get(admin, reverse("mailbox_list"), data.mailbox_name, data.mailbox_address, "password stored encrypted")
    _get(admin, reverse("mailbox_edit", args=[data.mailbox_id]), data.mailbox_address)

    # A staff member logs in with the password the old release stored; the staff role's "view inbound message"
    # follows the model to its new app.
    staff = Client()
    login = staff.post(reverse("login"), {"username": "riley", "password": old.PASSWORD})
    assert login.status_code == 302, login.content.decode()[:500]
    _get(staff, reverse("inbound_list"), "ada@northwind.example")
    _get(staff, reverse("reply_list"), "ada@northwind.example")
