"""Request and response bodies of the API (pydantic, through ninja): what the OpenAPI schema documents."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import ConfigDict

# A search text, as long as the operator UI's search box takes (SQLite refuses a LIKE pattern over 50,000 bytes).
SearchText = Annotated[str, Field(max_length=400)]


class Error(Schema):
    detail: str


class In(Schema):
    """A request body: types as the schema says them, never coerced (0 is no boolean, "7" no id), so a body
    that does not fit the schema is a 422, never read as something else."""

    model_config = ConfigDict(strict=True)


class ContactIn(In):
    email: str
    first_name: str = ""
    last_name: str = ""
    company: str = ""
    timezone: str = Field("", description="IANA time zone; empty keeps the contact's")
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="other template values, merged into the contact's (an empty value never erases one)",
    )


class ContactOut(Schema):
    id: int
    email: str
    first_name: str
    last_name: str
    company: str
    timezone: str
    fields: dict[str, Any]
    created_at: datetime


class ContactUpsertOut(Schema):
    contact: ContactOut
    created: bool
    changed: list[str] = Field(description="fields this call changed on an existing contact")


class ContactPage(Schema):
    count: int
    page: int
    pages: int
    items: list[ContactOut]


class JobOut(Schema):
    id: int
    step: int
    state: str
    label: str = Field(description="the honest label, in the UI's words")
    tone: str = Field(description="never-sent, failed, pending, sent, cannot-recall or unknown")
    scheduled_at: datetime | None
    submitted_at: datetime | None
    message_id: str


class EnrollmentOut(Schema):
    id: int
    email: str
    sequence_id: int
    sequence: str
    status: str
    stop_reason: str
    stopped_at: datetime | None
    created_at: datetime
    jobs: list[JobOut]


class EnrollmentRow(Schema):
    id: int
    email: str
    sequence_id: int
    status: str
    stop_reason: str
    created_at: datetime


class EnrollmentPage(Schema):
    count: int
    page: int
    pages: int
    items: list[EnrollmentRow]


class EnrollIn(ContactIn):
    sequence_id: int
    update_contact: bool = Field(
        False,
        description="change an existing contact with the non-empty values given "
        "(as `enroll --update-contacts`); by default it is kept as it is",
    )


class StopIn(In):
    reason: str = Field("operator", description="`operator`, the only reason an operator gives (422 otherwise); "
                                                "replies, complaints and bounces are recorded from evidence")


class StopOut(Schema):
    enrollments: int
    canceled: int = Field(description="jobs canceled before authorization: never sent")
    in_flight: int = Field(description="jobs authorized, being handed off: cannot recall")
    already_submitted: int = Field(description="jobs already submitted: cannot recall")
    summary: list[str] = Field(description="the same sentences as the UI")
    text: str


class EnrollmentActionOut(Schema):
    enrollment: EnrollmentOut
    result: StopOut | None = None


class BulkIn(In):
    sequence_id: int
    update_contacts: bool = False
    contacts: list[ContactIn] = Field(max_length=10000)


class BulkRowOut(Schema):
    line: int
    email: str
    status: str = Field(description="enrolled, rejected or pending")
    enrollment_id: int | None = None
    reason: str = ""


class BulkOut(Schema):
    id: int
    status: str
    status_url: str
    sequence_id: int
    total: int
    processed: int
    enrolled: int
    rejected: int
    error: str
    created_at: datetime
    finished_at: datetime | None
    results: list[BulkRowOut]


class StepOut(Schema):
    position: int
    subject: str
    body: str
    wait_seconds: int
    wait: str = Field(description="the wait in words, after the previous step was submitted")
    thread: bool


class ReplyRuleOut(Schema):
    position: int
    category: str = Field(description="the reply category it acts on: interested, meeting, not_interested, "
                                      "wrong_person, out_of_office, unsubscribe or other")
    action: str = Field(description="enroll, assign or notify")
    target: str = Field(description="enroll: the sequence's name; assign and notify: the user name")
    after_seconds: int | None = Field(description="enroll: how long after the rule acts the first step is due "
                                                  "(0: at once); null for assign and notify")
    after: str | None = Field(description="the same wait in words (\"90 days\", \"at once\"); null for assign "
                                          "and notify")
    words: str = Field(description="the rule as the sequence's page says it")
    done: int = Field(description="conversations it acted on")
    not_done: int = Field(description="conversations it refused to act on (why, the latest: latest_not_done)")
    failed: int = Field(description="notices that failed or are under way; tried again each minute")
    undone: int = Field(description="later enrollments it made that were stopped before sending anything, "
                                    "because an operator changed the reply's category")
    latest_not_done: str


class SequenceOut(Schema):
    id: int
    name: str
    status: str
    mailbox: str
    enrollments: int
    steps: list[StepOut]
    reply_rules: list[ReplyRuleOut] = Field(description="what a reply of each category does next, in order "
                                                        "(read-only: TOML and the sequence's page write them)")


class SequenceActionOut(Schema):
    sequence: SequenceOut
    result: StopOut | None = None
    scheduled: int | None = None


class SuppressionIn(In):
    value: str = Field(description="an address or an @domain")
    reason: str = Field("manual", description="unsubscribe, complaint, hard_bounce, soft_bounces or manual "
                                              "(possible_optout is ingestion's alone)")
    note: str = ""


class LiftIn(In):
    value: str
    note: str = Field(description="the justification (required)")


class SuppressionOut(Schema):
    id: int
    value: str
    is_domain: bool
    action: str
    reason: str
    note: str
    source: str
    actor: str
    created_at: datetime


class SuppressionAddOut(Schema):
    entry: SuppressionOut
    result: StopOut


class SuppressionCheckOut(Schema):
    address: str
    suppressed: bool
    why: str = Field(description="the reason of the entry that blocks it, or empty")
    by: str = Field(description="the entry's value: the address itself or its @domain")
    since: datetime | None
    entry: SuppressionOut | None


class SuppressionPage(Schema):
    count: int
    page: int
    pages: int
    items: list[SuppressionOut]


class TimelineEventOut(Schema):
    at: datetime
    kind: str
    enrollment: int | None
    job: int | None
    version_seen: int | None
    worker: str
    data: dict[str, Any]
