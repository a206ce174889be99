"""A/B variants of a step and spintax: the split, the stop of a variant, the results, the TOML.

Real database (both), real Redis with RQ's worker, real SMTP server on loopback.
"""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.management import CommandError
from django.db import connection

from proving.bench.stats import StatementCounter
from proving.variants import send_job_authorize_unchecked
from sequences.config.export import sequence_export_toml
from sequences.messages import render
from sequences.models import Enrollment, SendJob, Sequence, StepVariant, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.previews import step_preview
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim
from sequences.services.variants import variant_save, variant_stop
from sequences.tasks import dispatch
from sequences.variants import Arm, comparison_words
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker
from tests.sequences.test_commands import GOOD, run, write
from tests.sequences.test_rq import work
from ui.variant_results import variant_results

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def ab_sequence(mailbox, *weights: int) -> Sequence:
    """One step with variants A, B, … (subject "Subject A", …) of the given weights."""
    sequence = make_sequence(mailbox=mailbox, steps=1)
    step = sequence.steps.get()
    for index, weight in enumerate(weights or (1, 1)):
        name = chr(ord("A") + index)
        variant_save(step_id=step.pk, variant_id=None, name=name, subject=f"Subject {name}",
                     body=f"{{% spin \"Hi|Hello|Hey\" %}} {{{{ first_name }}}}, text {name}.", weight=weight,
                     actor="op")
    return sequence


def subjects(smtp_server) -> Counter:
    return Counter(r.message["Subject"] for r in smtp_server.received)


def test_a_one_to_one_split_over_24_people_reaches_each_variant_at_least_6_times(mailbox, smtp_server, redis_conn):
    sequence = ab_sequence(mailbox, 1, 1)
    people = [enroll(sequence, f"split{i}@example.com") for i in range(24)]
    assert dispatch()["queued"] == 24
    work("send")
    sent = subjects(smtp_server)
    assert sum(sent.values()) == 24 and sent["Subject A"] >= 6 and sent["Subject B"] >= 6, sent
    # Recorded on the job, and what was sent is that variant's text, spun once per person.
    for job in SendJob.objects.filter(enrollment__in=people).select_related("variant"):
        received = next(r for r in smtp_server.received if r.message["X-Outreach-Job"] == str(job.pk))
        assert received.message["Subject"] == f"Subject {job.variant.name}"
        body = received.message.get_payload(decode=True).decode()
        assert body.split(" ", 1)[0] in ("Hi", "Hello", "Hey") and f"text {job.variant.name}." in body
        # The preview of that person shows what they were sent, spin included.
        assert step_preview(step=job.step, contact=job.enrollment.contact, variant=job.variant).body.strip() == \
            body.strip()
    (step,) = variant_results(sequence)
    assert [(r.variant.name, r.sent) for r in step.rows] == [("A", sent["Subject A"]), ("B", sent["Subject B"])]
    # Nobody replied: equal rates, the variant with more sends named first (the split is random), or too early
    # to tell when one of them has fewer than MIN_SENDS.
    assert step.verdict.startswith(("A and B reply equally often", "B and A reply equally often",
                                    "Too early to tell")), step.verdict


def test_a_stopped_variant_sends_nothing_after_the_stop_and_its_people_get_another(mailbox, smtp_server, redis_conn):
    sequence = ab_sequence(mailbox, 1, 1)
    for i in range(8):
        enroll(sequence, f"stop{i}@example.com")
    b = StepVariant.objects.get(step__sequence=sequence, name="B")
    queued = dispatch_due()
    on_desk = SendJob.objects.filter(pk__in=queued, variant=b).values_list("pk", flat=True)[0]
    # Every other job goes back to waiting (as if the dispatcher had not reached them yet).
    SendJob.objects.filter(pk__in=queued).exclude(pk=on_desk).update(state=S.SCHEDULED)

    b_waiting = SendJob.objects.filter(variant=b, state=S.SCHEDULED).count()
    gate = Gate("prepared")  # a worker has rendered B's text for one person and is about to ask the final check
    worker = Worker(lambda: send_job_process(job_id=on_desk, worker_id="w1"))
    worker.start()
    gate.wait()
    done = variant_stop(variant_id=b.pk, actor="op")
    gate.release()
    outcome = worker.outcome()
    gate.remove()
    assert (outcome.state, outcome.detail) == ("canceled", "variant_stopped")
    assert (done.at_final_check, done.moved) == (1, {"A": b_waiting})
    assert " ".join(done.words()).count("cannot recall") == 1

    dispatch()
    work("send")
    assert subjects(smtp_server) == Counter({"Subject A": 8}), "nothing of B left after the stop"
    refused = SendJob.objects.get(pk=on_desk)
    assert (refused.state, refused.cancel_reason) == (S.CANCELED, "variant_stopped")
    replacement = SendJob.objects.get(enrollment_id=refused.enrollment_id, state=S.SUBMITTED)
    assert replacement.variant.name == "A"
    assert TimelineEvent.objects.filter(kind="variant_stopped", data__variant="B").exists()
    assert not Enrollment.objects.filter(sequence=sequence, status=Enrollment.Status.STOPPED).exists()


