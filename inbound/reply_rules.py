"""Rules by reply category (`[[sequence.on_reply]]`, the sequence's page): what a reply of one category does next,
besides what every reply does (it stops the person; nothing else happens without a rule).

- `enroll`: the person is enrolled in another sequence, its first step due `after` the rule acts (a re-engagement
  in 90 days). Whether that step leaves is decided then by the final check, like any step: a hard bounce, an
  unsubscribe, a suppression or a stop in between means it never does.
- `assign`: the conversation is assigned to the user, unless somebody already has it.
- `notify`: the user gets an email from the install (mailboxes.install_mail) naming the person, the sequence and
  the category, with a link to the conversation. Nothing of the reply's text is in it.

A rule acts on conversations whose category (the operator's choice, else the suggestion) is its category and was
set after the rule was made, once per conversation: `ReplyRuleRun` is claimed under a unique key before acting.
It is run after the reply's (or the operator's) transaction commits (`reply_rules_enqueue`), and every minute for
whatever that missed and for notices that failed (`reply_rules_due`). Enroll and assign act in the claim's
transaction; a notice is claimed, then sent, then recorded: a crash between the send and the record may send it
twice, never not at all.

An operator who changes the category takes back, in the same transaction, what a rule of the old category did that
can still be taken back (`reply_rules_undo_in_transaction`): an enrollment it made that has handed nothing off is
stopped (reason `rule_undone`: its jobs are canceled, never sent) and its run becomes `undone`. One that has handed
a step off is the person's live sequence now: it stays, and the timeline says so. An assignment stays (it shows,
and an operator changes it); a notice already sent cannot be recalled. Then the rules of the new category act as
usual. A rule still acts once per conversation: relabeling back does not enroll the person again.

Lock order: the rules' enrollments, then the conversation (`reply_rule_enrollments_lock`), as ingestion takes them:
a reply stops the person's enrollments, then joins the conversation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

import django_rq
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.db.models.functions import Coalesce, Greatest

from db.clock import DbClock, db_now
from mailboxes import install_mail
from sequences.labels import duration_words
from sequences.locks import enrollments_lock
from sequences.models import Enrollment, SendJob
from sequences.reasons import Reason
from sequences.services.common import ServiceError
from sequences.services.enrollments import enrollment_create
from sequences.services.stops import enrollment_stop_locked
from sequences.states import PASSED_HANDOFF
from sequences.timeline import Event, event_record

from .kinds import LABELS, Category
from .models import Conversation, ReplyRule, ReplyRuleRun

log = logging.getLogger("outreach.reply_rules")

A = ReplyRule.Action
O = ReplyRuleRun.Outcome  # noqa: E741 - the outcome's one-letter alias, like S and E for states elsewhere
RUN_TASK = "inbound.tasks.reply_rules_run"
ACTOR = "reply rule"
MAX_NOTICE_ATTEMPTS = 5
IN_FLIGHT = timedelta(minutes=10)
# How far back the minute's pass looks for a conversation no rule ran on (its enqueue lost with Redis).
SWEEP_WINDOW = timedelta(days=7)  # longer than any send of a notice takes (OUTREACH_SMTP_TIMEOUT per step)
# A reply that asked to stop never puts the person in another sequence, whatever a rule says.
NEVER_ENROLL = frozenset({Category.UNSUBSCRIBE.value})


def wait_words(seconds: int) -> str:
    """As a rule's `after` is usually written: "90 days" (not "12 weeks 6 days"), else the exact words."""
    days, rest = divmod(seconds, 86400)
    return f"{days} day{'s' if days != 1 else ''}" if days and not rest else duration_words(seconds)


def rule_words(rule: ReplyRule) -> str:
    """'Not interested → enroll in "Re-engage", first step 90 days later' and the like."""
    when = LABELS[Category(rule.category)]
    if rule.action == A.ENROLL:
        later = f"first step {wait_words(rule.after_seconds)} later" if rule.after_seconds else "at once"
        return f"{when} → enroll in “{rule.enroll_in.name}”, {later}"
    who = rule.user.get_username() if rule.user_id else "nobody"
    if rule.action == A.ASSIGN:
        return f"{when} → assign the conversation to {who}"
    return f"{when} → email {who}"


