"""The previous release's database, as that release left it, for tests/ops/test_upgrade.py.

PREVIOUS_RELEASE names the last migration of each of our apps in the previous release (commit 19b969b),
hard-coded: CI runs on a clone without that history. The migrations are today's files up to those names, so the
tables they make are compared with PREVIOUS_SCHEMA (upgrade_schema_19b969b.json: every table and column that
release's own `manage.py migrate` made, read once from a checkout of 19b969b): an edit of an applied migration
that changes what it builds is caught there, since an install that already ran it never runs it again.

The rows are written with the historical models of that state (the migration loader's project state), never with
today's models: a model may have moved to another app since, or gained a column the old tables lack. Values are
what that release wrote: its timeline kinds, stop and cancel reasons, a Fernet token in a `*_sealed` column, the
endpoints it bound each secret to, the dashboard's kept count in its own shape.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from django.apps import apps as django_apps
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.core.management.sql import emit_post_migrate_signal
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# The previous release's (19b969b) last migration of each of our apps; an app of this repository not named here
# did not exist then (it gets no migration). Django's and third-party apps are migrated to their last migration.
PREVIOUS_RELEASE = {
    "mailboxes": "0025_imap_login_refused",
    "inbound": "0004_data_requests_and_review",
    "sequences": "0018_data_requests_and_review",
}
PREVIOUS_SCHEMA: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("upgrade_schema_19b969b.json")).read_text())
PASSWORD = "old release password"
SMTP_PASSWORD = "smtp app password from the old release"
IMAP_PASSWORD = "imap app password from the old release"


def previous_release_migrate(connection) -> Any:
    """Migrate an empty database to the previous release and send post_migrate with that state's models (the
    content types and permissions that release's `migrate` made); the historical apps, to write rows with."""
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    targets = [(app, name) for app, name in PREVIOUS_RELEASE.items()]
    targets += [(app, name) for app, name in graph.leaf_nodes() if app not in PREVIOUS_RELEASE and not _ours(app)]
    plan = executor.migration_plan(targets)
    state = executor.migrate(targets, plan=plan)
    apps = state.apps
    emit_post_migrate_signal(0, False, connection.alias, apps=apps, plan=plan)
    return apps


def _ours(label: str) -> bool:
    """An app of this repository, not Django's or an installed package's (a virtualenv may sit inside the
    repository: its site-packages are not ours)."""
    path = Path(django_apps.get_app_config(label).path).resolve()
    return Path(settings.BASE_DIR).resolve() in path.parents and "site-packages" not in path.parts


def schema_of(connection) -> dict[str, list[str]]:
    """Every table and its columns (names only: the same on both databases)."""
    with connection.cursor() as cursor:
        return {table: sorted(column.name for column in connection.introspection.get_table_description(cursor, table))
                for table in sorted(connection.introspection.table_names(cursor))}


def _plain(value: Any) -> Any:
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict | list):  # jsonb on PostgreSQL (text on SQLite)
        return json.dumps(value, sort_keys=True)
    return value


def rows_of(connection, schema: dict[str, list[str]]) -> dict[str, Counter]:
    """Every row of each table in *schema*, read by raw SQL through its table name: the given columns only."""
    quote = connection.ops.quote_name
    found = {}
    with connection.cursor() as cursor:
        for table, columns in schema.items():
            cursor.execute(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}")
            found[table] = Counter(tuple(_plain(v) for v in row) for row in cursor.fetchall())
    return found


@dataclass(frozen=True)
class OldData:
    """What the test looks for after the upgrade (ids and words of the old rows)."""

    mailbox_id: int
    mailbox_name: str
    mailbox_address: str
    sequence_id: int
    sequence_name: str
    contact_ids: dict[str, int]  # email -> id
    replied_enrollment_id: int  # Ada's: her reply's conversation
    reply_text: str
    reply_inbound_id: int
    suppressed: str
    job_states: dict[int, str]  # job id -> state
    sealed_smtp: str  # the token as stored


