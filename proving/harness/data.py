"""Data builders for the tests, drills and benchmarks: mailboxes, sequences, contacts, enrollments.

sequence_create and enroll write what the product writes, through the real
services where there is one. The bench's bulk builders insert what the
services would have written (step 1 submitted an hour ago, step 2 -- the
follow-up the product guards -- queued now) with bulk_create or
generate_series, because setting up 10^6 jobs one service call at a time
would take longer than measuring them. Timeline history is not back-filled: no
measured query reads it.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.db.models import NOT_PROVIDED

from db.clock import db_now
from mailboxes.models import Mailbox
from sequences.models import Contact, Enrollment, SendJob, Sequence, Step
from sequences.services.enrollments import contact_upsert, enrollment_create

S = SendJob.State
BODY = (
    "Hi {{ first_name }},\n\nI noticed {{ company }} is hiring for its sales team. We help teams like yours "
    "book more meetings without adding headcount: our customers see about 30% more replies in the first month.\n\n"
    "Would a 15-minute call next week be useful? If not, just let me know and I will not write again.\n\n"
    "Best,\nSam\n"
)


def mailbox_create(*, name: str, address: str, smtp_port: int, display_name: str, daily_cap: int,
                   **fields) -> Mailbox:
    """A sending identity on a loopback SMTP server. Without IMAP settings it reads no replies, and sends
    follow-ups all the same (`follow_ups_without_reply_view`): the harness's mail goes to sinks."""
    fields.setdefault("follow_ups_without_reply_view", True)
    fields.setdefault("smtp_security", "none")  # loopback sinks without TLS
    fields.setdefault("imap_security", "none")
    return Mailbox.objects.create(name=name, address=address, display_name=display_name, smtp_host="127.0.0.1",
                                  smtp_port=smtp_port, daily_cap=daily_cap, **fields)


def sequence_create(*, mailbox: Mailbox, name: str, waits: tuple[int, ...] = (0, 0),
                    subject: str = "Hello {{ first_name }}",
                    body: str = "Step {position} for {{ first_name }} at {{ company }}.") -> Sequence:
    """One step per wait (seconds after the previous step); step 1 has *subject*, the others thread under it.

    "{position}" in *body* becomes the step's position.
    """
    sequence = Sequence.objects.create(name=name, mailbox=mailbox)
    for position, wait in enumerate(waits, 1):
        Step.objects.create(sequence=sequence, position=position, wait_seconds=wait, thread=position > 1,
                            subject=subject if position == 1 else "", body=body.replace("{position}", str(position)))
    return sequence


def enroll(sequence: Sequence, email: str, *, first_name: str = "Ada", company: str = "Acme", actor: str = "",
           **fields) -> Enrollment:
    """Upsert the contact and enroll it through the services (step 1 scheduled)."""
    contact = contact_upsert(email=email, first_name=first_name, company=company, fields=fields)
    return enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk, actor=actor)


def mailboxes_create(count: int, *, smtp_port: int, tag: str = "bench", **imap) -> list[Mailbox]:
    """Sending identities on the bench SMTP sink, no window, a cap that never binds."""
    return [
        mailbox_create(name=f"{tag}-{i}", address=f"sales{i}@{tag}.outreach.test", display_name="Sam from Outreach",
                       smtp_port=smtp_port, daily_cap=2_000_000_000, **imap)
        for i in range(count)
    ]


def sequences_create(mailboxes: list[Mailbox], *, steps: int = 2) -> list[Sequence]:
    """One sequence per mailbox: step 1, then a threaded follow-up with no wait."""
    return [sequence_create(mailbox=mailbox, name=f"seq-{mailbox.name}", waits=(0,) * steps,
                            subject="Quick question, {{ first_name }}", body=BODY)
            for mailbox in mailboxes]


def followups_create(count: int, *, sequences: list[Sequence], tag: str, state: str = S.QUEUED,
                     due_in: timedelta = timedelta(0)) -> list[SendJob]:
    """*count* enrollments, round-robin over *sequences*, whose step 1 left an hour ago.

    Returns the step-2 jobs, in *state* (queued: ready for a worker; scheduled: waiting for
    the dispatcher, due at now + *due_in*).
    """
    now = db_now()
    steps = {s.pk: {st.position: st for st in s.steps.all()} for s in sequences}
    contacts = Contact.objects.bulk_create(
        [Contact(email=f"p{i}.{tag}@prospects.test", first_name="Ada", last_name="Lovelace", company="Acme")
         for i in range(count)], batch_size=2000)
    enrollments = Enrollment.objects.bulk_create(
        [Enrollment(sequence=sequences[i % len(sequences)], contact=c, mailbox_id=sequences[i % len(sequences)]
                    .mailbox_id) for i, c in enumerate(contacts)],  # as the services write them (rotation)
        batch_size=2000)
    sent = now - timedelta(hours=1)
    SendJob.objects.bulk_create(
        [SendJob(enrollment=e, step=steps[e.sequence_id][1], state=S.SUBMITTED, version=5, scheduled_at=sent,
                 queued_at=sent, claimed_at=sent, authorized_at=sent, submitted_at=sent, attempts=1,
                 smtp_reply="250 2.0.0 Ok", message_id=first_message_id(tag, i))
         for i, e in enumerate(enrollments)], batch_size=2000)
    return SendJob.objects.bulk_create(
        [SendJob(enrollment=e, step=steps[e.sequence_id][2], state=state, version=2 if state == S.QUEUED else 1,
                 scheduled_at=now + due_in, queued_at=now if state == S.QUEUED else None,
                 message_id=f"<bench.{tag}.{i}.2@outreach.test>")
         for i, e in enumerate(enrollments)], batch_size=2000)


def first_message_id(tag: str, i: int) -> str:
    """The Message-ID of step 1 of enrollment *i* of *tag*: what a reply's In-Reply-To names."""
    return f"<bench.{tag}.{i}.1@outreach.test>"


def insert_select(model, exprs: dict[str, str], source: str, params: tuple = ()) -> int:
    """INSERT INTO model's table SELECT exprs FROM source, filling other NOT NULL columns with field defaults.

    Columns with a database default (db_default) or NULL allowed are left out. The statement always
    takes parameters, so a literal % in *exprs* or *source* is written %%.
    Returns the number of rows inserted.
    """
    columns, values, args = [], [], []
    for field in model._meta.concrete_fields:
        if field.primary_key and field.column not in exprs:  # an automatic key; a key that is a relation is given
            continue
        if field.column in exprs:
            columns.append(field.column)
            values.append(exprs[field.column])
        elif field.null or field.db_default is not NOT_PROVIDED:
            continue
        else:
            default = field.get_default()
            if default is None and field.default is NOT_PROVIDED and not field.empty_strings_allowed:
                raise ValueError(f"no value for {model.__name__}.{field.name}")
            columns.append(field.column)
            values.append("%s")
            args.append(field.get_db_prep_save(default, connection))
    sql = (f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
           f"SELECT {', '.join(values)} FROM {source}")
    with connection.cursor() as cursor:
        cursor.execute(sql, tuple(args) + tuple(params))
        return cursor.rowcount
