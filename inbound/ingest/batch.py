"""One batch of new UIDs: sizes, headers, triage, bodies only where needed, then the records.

1. FETCH sizes and INTERNALDATE (no content), then the headers (``BODY.PEEK[HEADER]``), a few MB per
   command, each cut at OUTREACH_INBOUND_FETCH_LIMIT.
2. Two queries for the whole batch: which named Message-IDs are ours, which senders are enrolled; a
   third, for the mail that may act, of what the folder holds already of its UIDs and Message-IDs.
3. Mail that names nothing of ours, comes from nobody enrolled and shows no machine signal in its
   header cannot act: it becomes a metadata-only row without its body ever being fetched.
4. The rest is fetched whole (``BODY.PEEK[]<0.N>``), classified, correlated and committed with its
   effects, one transaction each; the metadata rows before it are committed first, with the cursor,
   so the cursor never passes a message whose transaction has not committed.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings

from mailboxes.imap.fetch import FetchedMessage
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox

from .correlate import own_copy, ties_in_headers
from .effects import own_copy_effect
from .parse import parse_headers
from .record import Recorded, inbound_record, metadata_batch_record, metadata_row, recorded_for

FETCH_BUDGET = 16 * 1024 * 1024  # bytes asked for in one FETCH (by RFC822.SIZE, each capped at the limit)


def batch_ingest(
    session: ImapSession, mailbox: Mailbox, folder: str, uidvalidity: int, uids: list[int], *, sent_folder: bool = False
) -> dict[str, int]:
    """Ingest *uids* (ascending) of the selected folder.

    Returns counts: fetched, recorded, duplicates, and bodies (messages read whole: those that may act,
    each classified and recorded in its own transaction with its effects).
    """
    limit = settings.OUTREACH_INBOUND_FETCH_LIMIT
    counts = {"fetched": 0, "recorded": 0, "duplicates": 0, "bodies": 0}
    metas = session.fetch_meta(uids)
    heads = list(session.fetch_content(metas, header_only=True, limit=limit, budget=FETCH_BUDGET))
    parsed = {m.uid: parse_headers(m.raw) for m in heads}
    ties = ties_in_headers(parsed)
    needs_body = [m for m in heads if ties.may_act(parsed[m.uid])]
    bodies = _bodies(session, needs_body, limit)
    # What the folder holds of the mail that may act: one query for the batch, kept up to date as it commits.
    recorded = recorded_for(mailbox, folder, uidvalidity, [m.uid for m in needs_body],
                            [parsed[m.uid].message_id for m in needs_body]) if needs_body else Recorded()
    pending = []  # metadata-only rows not yet committed, in UID order

    def flush(last_uid: int) -> None:
        done = metadata_batch_record(folder=folder, uidvalidity=uidvalidity, rows=pending, last_uid=last_uid)
        counts["recorded"] += done["recorded"]
        counts["duplicates"] += done["duplicates"]
        if done["recorded"]:  # committed (a concurrent poll's rows would have rolled all of them back)
            recorded.add(pending)
        pending.clear()

    wanted = {m.uid for m in needs_body}
    for head in heads:
        counts["fetched"] += 1
        if head.uid not in wanted:
            p = parsed[head.uid]
            own = own_copy(p, mailbox, folder=folder, sent_folder=sent_folder, known=ties.ours)
            effect = {"effect": own_copy_effect(own)} if own else {}
            pending.append(metadata_row(mailbox, folder, uidvalidity, head, p.message_id, **effect))
            continue
        if pending:
            flush(pending[-1].uid)
        whole = next(bodies, None)
        if whole is None or whole.uid != head.uid:  # expunged between the two fetches: nothing to record
            bodies = _bodies(session, [m for m in needs_body if m.uid > head.uid], limit)
            continue
        counts["bodies"] += 1
        outcome = inbound_record(
            mailbox_id=mailbox.pk,
            folder=folder,
            uidvalidity=uidvalidity,
            fetched=whole,
            mailbox=mailbox,
            known=ties.ours,
            looked_up=ties.looked_up,
            recorded=recorded,
            sent_folder=sent_folder,
        )
        counts["recorded"] += outcome.created
        counts["duplicates"] += outcome.duplicate
    if pending:
        flush(pending[-1].uid)
    return counts


def _bodies(session: ImapSession, messages: list[FetchedMessage], limit: int) -> Iterator[FetchedMessage]:
    return session.fetch_content(messages, header_only=False, limit=limit, budget=FETCH_BUDGET)