def reply_rules_enqueue(conversation_id: int) -> None:
    """After the current transaction commits, run the rules of this conversation (a lost enqueue is caught by
    reply_rules_due within a minute)."""
    def push() -> None:
        django_rq.get_queue("default").enqueue(RUN_TASK, conversation_id, result_ttl=600, failure_ttl=86400)

    transaction.on_commit(push, robust=True)


def _categorized_at():
    # When the conversation got the category it has: the operator's choice, else the latest reply's suggestion.
    return Greatest(F("last_reply_at"), Coalesce(F("chosen_at"), F("last_reply_at")))


def _matching(conversation_id: int) -> list[ReplyRule]:
    conversation = (Conversation.objects.filter(pk=conversation_id)
                    .annotate(categorized_at=_categorized_at()).values("sequence_id", "category", "categorized_at")
                    .first())
    if conversation is None:
        return []
    return list(ReplyRule.objects.select_related("enroll_in", "user")
                .filter(sequence_id=conversation["sequence_id"], category=conversation["category"],
                        created_at__lte=conversation["categorized_at"]).order_by("position"))


@dataclass(frozen=True)
class Done:
    rule: int
    outcome: str
    detail: str


def reply_rules_run(conversation_id: int) -> list[Done]:
    """Every rule that matches the conversation and has not acted on it yet acts now; what each did."""
    return [done for rule in _matching(conversation_id) if (done := _act(rule, conversation_id)) is not None]


def _act(rule: ReplyRule, conversation_id: int) -> Done | None:
    notice = None
    with transaction.atomic(durable=True):
        conversation = (Conversation.objects.select_for_update(of=("self",)).select_related("contact", "sequence")
                        .filter(pk=conversation_id).first())
        if conversation is None or conversation.category != rule.category:
            return None  # re-categorized meanwhile: the rule of the new category acts instead
        run, _ = ReplyRuleRun.objects.get_or_create(rule=rule, conversation=conversation)
        run = ReplyRuleRun.objects.select_for_update().get(pk=run.pk)
        if not _may_act(run):
            return None
        if rule.action == A.NOTIFY:
            ReplyRuleRun.objects.filter(pk=run.pk).update(attempts=F("attempts") + 1, updated_at=DbClock())
            notice = _notice(rule, conversation)
        else:
            outcome, detail, enrollment_id = (_enroll if rule.action == A.ENROLL else _assign)(rule, conversation)
            _record(run, rule, conversation, outcome, detail, enrollment_id)
            return Done(rule.pk, outcome, detail)
    try:
        install_mail.send(notice)
    except install_mail.InstallMailError as exc:
        outcome, detail = O.FAILED, str(exc)
    else:
        outcome, detail = O.DONE, f"emailed {rule.user.get_username()} at {rule.user.email}"
    with transaction.atomic(durable=True):
        _record(run, rule, conversation, outcome, detail, None)
    return Done(rule.pk, outcome, detail)


def _may_act(run: ReplyRuleRun) -> bool:
    """A new claim, a notice that failed, or one whose sender vanished (claimed IN_FLIGHT ago, never recorded)."""
    if run.outcome == O.FAILED:
        return run.attempts < MAX_NOTICE_ATTEMPTS
    if run.outcome != O.PENDING:
        return False
    return run.attempts == 0 or (run.attempts < MAX_NOTICE_ATTEMPTS and run.updated_at < db_now() - IN_FLIGHT)


def _record(run: ReplyRuleRun, rule: ReplyRule, conversation: Conversation, outcome: str, detail: str,
            enrollment_id: int | None) -> None:
    ReplyRuleRun.objects.filter(pk=run.pk).update(outcome=outcome, detail=detail[:500], enrollment_id=enrollment_id,
                                                  updated_at=DbClock())
    event_record(kind=Event.REPLY_RULE_APPLIED, email=conversation.contact.email,
                 enrollment=conversation.enrollment_id, conversation=conversation.pk, rule=rule.pk,
                 action=rule.action, category=rule.category, outcome=outcome, detail=detail[:500],
                 **({"enrolled": enrollment_id} if enrollment_id else {}))


