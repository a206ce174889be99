"""Rules by reply category (`[[sequence.on_reply]]`, inbound.reply_rules): a reply of a category enrolls the person
in another sequence later, assigns the conversation or emails a user; once per conversation; through the real send
path, ingestion, RQ and an SMTP server."""

from __future__ import annotations

import itertools
from datetime import timedelta

import django_rq
import pytest
from rq import SimpleWorker

from db.clock import db_now
from inbound.ingest.record import inbound_record
from inbound.models import Conversation, ReplyRule, ReplyRuleRun
from inbound.replies.services import conversation_categorize
from inbound.reply_rules import reply_rules_due, reply_rules_run
from proving.harness import mails
from proving.harness.smtp import Behaviour, SmtpServer
from sequences.config.apply import config_apply
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
O = ReplyRuleRun.Outcome  # noqa: E741
_uid = itertools.count(1)
NINETY_DAYS = 90 * 86400


def _rules(sequence, *tables: str, none: bool = False):
    text = f'[[sequence]]\nname = "{sequence.name}"\nmailbox = "{sequence.mailbox.name}"\n'
    text += "on_reply = []\n" if none else ""
    for step in sequence.steps.order_by("position"):
        text += f'[[sequence.step]]\nsubject = "s"\nbody = "b"\nwait = "{step.wait_seconds}s"\n'
    text += "".join(f"[[sequence.on_reply]]\n{table}\n" for table in tables)
    return config_apply(parse(text))


def _send_due(smtp_server) -> list[str]:
    """Dispatch what is due and send each job through the real SMTP server; the states they end in."""
    dispatch_due()
    states = []
    for job in SendJob.objects.filter(state=S.QUEUED).order_by("pk"):
        states.append(send_job_process(job_id=job.pk, worker_id="w1").state)
    return states


def _ingest(mailbox, raw: bytes):
    return inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1,
                          fetched=mails.fetched(raw, uid=next(_uid)))


def _work_default_queue() -> int:
    """Run what is queued on the `default` queue with a real RQ worker (burst): the rules' jobs."""
    queue = django_rq.get_queue("default")
    worker = SimpleWorker([queue], connection=queue.connection)
    return worker.work(burst=True)


@pytest.fixture
def two(mailbox, redis_conn):
    first = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3 * 86400), name="Intro")
    later = make_sequence(mailbox=mailbox, steps=1, name="Re-engage")
    return first, later


@pytest.mark.parametrize("bounce", [True, False], ids=["hard-bounce-meanwhile", "nothing-meanwhile"])
def test_not_interested_enrolls_later_and_a_hard_bounce_meanwhile_means_it_never_sends(two, mailbox, smtp_server,
                                                                                        bounce):
    first, later = two
    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"\nafter = "90d"')
    enrollment = enroll(first, "ada@example.com")
    assert _send_due(smtp_server) == [S.SUBMITTED]
    step1 = enrollment.jobs.get(step__position=1)

    _ingest(mailbox, mails.reply(to_message_id=step1.message_id, body="Thanks, but we're not interested."))
    assert Conversation.objects.get().category == "not_interested"
    assert django_rq.get_queue("default").count >= 1  # the job the reply's commit enqueued
    _work_default_queue()

    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, "replied")
    again = Enrollment.objects.get(sequence=later)
    job = again.jobs.get()
    assert job.state == S.SCHEDULED
    assert abs((job.scheduled_at - db_now()).total_seconds() - NINETY_DAYS) < 60
    run = ReplyRuleRun.objects.get()
    assert (run.outcome, run.enrollment_id) == (O.DONE, again.pk)
    assert "first step due in 90 days" in run.detail

    if bounce:  # months later, a bounce of the first message arrives
        _ingest(mailbox, mails.dsn(original_message_id=step1.message_id, recipient="ada@example.com"))
        assert Suppression.objects.filter(value="ada@example.com").exists()
    SendJob.objects.filter(pk=job.pk).update(scheduled_at=db_now() - timedelta(seconds=1))  # 90 days pass
    _send_due(smtp_server)
    job.refresh_from_db()
    if bounce:
        assert job.state == S.CANCELED and len(smtp_server.received) == 1
    else:  # the same path without the bounce sends: the test can tell the difference
        assert job.state == S.SUBMITTED and len(smtp_server.received) == 2
        assert smtp_server.received[1].recipients == ["ada@example.com"]


