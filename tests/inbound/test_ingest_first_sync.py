"""First sync starts at the connection: history from before the first send is never fetched or stored.

Real Dovecot (INTERNALDATE set by APPEND) and real PostgreSQL, through the real send pipeline.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command

from db.clock import db_now
from inbound.models import InboundMessage
from mailboxes.models import ImapCursor
from proving.harness import mails
from sequences.models import Enrollment
from tests.inbound.test_ingest import poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)


def history(dovecot, days_ago: int, **reply) -> int:
    return dovecot.append("alice", "INBOX", mails.reply(**reply), when=db_now() - timedelta(days=days_ago))


def test_a_folder_is_first_read_from_the_mailboxs_first_submission(imap_mailbox, dovecot):
    old = [
        history(dovecot, 30, to_message_id="", in_reply_to=False, sender=f"friend{i}@example.org", subject="Old thread")
        for i in range(3)
    ]
    old.append(history(dovecot, 10, to_message_id="", in_reply_to=False, subject="Lunch?"))  # ada, before enrolling
    enrollment, job = send_first_step(imap_mailbox)
    new = dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))

    result = poll(imap_mailbox)

    assert result.folders["INBOX"]["fetched"] == 1
    assert list(InboundMessage.objects.values_list("uid", flat=True)) == [new]
    assert ImapCursor.objects.get().last_uid == new
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == "replied"  # by the reply after the send, never by the history
    assert InboundMessage.objects.get().correlation_rule == "in_reply_to"
    assert max(old) < new


def test_a_mailbox_that_sent_nothing_starts_at_uidnext(imap_mailbox, dovecot):
    for i in range(2):
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="", in_reply_to=False, sender=f"p{i}@x.example"))

    assert poll(imap_mailbox).fetched == 0
    cursor = ImapCursor.objects.get()
    assert cursor.last_uid == 2 and not InboundMessage.objects.exists()

    uid = dovecot.append("alice", "INBOX", mails.reply(to_message_id="", in_reply_to=False))
    assert poll(imap_mailbox).fetched == 1
    assert list(InboundMessage.objects.values_list("uid", flat=True)) == [uid]


def test_a_rescan_after_a_uidvalidity_change_also_starts_at_the_first_submission(imap_mailbox, dovecot):
    history(dovecot, 30, to_message_id="", in_reply_to=False, sender="friend@example.org")
    _, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))
    poll(imap_mailbox)
    dovecot.reset_uidvalidity("alice", "INBOX")

    result = poll(imap_mailbox)

    assert result.folders["INBOX"] == {"fetched": 1, "recorded": 1, "duplicates": 1}  # the reply again, a copy
    assert InboundMessage.objects.count() == 2


def test_poll_mailboxes_since_re_reads_history_explicitly_and_it_does_nothing(imap_mailbox, dovecot, capsys):
    enrollment, job = send_first_step(imap_mailbox)
    old = history(dovecot, 30, to_message_id=job.message_id, subject="Lunch?")  # "before" the send
    poll(imap_mailbox)
    assert not InboundMessage.objects.exists()

    day = (db_now() - timedelta(days=31)).date().isoformat()
    call_command("poll_mailboxes", "--once", "--mailbox", imap_mailbox.name, "--since", day)

    row = InboundMessage.objects.get()
    assert row.uid == old and row.correlation_rule == "no_evidence"
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE
    assert "INBOX: 1 new" in capsys.readouterr().out
    call_command("poll_mailboxes", "--once", "--mailbox", imap_mailbox.name, "--since", day)
    assert InboundMessage.objects.count() == 1  # read again: a no-op
