"""A draft sequence: people may be enrolled, nothing is sent until it is launched.

Real database (both), real Redis with RQ's worker, real SMTP server on loopback.
"""

from __future__ import annotations

import django_rq
import pytest
from django.core.management import CommandError
from django.db import transaction
from django.test import Client
from django.urls import reverse

from sequences.config.export import sequence_export_toml
from sequences.models import OperatorAction, SendJob, Sequence, TimelineEvent
from sequences.services.campaigns import sequence_create, step_save
from sequences.services.stops import mailbox_pause, mailbox_resume
from sequences.states import job_move
from sequences.tasks import dispatch
from tests.factories import enroll
from tests.sequences.test_commands import GOOD, run, write
from tests.sequences.test_rq import work
from tests.ui import conftest as ui_fixtures

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
roles, users = ui_fixtures.roles, ui_fixtures.users


def draft(mailbox) -> Sequence:
    sequence = sequence_create(name="Spring", mailbox_id=mailbox.pk, actor="op")
    step_save(sequence_id=sequence.pk, step_id=None, subject="Hi {{ first_name }}", body="Hello {{ company }}",
              wait_seconds=0, thread=False, actor="op")
    return sequence


def test_a_draft_sends_nothing_until_it_is_launched_then_sends(mailbox, smtp_server, redis_conn):
    sequence = draft(mailbox)
    assert sequence.status == Sequence.Status.DRAFT
    people = [enroll(sequence, f"draft{i}@example.com") for i in range(3)]
    assert dispatch()["queued"] == 0, "the dispatcher leaves a draft's jobs alone"
    work("send")
    assert smtp_server.received == []

    # A job that gets past the dispatcher all the same (queued by hand, as one queued before a bug would be):
    # the final check holds it, and it stays scheduled, not failed.
    job = SendJob.objects.select_related("enrollment__contact", "step").get(enrollment=people[0])
    with transaction.atomic():
        job_move(job=job, to=S.QUEUED)
    django_rq.get_queue("send").enqueue("sequences.tasks.send_job", job.pk)
    work("send")
    assert smtp_server.received == []
    job.refresh_from_db()
    assert (job.state, job.attempts) == (S.SCHEDULED, 0)
    assert TimelineEvent.objects.filter(job=job, kind="job_deferred", data__reason="sequence_draft").exists()

    # A pause of the mailbox while the sequence waits cancels a job; its resume schedules only launched
    # sequences; the launch gives that person their step again.
    mailbox_pause(mailbox_id=mailbox.pk, actor="op")
    mailbox_resume(mailbox_id=mailbox.pk, actor="op")
    assert "3 emails waiting" in run("launch", "Spring")
    assert OperatorAction.objects.filter(action="sequence_launch", target_id=sequence.pk).exists()
    assert TimelineEvent.objects.filter(kind="sequence_launched", data__sequence="Spring").exists()
    assert dispatch()["queued"] == 3
    work("send")
    assert sorted(r.recipients[0] for r in smtp_server.received) == [f"draft{i}@example.com" for i in range(3)]
    with pytest.raises(CommandError, match="launched already"):
        run("launch", "Spring")


def test_the_sequence_page_says_draft_and_launches_after_a_confirmation(mailbox, users):
    sequence = draft(mailbox)
    enroll(sequence, "page@example.com")
    client = Client()
    client.force_login(users["operator"])
    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "Draft — nothing is sent until you launch" in page and 'id="launch-sequence"' in page
    assert 'id="pause-sequence"' not in page
    confirm = client.get(reverse("sequence_launch", args=[sequence.pk])).content.decode()
    assert "1</strong> active enrollment" in confirm and "cannot become a draft again" in confirm
    assert Sequence.objects.get(pk=sequence.pk).status == Sequence.Status.DRAFT, "a GET changes nothing"
    response = client.post(reverse("sequence_launch", args=[sequence.pk]))
    assert response.status_code == 302
    assert Sequence.objects.get(pk=sequence.pk).status == Sequence.Status.ACTIVE
    log = OperatorAction.objects.get(action="sequence_launch")
    assert (log.actor, log.result["waiting"]) == (users["operator"].get_username(), 1)
    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "Draft — nothing is sent" not in page and 'id="pause-sequence"' in page
    assert client.post(reverse("sequence_launch", args=[sequence.pk])).status_code == 400  # launched already


def test_status_in_toml_creates_a_draft_launches_it_and_never_goes_back(tmp_path):
    drafted = GOOD.replace('name = "Intro"', 'name = "Intro"\nstatus = "draft"')
    run("load_sequences", write(tmp_path, "draft.toml", drafted))
    sequence = Sequence.objects.get(name="Intro")
    assert sequence.status == Sequence.Status.DRAFT
    assert 'status = "draft"' in sequence_export_toml(sequence)
    run("load_sequences", write(tmp_path, "same.toml", GOOD))  # no status: left as it is
    assert Sequence.objects.get(name="Intro").status == Sequence.Status.DRAFT
    out = run("load_sequences", write(tmp_path, "go.toml", drafted.replace('"draft"', '"active"')))
    assert "launched (draft -> active)" in out
    assert Sequence.objects.get(name="Intro").status == Sequence.Status.ACTIVE
    with pytest.raises(CommandError, match="cannot become a draft again"):
        run("load_sequences", write(tmp_path, "back.toml", drafted))
    with pytest.raises(CommandError, match=r"status .*must be one of draft, active"):
        run("load_sequences", write(tmp_path, "bad.toml", drafted.replace('"draft"', '"paused"')))