def test_a_rule_acts_once_on_its_category_only_and_not_on_replies_before_it(two, mailbox, smtp_server):
    first, later = two
    people = [enroll(first, f"p{n}@example.com") for n in range(3)]
    _send_due(smtp_server)
    jobs = [p.jobs.get(step__position=1) for p in people]
    # p0 replied before the rule existed.
    _ingest(mailbox, mails.reply(to_message_id=jobs[0].message_id, sender="p0@example.com",
                                 body="Not interested, thanks."))
    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"\nafter = "30d"')
    _ingest(mailbox, mails.reply(to_message_id=jobs[1].message_id, sender="p1@example.com",
                                 body="Not interested, thanks."))
    _ingest(mailbox, mails.reply(to_message_id=jobs[2].message_id, sender="p2@example.com",
                                 body="Yes, I'd love to hear more. Can we talk on Tuesday?"))
    for enrollment in people:
        reply_rules_run(enrollment.pk)
        reply_rules_run(enrollment.pk)  # twice: still once
    reply_rules_due()
    assert list(Enrollment.objects.filter(sequence=later).values_list("contact__email", flat=True)) == [
        "p1@example.com"]
    assert ReplyRuleRun.objects.count() == 1

    # An operator's category counts too: p2's reply relabelled Not interested.
    conversation_categorize(conversation_id=people[2].pk, category="not_interested", actor="olga")
    _work_default_queue()
    assert Enrollment.objects.filter(sequence=later).count() == 2


def test_a_person_already_in_the_sequence_is_not_enrolled_twice_and_it_says_why(two, mailbox, smtp_server):
    first, later = two
    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"')
    enrollment = enroll(first, "ada@example.com")
    enroll(later, "ada@example.com")
    _send_due(smtp_server)
    step1 = enrollment.jobs.get(step__position=1)
    _ingest(mailbox, mails.reply(to_message_id=step1.message_id, body="Not interested."))
    (done,) = reply_rules_run(enrollment.pk)
    assert done.outcome == O.REFUSED and "already enrolled in 'Re-engage'" in done.detail
    event = TimelineEvent.objects.get(kind="reply_rule_applied")
    assert event.data["outcome"] == "refused"


def test_assign_gives_an_unassigned_conversation_to_the_user(two, mailbox, smtp_server, django_user_model):
    first, _ = two
    django_user_model.objects.create_superuser("sam", "sam@example.org", "pw")
    _rules(first, 'category = "interested"\nassign = "sam"')
    enrollment = enroll(first, "ada@example.com")
    _send_due(smtp_server)
    _ingest(mailbox, mails.reply(to_message_id=enrollment.jobs.get(step__position=1).message_id,
                                 body="Yes, interested! Can we talk on Tuesday?"))
    assert Conversation.objects.get().category == "interested"
    (done,) = reply_rules_run(enrollment.pk)
    assert (done.outcome, done.detail) == (O.DONE, "assigned to sam")
    assert Conversation.objects.get().assigned_to.username == "sam"