def test_without_the_final_check_a_message_of_the_stopped_variant_would_leave(mailbox, smtp_server):
    """The same race with the final check bypassed: the rendered B message leaves after the stop."""
    sequence = ab_sequence(mailbox, 1, 1)
    for i in range(4):
        enroll(sequence, f"bypass{i}@example.com")
    b = StepVariant.objects.get(step__sequence=sequence, name="B")
    job_id = SendJob.objects.filter(pk__in=dispatch_due(), variant=b).values_list("pk", flat=True)[0]
    gate = Gate("prepared")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1", authorize=send_job_authorize_unchecked))
    worker.start()
    gate.wait()
    variant_stop(variant_id=b.pk, actor="op")
    gate.release()
    assert worker.outcome().state == S.SUBMITTED
    gate.remove()
    assert subjects(smtp_server) == Counter({"Subject B": 1})


def test_the_last_variant_stopped_stops_its_waiting_people_and_says_so(mailbox):
    sequence = ab_sequence(mailbox, 1, 1)
    for i in range(4):
        enroll(sequence, f"last{i}@example.com")
    a, b = StepVariant.objects.filter(step__sequence=sequence).order_by("name")
    first = variant_stop(variant_id=a.pk, actor="op")
    assert first.people_stopped == 0 and sum(first.moved.values()) >= 1
    second = variant_stop(variant_id=b.pk, actor="op")
    assert second.people_stopped == 4
    assert "last running variant of step 1: 4 people waiting for the step were stopped" in " ".join(second.words())
    assert set(Enrollment.objects.filter(sequence=sequence).values_list("status", "stop_reason")) == {
        ("stopped", "operator")}
    assert not variant_stop(variant_id=b.pk, actor="op").changed  # a second stop changes nothing


def test_the_final_check_reads_the_variant_in_the_statements_it_already_runs(mailbox):
    sequence = ab_sequence(mailbox, 1, 1)
    enroll(sequence, "first@example.com")
    enroll(sequence, "count@example.com")
    (first, second) = [(j, send_job_claim(job_id=j, worker_id=f"w{j}").version) for j in dispatch_due()]
    assert send_job_authorize(job_id=first[0], worker_id=f"w{first[0]}", version=first[1]).outcome == "authorized"
    statements = StatementCounter()
    with connection.execute_wrapper(statements):
        decision = send_job_authorize(job_id=second[0], worker_id=f"w{second[0]}", version=second[1])
    assert decision.outcome == "authorized"
    # As tests/sequences/test_guard_cost.py counts a job without a variant: the variant comes with the job.
    assert len(statements.sql) == 7 + (connection.vendor == "sqlite"), statements.sql
    assert any("sequences_stepvariant" in sql and "sequences_contact" in sql for sql in statements.sql)


def test_spin_is_stable_per_person_and_differs_between_people():
    template = '{% spin "Hi|Hello|Hey|Good day" %} {% spin "one|two|three" %}'
    assert render(template, {}, seed=42) == render(template, {}, seed=42)
    assert len({render(template, {}, seed=seed) for seed in range(40)}) > 4
    assert {render(template, {}, seed=seed).split()[0] for seed in range(40)} == {"Hi", "Hello", "Hey", "Good"}


def test_variants_in_toml_load_export_and_refuse_nonsense_in_words(tmp_path):
    ab = GOOD.replace('''[[sequence.step]]
subject = "Hi {{ first_name }}"
body = "Hello {{ first_name }} at {{ company }}"
wait = "0s"
''', '''[[sequence.step]]
wait = "0s"

[[sequence.step.variants]]
name = "A"
subject = "Hi {{ first_name }}"
body = "Hello {{ first_name }}"
weight = 3

[[sequence.step.variants]]
name = "B"
subject = "Quick question"
body = "{% spin \\"Hi|Hello\\" %} {{ first_name }}"
''')
    run("load_sequences", write(tmp_path, "ab.toml", ab))
    variants = list(StepVariant.objects.filter(step__sequence__name="Intro").order_by("name")
                    .values_list("name", "weight", "step__position"))
    assert variants == [("A", 3, 1), ("B", 1, 1)]
    exported = sequence_export_toml(Sequence.objects.get(name="Intro"))
    assert exported.count("[[sequence.step.variants]]") == 2 and "weight = 3" in exported
    assert "unchanged" in run("load_sequences", write(tmp_path, "again.toml", exported))

    bad = (ab.replace('name = "B"', 'name = "A"').replace("weight = 3", "weight = 0")
           .replace('[[sequence.step]]\nwait = "0s"', '[[sequence.step]]\nbody = "own"\nwait = "0s"'))
    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "bad.toml", bad))
    words = str(excinfo.value)
    assert "another variant of this step is also named 'A'" in words
    assert "weight" in words and "at least 1" in words
    assert "a step with variants takes its subject and body from them" in words


def test_the_comparison_says_how_sure_in_words():
    assert comparison_words([Arm("A", 40, 2), Arm("B", 40, 5)]) == (
        "B replies more often than A (12 % vs 5 %), but with 40 sends each this could be chance (p = 0.24).")
    assert "unlikely to be chance (p < 0.001)" in comparison_words([Arm("A", 400, 20), Arm("B", 400, 60)])
    assert comparison_words([Arm("A", 4, 1), Arm("B", 5, 0)]).startswith("Too early to tell")
