"""A campaign run with known outcomes, built by the product itself, and the ground truth the test counts.

Messages leave through the dispatcher and a real RQ worker (SimpleWorker, in this process) to the test SMTP server
(aiosmtpd); replies, an out-of-office answer, bounces and a complaint come back through ingestion; the
unsubscribe is the one-click POST of the message's List-Unsubscribe URL; the pause and the operator's category
are the services the UI calls. The ground truth is counted from what the SMTP server received (which step and
variant each body is, from which mailbox) and from the outcomes the test itself made happen.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta

import django_rq
import pytest
from django.test import Client
from rq import SimpleWorker

from inbound.ingest.record import inbound_record
from proving.harness import mails
from sequences.models import Enrollment, SendJob
from sequences.services.stops import enrollment_pause
from sequences.services.variants import variant_save
from sequences.tasks import dispatch
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.conftest import browser_type_launch_args, roles, screenshot, users  # noqa: F401

SPRING, OTHER = "Spring launch", "Other list"
COUNTS = ("sent", "delivered", "replied", "interested", "meeting", "out_of_office", "not_interested",
          "unsubscribed", "bounced_hard", "bounced_soft", "complained", "tried")


@dataclass
class Message:
    """One message as the test knows it: who, which sequence, step and variant (read from the body the SMTP server
    received), which mailbox, and what it counts for."""

    email: str
    sequence: str
    step: int
    variant: str | None
    mailbox: tuple[str, str]  # (name, address)
    day: date
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))


@dataclass
class Campaign:
    messages: list[Message]
    sequences: dict
    mailboxes: dict
    people: dict[str, Enrollment]

    def last(self, email: str) -> Message:
        return [m for m in self.messages if m.email == email][-1]

    def expected(self, by: str, sequence: str | None = None) -> dict[tuple, dict[str, int]]:
        """{labels: counts} as the report must show them, from the test's own messages."""
        found: dict[tuple, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
        for m in self.messages:
            if sequence is not None and m.sequence != sequence:
                continue
            if by == "variant" and m.variant is None:
                continue
            key = {"sequence": (m.sequence,), "step": (m.sequence, m.step), "variant": (m.sequence, m.step, m.variant),
                   "mailbox": m.mailbox, "domain": (m.mailbox[1].split("@")[1],),
                   "week": ((m.day - timedelta(days=m.day.weekday())).isoformat(),)}[by]
            for name, n in m.counts.items():
                found[key][name] += n
        return dict(found)


def work(smtp_server=None, *, expect: int | None = None) -> None:
    """One dispatcher pass, then a real worker drains the send queue."""
    dispatch()
    queue = django_rq.get_queue("send")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)
    if expect is not None:
        assert smtp_server.wait_for(expect, timeout=10), f"the SMTP server has {smtp_server.count}, not {expect}"


def ingest(raw: bytes, *, job: SendJob, uid: int):
    """A message arriving in the INBOX of the mailbox that sent *job*, through the real ingestion."""
    mailbox_id = job.enrollment.mailbox_id or job.enrollment.sequence.mailbox_id
    return inbound_record(mailbox_id=mailbox_id, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=uid))


def sent_job(email: str, step: int, sequence: str = SPRING) -> SendJob:
    return SendJob.objects.select_related("enrollment__sequence", "enrollment__contact").get(
        enrollment__contact__email=email, enrollment__sequence__name=sequence, step__position=step,
        submitted_at__isnull=False)


BODY = re.compile(r"(Variant (?P<variant>[AB]) of spring|Step (?P<step>\d) of (?P<seq>spring|other))")


def _read(received, mailboxes: dict, today: date) -> Message:
    """Which person, sequence, step and variant a received message is, from its envelope and its body alone."""
    message = received.message
    body = (message.get_payload(decode=True) or b"").decode() if not message.is_multipart() else \
        "".join((part.get_payload(decode=True) or b"").decode() for part in message.walk()
                if part.get_content_type() == "text/plain")
    found = BODY.search(body)
    assert found, body
    if found["variant"]:
        sequence, step, variant = SPRING, 1, found["variant"]
    else:
        sequence, step, variant = (SPRING if found["seq"] == "spring" else OTHER), int(found["step"]), None
    (email,) = received.recipients
    box = mailboxes[received.sender]
    return Message(email=email, sequence=sequence, step=step, variant=variant, mailbox=(box.name, box.address),
                   day=today)


