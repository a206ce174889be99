"""Hand-written INSERTs (sequences.inserts) and the events that name a row's id (sequences.timeline)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from mailboxes.imap import FetchedMessage
from mailboxes.ingest.record import metadata_row
from mailboxes.models import ImapCursor, InboundMessage
from sequences.inserts import ids_reserve, row_insert, rows_copy
from sequences.models import Suppression, TimelineEvent
from sequences.timeline import Event, event_record_reserving, event_record_with_row
from tests.factories import MailboxFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _row(mailbox, uid: int, message_id: str = "") -> InboundMessage:
    fetched = FetchedMessage(uid=uid, internaldate=timezone.now(), raw=b"Subject: x\r\n\r\n", size=14, flags=())
    return metadata_row(mailbox, "INBOX", 1, fetched, message_id or f"<m{uid}@example.test>")


def test_a_row_and_the_statement_that_belongs_with_it_are_written_together():
    mailbox = MailboxFactory()
    cursor = ImapCursor.objects.create(mailbox=mailbox, folder="INBOX", uidvalidity=1, last_uid=0)
    row = _row(mailbox, 7)
    with transaction.atomic():
        row_insert(row, also=("UPDATE mailboxes_imapcursor SET last_uid = %s WHERE id = %s", [7, cursor.pk]))
    assert row.pk is not None and not row._state.adding
    assert InboundMessage.objects.get(pk=row.pk).uid == 7
    cursor.refresh_from_db()
    assert cursor.last_uid == 7


def test_a_row_written_with_its_event_gets_the_databases_defaults_and_the_event_names_it():
    with transaction.atomic():
        entry = Suppression(value="ada@example.test", is_domain=False, action=Suppression.Action.ADD,
                            reason=Suppression.Reason.MANUAL)
        event = event_record_with_row(entry, id_key="entry", kind=Event.SUPPRESSION_ADDED, email=entry.value,
                                      value=entry.value)
    stored = Suppression.objects.get(pk=entry.pk)
    assert entry.created_at == stored.created_at  # the db_default came back, as Model.save leaves it
    assert TimelineEvent.objects.get(pk=event.pk).data["entry"] == entry.pk == event.data["entry"]


def test_an_event_can_name_a_row_that_is_written_after_it():
    mailbox = MailboxFactory()
    with transaction.atomic():
        event, reserved = event_record_reserving(InboundMessage, id_key="inbound", kind=Event.INBOUND_RECEIVED,
                                                 email="ada@example.test", classified="human_reply")
        row = _row(mailbox, 3)
        row.pk = reserved
        row_insert(row)
    assert TimelineEvent.objects.get(pk=event.pk).data["inbound"] == reserved
    assert InboundMessage.objects.get(pk=reserved).uid == 3


def test_rows_are_copied_with_the_ids_taken_for_them():
    mailbox = MailboxFactory()
    rows = [_row(mailbox, uid) for uid in (1, 2, 3)]
    with transaction.atomic():
        for row, pk in zip(rows, ids_reserve(InboundMessage, 3), strict=True):
            row.pk = pk
        rows_copy(rows)
    assert sorted(InboundMessage.objects.values_list("pk", "uid")) == sorted((r.pk, r.uid) for r in rows)
    assert all(r.content == InboundMessage.Content.METADATA for r in InboundMessage.objects.all())


def test_a_copied_row_that_breaks_a_unique_constraint_raises_djangos_integrity_error():
    mailbox = MailboxFactory()
    with transaction.atomic():
        row_insert(_row(mailbox, 1))
    again = _row(mailbox, 1, message_id="<other@example.test>")  # the same UID of the same folder
    again.pk = ids_reserve(InboundMessage, 1)[0]
    with pytest.raises(IntegrityError), transaction.atomic():
        rows_copy([again])
    assert InboundMessage.objects.count() == 1