def _enroll(rule: ReplyRule, conversation: Conversation) -> tuple[str, str, int | None]:
    if rule.category in NEVER_ENROLL:
        return O.REFUSED, "the person asked to stop: never enrolled again by a rule", None
    try:
        with transaction.atomic():
            enrollment = enrollment_create(sequence_id=rule.enroll_in_id, contact_id=conversation.contact_id,
                                           actor=ACTOR, delay_seconds=rule.after_seconds,
                                           extra={"rule": rule.pk, "after_reply_in": conversation.sequence.name})
    except ServiceError as exc:
        return O.REFUSED, f"not enrolled in “{rule.enroll_in.name}”: {exc}", None
    later = f"its first step due in {wait_words(rule.after_seconds)}" if rule.after_seconds else "at once"
    return O.DONE, f"enrolled in “{rule.enroll_in.name}”, {later}", enrollment.pk


def _assign(rule: ReplyRule, conversation: Conversation) -> tuple[str, str, int | None]:
    name = rule.user.get_username()
    if not rule.user.is_active:
        return O.REFUSED, f"{name} is no longer an active user", None
    if conversation.assigned_to_id not in (None, rule.user_id):
        return O.REFUSED, "somebody already has the conversation", None
    Conversation.objects.filter(pk=conversation.pk).update(assigned_to_id=rule.user_id)
    return O.DONE, f"assigned to {name}", None


def _notice(rule: ReplyRule, conversation: Conversation) -> install_mail.InstallMessage:
    label = LABELS[Category(conversation.category)]
    link = f"{settings.OUTREACH_PUBLIC_URL.rstrip('/')}/replies/{conversation.pk}/"
    text = (f"{conversation.contact.email} replied to “{conversation.sequence.name}”, and the reply is "
            f"categorized {label}.\n\nOpen the conversation: {link}\n\n"
            f"You get this email because a rule of “{conversation.sequence.name}” says: {rule_words(rule)}.\n")
    return install_mail.InstallMessage(to=(rule.user.email,), subject=f"{label}: {conversation.contact.email} "
                                       f"replied to {conversation.sequence.name}", text=text)


def reply_rule_enrollments_lock(conversation_id: int) -> dict[int, Enrollment]:
    """Lock the enrollments the conversation's rules made that are not stopped (id -> row); requires the caller's
    transaction. Called before the conversation's row is locked: enrollments first, as every stop takes them."""
    made = ReplyRuleRun.objects.filter(conversation_id=conversation_id, outcome=O.DONE, rule__action=A.ENROLL,
                                       enrollment__isnull=False).values("enrollment_id")
    locked = enrollments_lock(Enrollment.objects.filter(pk__in=made).exclude(status=Enrollment.Status.STOPPED))
    return {enrollment.pk: enrollment for enrollment in locked}


def reply_rules_undo_in_transaction(*, conversation: Conversation, category: str, actor: str) -> list[Done]:
    """What the conversation's rules of another category than `category` did, taken back where it still can be
    (the module's docstring); requires the caller's transaction, holding reply_rule_enrollments_lock and then the
    conversation's row. What each undone or kept enrollment's rule did now."""
    # Again: the rows held already, and an enrollment a rule made between that first read and the conversation's
    # lock (the rule's transaction held the conversation meanwhile). Only such a new row is locked after the
    # conversation; a reply of the person ingested in that same instant could meet it in the other order, and
    # PostgreSQL would end one of the two transactions as a deadlock rather than let both wait.
    locked = reply_rule_enrollments_lock(conversation.pk)
    runs = (ReplyRuleRun.objects.select_related("rule__enroll_in", "rule__sequence")
            .filter(conversation_id=conversation.pk, outcome=O.DONE, enrollment_id__in=list(locked))
            .exclude(rule__category=category).order_by("pk"))
    label = LABELS[Category(category)]
    did = []
    for run in runs:
        rule, enrollment = run.rule, locked[run.enrollment_id]
        # Under the enrollment's lock no job of it is authorized meanwhile: what has passed the hand-off is known.
        sent = SendJob.objects.filter(enrollment_id=enrollment.pk, state__in=PASSED_HANDOFF).count()
        if sent:
            detail = (f"kept: the category is now {label}, but “{rule.enroll_in.name}” had already handed off "
                      f"{sent} message{'s' if sent != 1 else ''} to the person: it is their live sequence now")
            outcome = O.DONE
        else:
            because = (f"{actor} recategorized the reply to “{rule.sequence.name}” as {label}, so the rule "
                       f"“{rule_words(rule)}” no longer applies")
            summary = enrollment_stop_locked(enrollment, reason=Reason.RULE_UNDONE, actor=actor,
                                             source="reply category changed", because=because)
            detail = (f"undone: the category is now {label}; the enrollment in “{rule.enroll_in.name}” was stopped "
                      f"before it sent anything ({summary.canceled} job{'s' if summary.canceled != 1 else ''} "
                      "canceled, never sent)")
            outcome = O.UNDONE
            ReplyRuleRun.objects.filter(pk=run.pk).update(outcome=outcome, detail=detail[:500], updated_at=DbClock())
        event_record(kind=Event.REPLY_RULE_APPLIED, email=conversation.contact.email,
                     enrollment=conversation.enrollment_id, conversation=conversation.pk, rule=rule.pk,
                     action=rule.action, category=rule.category, outcome=outcome, detail=detail[:500],
                     enrolled=enrollment.pk)
        did.append(Done(rule.pk, outcome, detail))
    return did