def test_notify_emails_the_user_through_the_install_server_and_a_refusal_is_retried(
        two, mailbox, smtp_server, django_user_model, settings):
    first, _ = two
    django_user_model.objects.create_superuser("sam", "sam@example.org", "pw")
    _rules(first, 'category = "not_interested"\nnotify = "sam"')
    enrollment = enroll(first, "ada@example.com")
    _send_due(smtp_server)
    step1 = enrollment.jobs.get(step__position=1)
    _ingest(mailbox, mails.reply(to_message_id=step1.message_id, body="Not interested."))
    with SmtpServer(behaviour=Behaviour(mail_reply="451 4.3.0 try again later")) as install:
        settings.OUTREACH_INSTALL_SMTP_HOST, settings.OUTREACH_INSTALL_SMTP_PORT = "127.0.0.1", install.port
        settings.OUTREACH_INSTALL_SMTP_SECURITY = "none"
        (done,) = reply_rules_run(enrollment.pk)
        assert done.outcome == O.FAILED and "refused or could not be reached" in done.detail
        install.behaviour.mail_reply = None
        assert reply_rules_due() == 1  # the minute's pass tries it again
        assert install.wait_for(1, 5)
        reply_rules_due()
    run = ReplyRuleRun.objects.get()
    assert (run.outcome, run.attempts) == (O.DONE, 2)
    (message,) = install.received
    assert message.recipients == ["sam@example.org"]
    text = message.message.get_payload(decode=True).decode()
    assert "ada@example.com replied to “Intro”" in text and f"/replies/{enrollment.pk}/" in text
    assert "Not interested." not in text.replace("categorized Not interested.", "")  # the reply stays in the app


def test_toml_rules_are_checked_applied_changed_and_exported(two, django_user_model):
    first, later = two
    django_user_model.objects.create_user("noperm", "n@example.org", "pw")
    bad = [
        ('category = "maybe"\nassign = "noperm"', "on_reply[0].category (line 13): must be one of"),
        ('category = "interested"\nassign = "x"\nnotify = "x"', "give exactly one action"),
        ('category = "interested"\nenroll = "Nope"', "no sequence named 'Nope'"),
        ('category = "interested"\nenroll = "Intro"', "the person is in this sequence already"),
        ('category = "unsubscribe"\nenroll = "Re-engage"', "a reply asking to stop never enrolls"),
        ('category = "interested"\nassign = "noperm"\nafter = "1d"', "only an enroll rule waits"),
        ('category = "interested"\nassign = "noperm"', "'noperm' may not read replies"),
        ('category = "interested"\nnotify = "ghost"', "there is no active user 'ghost'"),
    ]
    for table, words in bad:
        with pytest.raises(ConfigError) as caught:
            _rules(first, table)
        assert words in str(caught.value), (table, str(caught.value))

    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"\nafter = "90d"')
    rule = ReplyRule.objects.get()
    exported = sequence_export_toml(first)
    assert '[[sequence.on_reply]]\ncategory = "not_interested"\nenroll = "Re-engage"\nafter = "90d"' in exported
    result = config_apply(parse(exported))  # the export loads back unchanged, keeping the rule's row
    assert result.changes == [] and ReplyRule.objects.get().pk == rule.pk

    django_user_model.objects.create_superuser("sam", "sam@example.org", "pw")
    text = exported + '\n[[sequence.on_reply]]\ncategory = "interested"\nnotify = "sam"\n'
    result = config_apply(parse(text))
    assert result.changes == ["sequence Intro: on_reply: added Interested → email sam"]
    assert ReplyRule.objects.get(position=1).pk == rule.pk

    result = _rules(first, none=True)
    assert not ReplyRule.objects.exists()
    assert "on_reply: removed Not interested → enroll in “Re-engage”, first step 90 days later" in result.changes[0]


