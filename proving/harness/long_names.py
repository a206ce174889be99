"""Data with the longest names an operator meets, for the phone-width pages and the screenshot tour.

A 60-character sequence name, company names that are one long word, addresses
near the length limit, long subjects, a paused mailbox and enrollment (whose
actions differ), an inbound reply and operator-log entries: what makes a page
scroll sideways on a phone if anything can. Built through the real services.
"""

from __future__ import annotations

from inbound.models import InboundMessage
from sequences.models import Enrollment, SendJob, Sequence
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.stops import enrollment_pause, enrollment_resume

from .data import enroll, mailbox_create, sequence_create

SEQUENCE_NAME = "Q3 enterprise outreach to procurement and finance directors EU"  # 60 characters
MAILBOX_NAME = "enterprise-sales-team-europe-procurement-outreach-mailbox"
MAILBOX_ADDRESS = "enterprise.sales.team.europe.procurement@outbound-mail.example-company.com"
SUBJECT = ("Quick question about {{ company }}'s procurement process for the coming financial year "
           "and your vendor review")
CONTACTS = (
    ("maximilian.alexander.von.hohenzollern-sigmaringen@procurement.example-enterprise.de",
     "Maximilian Alexander", "von Hohenzollern-Sigmaringen",
     "Internationale Handelsgesellschaft für Maschinenbau und Anlagentechnik GmbH & Co. KG"),
    ("purchasing-department-team@verylongsubdomain.internationalholdings.example.com",
     "Anna-Katharina", "Oberhausen-Wintergarten", "Donaudampfschifffahrtsgesellschaftskapitänsvereinigung"),
    ("j.doe@example.org", "Jane", "Doe", "Acme"),
)


def long_names_create(*, smtp_port: int, actor: str = "tour") -> dict:
    """One mailbox, one sequence, three contacts (one paused), one reply; returns what the pages need."""
    mailbox = mailbox_create(name=MAILBOX_NAME, address=MAILBOX_ADDRESS, smtp_port=smtp_port,
                             display_name="Enterprise Sales Team Europe (Procurement)", daily_cap=400)
    sequence = sequence_create(mailbox=mailbox, name=SEQUENCE_NAME, waits=(0, 3 * 86400, 4 * 86400),
                               subject=SUBJECT)
    enrollments = [enroll(sequence, email, first_name=first, last_name=last, company=company, actor=actor)
                   for email, first, last, company in CONTACTS]
    enrollment_pause(enrollment_id=enrollments[1].pk, actor=actor)
    first = enrollments[0]
    job = SendJob.objects.filter(enrollment=first).order_by("id").first()
    inbound = InboundMessage.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1,
        message_id="<reply-with-a-rather-long-message-id-0123456789abcdef@mail.example-enterprise.de>",
        from_address=first.contact.email, from_name="Maximilian Alexander von Hohenzollern-Sigmaringen",
        subject="Re: Quick question about Internationale Handelsgesellschaft für Maschinenbau und "
                "Anlagentechnik GmbH & Co. KG's procurement process for the coming financial year",
        kind=InboundMessage.Kind.HUMAN_REPLY, reply_text="Thanks, please call me next week.", job=job,
        enrollment=first, correlation_rule="in_reply_to",
    )
    return {"mailbox": mailbox, "sequence": sequence, "enrollments": enrollments, "inbound": inbound}


# Parts of the 50 people's names: with the number, each name is 60 to 80 characters, each address about 80.
GIVEN = ("Maximilian Alexander Friedrich", "Anna-Katharina Josephine Elisabeth", "Jean-Baptiste Emmanuel Olivier")
FAMILY = ("von Hohenzollern-Sigmaringen-Veringen", "Oberhausen-Wintergarten-Schwarzenberg",
          "de la Rochefoucauld-Montmorency")


def long_names_people(data: dict, *, count: int = 50, actor: str = "tour") -> list[Enrollment]:
    """*count* more people in the sequence, each with a 60-80-character name and a long address and company, step 1
    scheduled for each: what makes "What will send when", the enrollments and the contacts long. Each is paused
    and resumed once (two operator-log entries a person, a longer timeline), and the first enrollment of
    `long_names_create` six times more, so its own page has a long timeline (some thirty events)."""
    made = []
    for i in range(count):
        given, family = GIVEN[i % len(GIVEN)], FAMILY[i % len(FAMILY)]
        email = (f"{given.split()[0].lower()}.{family.split()[-1].lower()}.{i:02d}"
                 "@procurement-department.example-enterprise.de")
        contact = contact_upsert(email=email, first_name=f"{given} {i:02d}", last_name=family,
                                 company=f"{CONTACTS[0][3]} Niederlassung {i:02d}")
        made.append(enrollment_create(sequence_id=data["sequence"].pk, contact_id=contact.pk, actor=actor))
    for enrollment in made:
        enrollment_pause(enrollment_id=enrollment.pk, actor=actor)
        enrollment_resume(enrollment_id=enrollment.pk, actor=actor)
    for _ in range(6):
        enrollment_pause(enrollment_id=data["enrollments"][0].pk, actor=actor)
        enrollment_resume(enrollment_id=data["enrollments"][0].pk, actor=actor)
    return made


def long_names_pages(data: dict) -> dict[str, str]:
    """The pages of the phone check and the tour, by name: path."""
    sequence: Sequence = data["sequence"]
    enrollment: Enrollment = data["enrollments"][0]
    return {
        "dashboard": "/",
        "sequences": "/sequences/",
        "sequence": f"/sequences/{sequence.pk}/",
        "enrollment": f"/enrollments/{enrollment.pk}/",
        "contacts": "/contacts/",
        "contact": f"/contacts/{enrollment.contact_id}/",
        "mailboxes": "/mailboxes/",
        "inbound": "/inbound/",
        "operator-log": "/log/",
    }