@dataclass(frozen=True)
class RuleDid:
    """One rule in words, with what it did so far (runs by outcome)."""

    rule: ReplyRule
    words: str
    done: int
    refused: int
    failed: int  # failed, or under way: a notice that is tried again
    undone: int
    latest_refusal: str  # why it was not done, the latest time


def reply_rules_of(sequence_id: int) -> list[RuleDid]:
    """A sequence's rules in order, each with what it did: the read the sequence's page and the API share."""
    rules = list(ReplyRule.objects.filter(sequence_id=sequence_id).select_related("enroll_in", "user"))
    counts: dict[int, dict[str, int]] = {}
    for row in (ReplyRuleRun.objects.filter(rule__in=rules).values("rule_id", "outcome")
                .annotate(n=Count("id")).order_by()):
        counts.setdefault(row["rule_id"], {})[row["outcome"]] = row["n"]
    rows = []
    for rule in rules:
        n = counts.get(rule.pk, {})
        latest_refusal = (ReplyRuleRun.objects.filter(rule=rule, outcome=O.REFUSED).order_by("-pk")
                          .values_list("detail", flat=True).first() if n.get(O.REFUSED) else "")
        rows.append(RuleDid(rule=rule, words=rule_words(rule), done=n.get(O.DONE, 0), refused=n.get(O.REFUSED, 0),
                            failed=n.get(O.FAILED, 0) + n.get(O.PENDING, 0), undone=n.get(O.UNDONE, 0),
                            latest_refusal=latest_refusal or ""))
    return rows


def reply_rules_due(*, limit: int = 500) -> int:
    """Run the rules nothing has run yet (an enqueue lost with Redis) on conversations categorized in the last
    SWEEP_WINDOW, and the notices that failed; how many conversations were looked at. One query per rule (rules
    are few, conversations many), through the conversations' (sequence, newest reply) index."""
    conversations: set[int] = set()
    now = db_now()
    for rule in ReplyRule.objects.only("pk", "sequence_id", "category", "created_at"):
        ran = ReplyRuleRun.objects.filter(rule_id=rule.pk, conversation_id=OuterRef("pk"))
        retry = ran.filter(Q(outcome=O.FAILED) | Q(outcome=O.PENDING, updated_at__lt=db_now() - IN_FLIGHT),
                           attempts__lt=MAX_NOTICE_ATTEMPTS)
        since = max(rule.created_at, now - SWEEP_WINDOW)
        due = (Conversation.objects.filter(Q(last_reply_at__gte=since) | Q(chosen_at__gte=since),
                                           sequence_id=rule.sequence_id, category=rule.category)
               .annotate(categorized_at=_categorized_at()).filter(categorized_at__gte=rule.created_at)
               .filter(Q(~Exists(ran)) | Q(Exists(retry))).values_list("pk", flat=True)[:limit])
        conversations.update(due)
    for conversation_id in sorted(conversations):
        try:
            reply_rules_run(conversation_id)
        except Exception:  # one conversation's failure never stops the others'
            log.exception("reply rules of conversation %s", conversation_id)
    return len(conversations)