def dashboard_numbers(*, sequence_id: int, today: date) -> dict[str, Any]:
    """The dashboard's kept count in the previous release's shape, as its `dashboard_counts.count()` counted the
    rows old_data_write writes (run once in a checkout of 19b969b)."""
    return {
        "activity": {"bounces": {}, "days": 14, "replies": {today.isoformat(): 2},
                     "sends": {(today - timedelta(days=2)).isoformat(): 3},
                     "start": (today - timedelta(days=13)).isoformat()},
        "enrollments": {"active": 1, "stopped": 2},
        "sequences": {str(sequence_id): {"bounced": 0, "complained": 0, "failed": 0, "final_check": 0, "held": 0,
                                         "interested": 0, "meeting": 1, "replied": 1, "sent": 3, "unsubscribed": 1}},
        "stopped_by_reason": {"Replied": 1, "Unsubscribed": 1},
    }


def old_data_write(apps, *, key: bytes) -> OldData:
    """One install's worth of rows, as the previous release wrote them (historical models of *apps*)."""
    now = timezone.now().replace(microsecond=0)
    today = timezone.localdate(now)
    model = apps.get_model
    fernet = Fernet(key)

    def ago(**delta) -> datetime:
        return now - timedelta(**delta)

    group = model("auth", "Group")
    user = model("auth", "User")
    user.objects.create(username="admin", email="admin@acme-sales.example", is_staff=True, is_superuser=True,
                        password=make_password(PASSWORD), date_joined=ago(days=60))
    riley = user.objects.create(username="riley", email="riley@acme-sales.example", password=make_password(PASSWORD),
                                date_joined=ago(days=40))
    riley.groups.add(group.objects.get(name="staff"))

    mailbox = model("mailboxes", "Mailbox").objects.create(
        name="sales-eu", address="sam@acme-sales.example", display_name="Sam from Acme",
        smtp_host="smtp.acme-sales.example", smtp_port=587, smtp_username="sam@acme-sales.example",
        smtp_security="starttls", smtp_password_sealed=fernet.encrypt(SMTP_PASSWORD.encode()).decode(),
        imap_host="imap.acme-sales.example", imap_port=993, imap_username="sam@acme-sales.example",
        imap_security="tls", imap_password_sealed=fernet.encrypt(IMAP_PASSWORD.encode()).decode(),
        imap_folders=["INBOX"], daily_cap=150, window_days="mon,tue,wed,thu,fri", window_timezone="Europe/Berlin",
        last_poll_at=ago(minutes=1), last_poll_ok_at=ago(minutes=1), min_gap=90, gap_jitter=30,
        # What that release's mailboxes.bound.endpoint() said for these settings when the passwords were entered.
        secret_endpoints={
            "smtp_password": "SMTP smtp.acme-sales.example:587 (starttls, as sam@acme-sales.example) with a password",
            "imap_password": "IMAP imap.acme-sales.example:993 (tls, as sam@acme-sales.example) with a password",
        })
    model("mailboxes", "ImapCursor").objects.create(mailbox=mailbox, folder="INBOX", uidvalidity=1700000001,
                                                    last_uid=12, updated_at=ago(minutes=1),
                                                    read_through=ago(minutes=1))
    model("mailboxes", "WatchLease").objects.create(mailbox=mailbox, folder="INBOX", term=3,
                                                    account="imap.acme-sales.example:993 sam@acme-sales.example",
                                                    holder="watcher-web1-4242", taken_at=ago(minutes=5),
                                                    expires_at=now + timedelta(seconds=15))
    model("mailboxes", "WatcherProcess").objects.create(name="watcher-web1-4242", folders=1,
                                                        expires_at=now + timedelta(seconds=15))

    sequence = model("sequences", "Sequence").objects.create(name="Founders in Berlin, Q4", mailbox=mailbox)
    sequence.pool.add(mailbox)
    step_model, variant_model = model("sequences", "Step"), model("sequences", "StepVariant")
    subject = "Quick question, {{ first_name }}"
    steps = [
        step_model.objects.create(sequence=sequence, position=1, subject=subject, wait_seconds=0,
                                  body="Hi {{ first_name }},\n\nWould a 15-minute call next week help {{ company }}?"
                                       "\n\nBest,\nSam"),
        step_model.objects.create(sequence=sequence, position=2, subject="", thread=True, wait_seconds=3 * 86400,
                                  body="Hi {{ first_name }}, following up on my note below.\n\nSam"),
    ]
    variant_a = variant_model.objects.create(step=steps[0], name="A", subject=subject,
                                             body="Hi {{ first_name }}, a short question about {{ company }}.")
    variant_model.objects.create(step=steps[0], name="B", subject="{{ company }} and outbound", weight=2,
                                 body="Hi {{ first_name }}, how does {{ company }} book meetings today?")

    contact_model = model("sequences", "Contact")
    people = {
        "ada@northwind.example": ("Ada", "Lovelace", "Northwind"),
        "zoe@contoso.example": ("Zoë", "Ångström", "Contoso"),  # not ASCII: stored and shown as typed
        "linus@initech.example": ("Linus", "Berg", "Initech"),
    }
    contacts = {email: contact_model.objects.create(email=email, first_name=first, last_name=last, company=company,
                                                    fields={"title": "Founder"}, timezone="Europe/Berlin")
                for email, (first, last, company) in people.items()}
    enrollment_model, job_model = model("sequences", "Enrollment"), model("sequences", "SendJob")
    event_model = model("sequences", "TimelineEvent")
    enrollments, jobs = {}, {}
    stops = {"ada@northwind.example": "replied", "linus@initech.example": "unsubscribed"}
    for n, (email, contact) in enumerate(contacts.items(), 1):
        reason = stops.get(email, "")
        enrollment = enrollment_model.objects.create(
            sequence=sequence, contact=contact, mailbox=mailbox, status="stopped" if reason else "active",
            stop_reason=reason, stopped_at=ago(days=1) if reason else None, version=3 if reason else 2)
        enrollments[email] = enrollment
        first = job_model.objects.create(
            enrollment=enrollment, step=steps[0], variant=variant_a, state="submitted", version=5,
            scheduled_at=ago(days=2), queued_at=ago(days=2), claimed_at=ago(days=2), authorized_at=ago(days=2),
            submitted_at=ago(days=2), worker_id="send-web1-1", attempts=1,
            message_id=f"<0{n}.step1@acme-sales.example>", smtp_reply="250 2.0.0 Ok: queued as 4Xk9")
        later = {"state": "canceled", "canceled_at": ago(days=1), "cancel_reason": reason} if reason else {}
        second = job_model.objects.create(enrollment=enrollment, step=steps[1], scheduled_at=now + timedelta(days=1),
                                          message_id=f"<0{n}.step2@acme-sales.example>", **later)
        jobs[email] = (first, second)
        event_model.objects.create(kind="enrolled", email=email, enrollment=enrollment, at=ago(days=3))
        event_model.objects.create(kind="job_submitted", email=email, enrollment=enrollment, job=first,
                                   version_seen=4, worker_id="send-web1-1", at=ago(days=2),
                                   data={"smtp_reply": "250 2.0.0 Ok: queued as 4Xk9"})
        event_model.objects.create(kind="job_scheduled", email=email, enrollment=enrollment, job=second,
                                   at=ago(days=2))
        if reason:
            event_model.objects.create(kind="job_canceled", email=email, enrollment=enrollment, job=second,
                                       version_seen=1, at=ago(days=1), data={"reason": reason})
            event_model.objects.create(kind="enrollment_stopped", email=email, enrollment=enrollment, at=ago(days=1),
                                       data={"reason": reason, "canceled": 1, "already_submitted": 0})

    inbound_model = model("mailboxes", "InboundMessage")
    reply_text = "Thanks Sam — yes, Thursday at 10 works. Tell me more about the pricing."
    ada = enrollments["ada@northwind.example"]
    reply = inbound_model.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1700000001, uid=10, message_id="<CAF=ada.1@northwind.example>",
        internaldate=ago(days=1), from_address="ada@northwind.example", from_name="Ada Lovelace",
        subject="Re: Quick question, Ada", headers={"in-reply-to": "<01.step1@acme-sales.example>"}, size=2311,
        kind="human_reply", reply_text=reply_text, correlation_rule="in_reply_to", job=jobs["ada@northwind.example"][0],
        enrollment=ada, effect="stopped ada@northwind.example in 1 sequence; 1 follow-up canceled",
        raw=b"From: Ada Lovelace <ada@northwind.example>\r\nSubject: Re: Quick question, Ada\r\n\r\n"
            + reply_text.encode())
    event_model.objects.create(kind="reply_received", email="ada@northwind.example", enrollment=ada, at=ago(days=1),
                               data={"inbound_id": reply.pk, "suggested": "meeting"})
    model("inbound", "Conversation").objects.create(
        enrollment=ada, contact=ada.contact, sequence=sequence, mailbox=mailbox, latest=reply,
        last_reply_at=ago(days=1), replies=1, suggested="meeting", suggested_phrase="Thursday at 10 works",
        suggested_confidence=0.92, suggested_language="en", category="meeting", chosen="meeting", chosen_by="admin",
        chosen_at=ago(hours=20))
    model("inbound", "ReplyLabel").objects.create(inbound=reply, category="meeting", suggested="meeting",
                                                  origin="review", actor="admin")
    conversation = model("inbound", "Conversation").objects.get(pk=ada.pk)
    model("inbound", "Answer").objects.create(
        conversation=conversation, in_reply_to=reply, mailbox=mailbox, author="admin", author_name="Sam",
        recipient="ada@northwind.example", subject="Re: Quick question, Ada", body="Great, invite sent.",
        message_id="<answer.1@acme-sales.example>", state="submitted", server_reply="250 2.0.0 Ok",
        finished_at=ago(hours=19))

    linus = enrollments["linus@initech.example"]
    optout = inbound_model.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1700000001, uid=11, message_id="<optout.2@initech.example>",
        from_address="linus@initech.example", subject="Re: Quick question, Linus", kind="unsubscribe_request",
        reply_text="Please remove me and delete my data.", correlation_rule="in_reply_to",
        job=jobs["linus@initech.example"][0], enrollment=linus, internaldate=ago(days=1))
    model("sequences", "Suppression").objects.create(value="linus@initech.example", action="add",
                                                     reason="unsubscribe", source="inbound", actor="")
    model("sequences", "DataRequest").objects.create(address="linus@initech.example", words="delete my data",
                                                     received_at=ago(days=1), due_on=today + timedelta(days=29),
                                                     inbound=optout)
    colleague = inbound_model.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1700000001, uid=12, message_id="<kim.3@contoso.example>",
        from_address="kim@contoso.example", subject="Quick question, Zoë", kind="human_reply",
        reply_text="Zoë is on leave; I look after this.", correlation_rule="quoted_text", internaldate=ago(hours=6))
    model("sequences", "ReplyMatch").objects.create(
        inbound=colleague, job=jobs["zoe@contoso.example"][0], enrollment=enrollments["zoe@contoso.example"],
        replier="kim@contoso.example", subject_match=True, status="probable", why="the subject of our step 1")

    model("mailboxes", "ProviderEvent").objects.create(provider="smtp", event_id="dsn-1", event_type="delivered",
                                                       recipient="zoe@contoso.example", raw={"status": "2.0.0"},
                                                       job=jobs["zoe@contoso.example"][0])
    model("sequences", "DailySendCount").objects.create(mailbox=mailbox, day=today - timedelta(days=2), sent=3)
    model("sequences", "OperatorAction").objects.create(actor="admin", action="sequence_launch", target=sequence.name,
                                                        target_kind="sequence", target_id=sequence.pk,
                                                        result={"scheduled": 3})
    token = model("sequences", "ApiToken").objects.create(name="crm-sync", role="operator", prefix="out_k3y9",
                                                          digest="9f" * 32)
    endpoint = model("sequences", "WebhookEndpoint").objects.create(url="https://hooks.acme-sales.example/outreach",
                                                                    secret_env="OUTREACH_SECRET_HOOK",
                                                                    event_types=["reply.received"])
    model("sequences", "WebhookDelivery").objects.create(endpoint=endpoint, event_type="reply.received",
                                                         body='{"email": "ada@northwind.example"}',
                                                         state="delivered", attempts=1, next_attempt_at=ago(days=1),
                                                         delivered_at=ago(days=1), last_status=204)
    model("sequences", "BulkEnrollment").objects.create(sequence=sequence, token=token, status="done", total=3,
                                                        processed=3, results={"enrolled": 3}, finished_at=ago(days=3))
    model("sequences", "DashboardCounts").objects.create(
        pk=1, counted_at=now, numbers=dashboard_numbers(sequence_id=sequence.pk, today=today))
    return OldData(
        mailbox_id=mailbox.pk, mailbox_name=mailbox.name, mailbox_address=mailbox.address, sequence_id=sequence.pk,
        sequence_name=sequence.name, contact_ids={e: c.pk for e, c in contacts.items()},
        replied_enrollment_id=ada.pk, reply_text=reply_text, reply_inbound_id=reply.pk,
        suppressed="linus@initech.example",
        job_states={job.pk: job.state for pair in jobs.values() for job in pair},
        sealed_smtp=mailbox.smtp_password_sealed)
