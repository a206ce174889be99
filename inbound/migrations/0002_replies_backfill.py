"""The replies inbox for replies recorded before it existed: one conversation per enrollment with a correlated
human reply, auto-reply or unsubscribe request (first copies only; metadata-only mail never).

Frozen here (a migration must not import app code that changes later): the kinds, and the category each starts
with. Out-of-office and unsubscribe follow what ingestion decided; a human reply recorded before the replies
inbox starts as Other, unhandled, for an operator to categorize (the classifier's suggestion applies to replies
recorded from now on).
"""

from django.db import migrations

STARTS_AS = {"human_reply": "other", "auto_reply": "out_of_office", "unsubscribe_request": "unsubscribe"}
BATCH = 1000


def backfill(apps, schema_editor):
    Inbound = apps.get_model("mailboxes", "InboundMessage")
    Conversation = apps.get_model("inbound", "Conversation")
    rows = (Inbound.objects.filter(kind__in=list(STARTS_AS), job__isnull=False, enrollment__isnull=False,
                                   duplicate_of__isnull=True).exclude(content="metadata")
            .order_by("enrollment_id", "committed_at", "id")
            .values_list("id", "enrollment_id", "enrollment__contact_id", "enrollment__sequence_id", "mailbox_id",
                         "kind", "committed_at", "classification_reason"))
    made, current, count = [], None, 0

    def close():
        if current is not None:
            made.append(Conversation(replies=count, **current))

    for pk, enrollment, contact, sequence, mailbox, kind, at, reason in rows.iterator(chunk_size=BATCH):
        if current is None or current["enrollment_id"] != enrollment:
            close()
            current, count = {"enrollment_id": enrollment, "contact_id": contact, "sequence_id": sequence}, 0
            if len(made) >= BATCH:
                Conversation.objects.bulk_create(made, ignore_conflicts=True)
                made = []
        category = STARTS_AS[kind]
        current.update(latest_id=pk, mailbox_id=mailbox, last_reply_at=at, suggested=category, category=category,
                       suggested_phrase=reason[:300] if kind != "human_reply" else "",
                       suggested_confidence=1.0 if kind != "human_reply" else 0.0)
        count += 1
    close()
    Conversation.objects.bulk_create(made, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("inbound", "0001_replies_inbox")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