@pytest.fixture
def campaign(smtp_server, redis_conn, settings) -> Campaign:
    from db.clock import db_now

    alpha = MailboxFactory(name="alpha", address="sales@alpha.test", smtp_port=smtp_server.port)
    beta = MailboxFactory(name="beta", address="team@beta.test", smtp_port=smtp_server.port)
    spring = make_sequence(mailbox=alpha, steps=2, waits=(0, 0), name=SPRING,
                           body="Step {position} of spring for {{ first_name }}.")
    spring.pool.set([alpha, beta])
    step1 = spring.steps.get(position=1)
    for name in ("A", "B"):
        variant_save(step_id=step1.pk, variant_id=None, name=name, subject=f"Hello {{{{ first_name }}}} ({name})",
                     body=f"Variant {name} of spring for {{{{ first_name }}}}.", weight=1, actor="tester")
    other = make_sequence(mailbox=beta, steps=1, name=OTHER, body="Step {position} of other for {{ first_name }}.")
    people = {f"p{i}@acme{i % 3}.test": None for i in range(10)}
    for email in people:
        people[email] = enroll(spring, email)
    people["q0@other.test"] = enroll(other, "q0@other.test")

    # Round 1: every first step leaves.
    work(smtp_server, expect=11)
    today = db_now().date()
    by_sender = {alpha.address: alpha, beta.address: beta}
    messages = [_read(r, by_sender, today) for r in smtp_server.received]
    for m in messages:
        m.counts.update(sent=1, delivered=1, tried=1)
    campaign = Campaign(messages=messages, sequences={SPRING: spring, OTHER: other},
                        mailboxes={"alpha": alpha, "beta": beta}, people=people)
    p = sorted(e for e in people if e.startswith("p"))

    # A keen reply and a declining one.
    ingest(mails.reply(to_message_id=sent_job(p[0], 1).message_id, sender=p[0], to=alpha.address,
                       body="Yes, I am interested! Could you send me more details?"), job=sent_job(p[0], 1), uid=1)
    ingest(mails.reply(to_message_id=sent_job(p[1], 1).message_id, sender=p[1], to=alpha.address,
                       body="Not interested, thanks."), job=sent_job(p[1], 1), uid=2)
    campaign.last(p[0]).counts.update(replied=1, interested=1)
    campaign.last(p[1]).counts.update(replied=1, not_interested=1)
    # A hard bounce (DSN 5.1.1) and a soft one (4.2.2, mailbox full: the person stays in).
    ingest(mails.dsn(original_message_id=sent_job(p[2], 1).message_id, recipient=p[2]), job=sent_job(p[2], 1), uid=3)
    campaign.last(p[2]).counts.update(bounced_hard=1, delivered=0)
    ingest(mails.dsn(original_message_id=sent_job(p[6], 1).message_id, recipient=p[6], status="4.2.2",
                     diagnostic="452 4.2.2 mailbox full"), job=sent_job(p[6], 1), uid=4)
    campaign.last(p[6]).counts.update(bounced_soft=1, delivered=0)
    # The one-click unsubscribe of the message's List-Unsubscribe header.
    header = next(r for r in smtp_server.received if r.recipients == [p[3]]).message["List-Unsubscribe"]
    url = re.search(r"<(https?://[^>]+)>", header)[1]
    response = Client().post(re.sub(r"^https?://[^/]+", "", url), {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    campaign.last(p[3]).counts.update(unsubscribed=1)
    # An operator pauses one person; another is out of office until Monday (held, not sent).
    enrollment_pause(enrollment_id=people[p[4]].pk, actor="tester")
    ingest(mails.out_of_office(to_message_id=sent_job(p[5], 1).message_id, sender=p[5], to=alpha.address,
                               text="I am out of the office until Monday."), job=sent_job(p[5], 1), uid=5)
    campaign.last(p[5]).counts.update(out_of_office=1)

    # Round 2: the follow-ups of those still in (p6 soft-bounced, p7, p8, p9).
    work(smtp_server, expect=15)
    for r in smtp_server.received[11:]:
        m = _read(r, by_sender, today)
        m.counts.update(sent=1, delivered=1, tried=1)
        messages.append(m)
    assert sorted(m.email for m in messages if m.step == 2) == p[6:], "the follow-ups that left"
    # A complaint about a follow-up; a reply to one that the operator marks Meeting booked.
    ingest(mails.arf(original_message_id=sent_job(p[7], 2).message_id, recipient=p[7]), job=sent_job(p[7], 2), uid=6)
    campaign.last(p[7]).counts.update(complained=1)
    ingest(mails.reply(to_message_id=sent_job(p[8], 2).message_id, sender=p[8], to=alpha.address,
                       body="Sounds good, let us talk next week."), job=sent_job(p[8], 2), uid=7)
    campaign.last(p[8]).counts.update(replied=1, interested=1)

    # A message the server refuses at RCPT: a hard bounce that was tried and never sent.
    people["q1@other.test"] = enroll(other, "q1@other.test")
    smtp_server.behaviour.rcpt_reply = "550 5.1.1 <q1@other.test>: no such user"
    work()
    smtp_server.behaviour.rcpt_reply = None
    refused = SendJob.objects.get(enrollment=people["q1@other.test"])
    assert refused.state == SendJob.State.FAILED and refused.submitted_at is None, refused.error
    messages.append(Message(email="q1@other.test", sequence=OTHER, step=1, variant=None,
                            mailbox=(beta.name, beta.address), day=refused.finished_at.date(),
                            counts=dict.fromkeys(COUNTS, 0) | {"tried": 1, "bounced_hard": 1}))
    return campaign