@pytest.mark.parametrize("relabel", [True, False], ids=["relabeled", "kept-as-suggested"])
def test_a_relabel_stops_the_later_enrollment_before_it_sends_and_relabeling_back_enrolls_nobody_twice(
        two, mailbox, smtp_server, django_user_model, relabel):
    first, later = two
    django_user_model.objects.create_superuser("sam", "sam@example.org", "pw")
    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"\nafter = "90d"',
           'category = "interested"\nassign = "sam"')
    enrollment = enroll(first, "ada@example.com")
    assert _send_due(smtp_server) == [S.SUBMITTED]
    step1 = enrollment.jobs.get(step__position=1)
    _ingest(mailbox, mails.reply(to_message_id=step1.message_id, body="Thanks, but we're not interested."))
    _work_default_queue()
    again = Enrollment.objects.get(sequence=later)
    job = again.jobs.get()
    assert job.state == S.SCHEDULED

    if relabel:  # the operator reads it again: they are interested after all
        conversation_categorize(conversation_id=enrollment.pk, category="interested", actor="olga")
        _work_default_queue()  # the rule of the new category acts
    SendJob.objects.filter(pk=job.pk, state=S.SCHEDULED).update(scheduled_at=db_now() - timedelta(seconds=1))
    _send_due(smtp_server)  # 90 days pass
    job.refresh_from_db()
    if not relabel:  # the same path without the relabel sends: the test can tell the difference
        assert job.state == S.SUBMITTED and len(smtp_server.received) == 2
        return
    assert job.state == S.CANCELED and len(smtp_server.received) == 1  # the later step never left

    again.refresh_from_db()
    assert (again.status, again.stop_reason, job.cancel_reason) == (Enrollment.Status.STOPPED, "rule_undone",
                                                                    "rule_undone")
    stop = TimelineEvent.objects.get(enrollment=again, kind="enrollment_stopped")
    assert stop.data["because"] == ("olga recategorized the reply to “Intro” as Interested, so the rule “Not "
                                    "interested → enroll in “Re-engage”, first step 90 days later” no longer applies")
    run = ReplyRuleRun.objects.get(rule__category="not_interested")
    assert run.outcome == O.UNDONE and "was stopped before it sent anything (1 job canceled" in run.detail
    undone = TimelineEvent.objects.get(kind="reply_rule_applied", data__outcome="undone")
    assert undone.enrollment_id == enrollment.pk and undone.data["enrolled"] == again.pk
    assert Conversation.objects.get().assigned_to.username == "sam"

    # And back to Not interested: the rule acted on this conversation once; nobody is enrolled twice.
    conversation_categorize(conversation_id=enrollment.pk, category="not_interested", actor="olga")
    _work_default_queue()
    reply_rules_due()
    assert Enrollment.objects.filter(sequence=later).count() == 1 and again.jobs.count() == 1
    assert ReplyRuleRun.objects.get(rule__category="not_interested").outcome == O.UNDONE
    assert Conversation.objects.get().assigned_to.username == "sam"  # an assignment stays as it is


def test_a_relabel_keeps_a_later_enrollment_that_already_sent_and_says_so(two, mailbox, smtp_server):
    first, later = two
    _rules(first, 'category = "not_interested"\nenroll = "Re-engage"\nafter = "1d"')
    enrollment = enroll(first, "ada@example.com")
    _send_due(smtp_server)
    step1 = enrollment.jobs.get(step__position=1)
    _ingest(mailbox, mails.reply(to_message_id=step1.message_id, body="Not interested."))
    _work_default_queue()
    again = Enrollment.objects.get(sequence=later)
    SendJob.objects.filter(enrollment=again).update(scheduled_at=db_now() - timedelta(seconds=1))  # a day passes
    assert _send_due(smtp_server) == [S.SUBMITTED]

    conversation_categorize(conversation_id=enrollment.pk, category="interested", actor="olga")
    again.refresh_from_db()
    assert again.status == Enrollment.Status.COMPLETED  # the person's live sequence now: left as it is
    assert ReplyRuleRun.objects.get().outcome == O.DONE
    kept = TimelineEvent.objects.filter(kind="reply_rule_applied").latest("id")
    assert kept.data["detail"] == ("kept: the category is now Interested, but “Re-engage” had already handed off "
                                   "1 message to the person: it is their live sequence now")
