"""Operator pages beyond the matrix: what actions did, the operator log, timelines, incidents, admin, commands."""

from __future__ import annotations

import io
import re
import smtplib

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse

from proving.harness.smtp import SmtpServer
from sequences.models import Enrollment, OperatorAction, SendJob, Sequence, Suppression
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim, send_job_record_submitted
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db
S = SendJob.State
MS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC")


def submit(job_id: int, worker_id: str = "w1") -> None:
    """The pipeline's transitions without the network (the browser test sends for real)."""
    job = send_job_claim(job_id=job_id, worker_id=worker_id)
    assert send_job_authorize(job_id=job_id, worker_id=worker_id, version=job.version).outcome == "authorized"
    assert send_job_record_submitted(job_id=job_id, worker_id=worker_id, smtp_reply="250 2.0.0 Ok: queued")


def reply_to(job: SendJob, *, internaldate=None):
    """A human reply to `job`, through the real ingestion."""
    from db.clock import db_now
    from inbound.ingest.record import inbound_record
    from mailboxes.imap.fetch import FetchedMessage

    email = job.enrollment.contact.email
    raw = (f"From: Prospect <{email}>\r\nSubject: Re: hello\r\nMessage-ID: <reply-{job.pk}@example.com>\r\n"
           f"In-Reply-To: {job.message_id}\r\n\r\nNo thanks.\r\n").encode()
    fetched = FetchedMessage(uid=job.pk, internaldate=internaldate or db_now(), raw=raw, size=len(raw), flags=())
    return inbound_record(mailbox_id=job.enrollment.sequence.mailbox_id, folder="INBOX", uidvalidity=1,
                          fetched=fetched)


def test_the_roles_migration_created_the_three_groups():
    """No fixture here: the groups come from sequences/migrations/0002_roles.py."""
    perms = {g.name: set(g.permissions.values_list("codename", flat=True)) for g in Group.objects.all()}
    assert {"staff", "operators", "admins"} <= set(perms)
    assert "view_sequence" in perms["staff"] and "operate" not in perms["staff"]
    assert "operate" in perms["operators"] and "manage_suppressions" not in perms["operators"]
    assert {"operate", "manage_suppressions", "change_mailbox", "add_user", "admin"} <= perms["admins"]
    assert not any(code.startswith("delete_") for codes in perms.values() for code in codes)


def test_sequence_pause_then_resume_reports_and_logs(client, users, world):
    client.force_login(users["operator"])
    sequence = world["sequence"]
    page = client.post(reverse("sequence_pause", args=[sequence.pk]), follow=True).content.decode()
    assert "Paused UI sequence." in page and "1 email canceled — it will not be sent." in page
    again = client.post(reverse("sequence_pause", args=[sequence.pk]), follow=True).content.decode()
    assert "Nothing changed:" in again
    page = client.post(reverse("sequence_resume", args=[sequence.pk]), follow=True).content.decode()
    assert "Resumed UI sequence." in page and "1 next step scheduled" in page
    log = client.get(reverse("operator_log")).content.decode()
    assert log.count("sequence_pause") >= 2 and "sequence_resume" in log
    assert users["operator"].username in log
    assert OperatorAction.objects.filter(action="sequence_resume", actor=users["operator"].username).exists()


def test_enrollment_page_shows_labels_stop_counts_and_a_millisecond_timeline(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    enrollment = enroll(sequence, "replier@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    client.force_login(users["operator"])
    client.post(reverse("enrollment_stop", args=[enrollment.pk]))
    html = client.get(reverse("enrollment_detail", args=[enrollment.pk])).content.decode()
    assert re.search(r"Already submitted at " + MS.pattern + " — cannot recall", html)
    assert re.search(r"Canceled — never sent: an operator stopped it \(" + MS.pattern + r"\)", html)
    assert ("1 email canceled — it will not be sent. 1 had already been sent before the stop; it cannot be "
            "recalled.") in html
    assert len(MS.findall(html)) >= 6
    assert "w1" in html and "250 2.0.0 Ok: queued" in html


def test_enrollment_actions_are_in_the_operator_log(client, users, world):
    client.force_login(users["operator"])
    client.post(reverse("enrollment_stop", args=[world["active"].pk]))
    page = client.post(reverse("enrollment_resume", args=[world["paused"].pk]), follow=True).content.decode()
    assert "<strong>Resumed paused@example.com in UI sequence.</strong>\n" in page and "scheduled" not in page.split(
        'id="result"')[1].split("</div>")[0]
    log = client.get(reverse("operator_log")).content.decode()
    actor = users["operator"].username
    assert OperatorAction.objects.filter(action="enrollment_stop", actor=actor).exists()
    assert OperatorAction.objects.filter(action="enrollment_resume", actor=actor).exists()
    assert "enrollment_stop" in log and "enrollment_resume" in log
    # Every entry links to what it was done to, resumes included.
    stop_link = reverse("enrollment_detail", args=[world["active"].pk])
    resume_link = reverse("enrollment_detail", args=[world["paused"].pk])
    assert f'<a href="{stop_link}">enrollment {world["active"].pk}</a>' in log
    assert f'<a href="{resume_link}">paused@example.com in UI sequence</a>' in log
    assert f'<a href="{reverse("sequence_detail", args=[world["sequence"].pk])}">' not in log  # nothing done to it


def test_mailbox_page_shows_env_var_names_never_values(client, users, world, monkeypatch):
    monkeypatch.setenv("OUTREACH_SECRET_UI_BOX_SMTP", "s3cret-value-never-shown")
    client.force_login(users["admin"])
    for url in (reverse("mailbox_list"), f"/admin/mailboxes/mailbox/{world['mailbox'].pk}/change/"):
        html = client.get(url).content.decode()
        assert "OUTREACH_SECRET_UI_BOX_SMTP" in html
        assert "s3cret-value-never-shown" not in html
    page = client.post(reverse("mailbox_pause", args=[world["mailbox"].pk]), follow=True).content.decode()
    assert "Paused ui-box." in page and "canceled — it will not be sent" in page


def test_incident_search_by_address_message_id_and_smtp_id(client, users, world):
    job = world["job"]
    SendJob.objects.filter(pk=job.pk).update(smtp_reply="250 2.0.0 Ok: queued as 4F2A1B9C")  # the transport's answer
    client.force_login(users["staff"])
    for q in ("active@example.com", job.message_id, job.message_id.strip("<>"), "4F2A1B9C", "@example.com"):
        response = client.get(reverse("incident_search"), {"q": q})
        assert [r.job.pk for r in response.context["jobs"]][:1] == [job.pk] or job.pk in [
            r.job.pk for r in response.context["jobs"]], q
    response = client.get(reverse("incident_search"), {"q": "<reply-1@example.com>"})
    assert [m.pk for m in response.context["inbound"]] == [world["inbound"].pk]


def test_incident_picture_puts_the_reply_after_the_authorization(client, users):
    """send-first: authorized, then the reply committed -> 'cannot recall', with both lanes drawn."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    enrollment = enroll(sequence, "late@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence").get(pk=job_id)
    # The reply reached the mailbox while the job was being prepared, and was committed after it left.
    result = reply_to(job, internaldate=job.claimed_at)
    assert "stopped (replied)" in result.effect
    assert Enrollment.objects.get(pk=enrollment.pk).stop_reason == "replied"
    client.force_login(users["staff"])
    response = client.get(reverse("incident_job", args=[job_id]))
    html = response.content.decode()
    verdict = response.context["verdict"]
    assert verdict["tone"] == "cannot-recall"
    assert "had passed the final check" in verdict["text"] and "INTERNALDATE" in verdict["text"]
    kinds = [(p.lane, p.kind) for p in response.context["lanes"]["points"]]
    assert ("job", "authorized") in kinds and ("reply", "committed") in kinds and ("reply", "received") in kinds
    assert kinds.index(("job", "authorized")) < kinds.index(("reply", "committed"))
    assert '<svg class="lanes"' in html and 'class="window"' in html and 'class="guide"' in html


def test_admin_is_read_only_for_append_only_data_and_state_fields(client, users, world):
    client.force_login(users["admin"])
    event = world["job"].events.first()
    entry = Suppression.objects.first()
    for url in (f"/admin/sequences/timelineevent/{event.pk}/change/",
                f"/admin/sequences/suppression/{entry.pk}/change/",
                f"/admin/sequences/sendjob/{world['job'].pk}/change/",
                f"/admin/sequences/enrollment/{world['active'].pk}/change/",
                f"/admin/inbound/inboundmessage/{world['inbound'].pk}/change/"):
        html = client.get(url).content.decode()
        assert 'name="_save"' not in html, url  # no edit form
        assert client.post(url, {}).status_code == 403, url
    # The ledger's admin pages moved with the model to the inbound app; the old address sends there.
    old = client.get(f"/admin/mailboxes/inboundmessage/{world['inbound'].pk}/change/")
    assert (old.status_code, old["Location"]) == (301, f"/admin/inbound/inboundmessage/{world['inbound'].pk}/change/")
    for model in ("timelineevent", "suppression", "sendjob", "enrollment", "operatoraction"):
        assert client.get(f"/admin/sequences/{model}/add/").status_code == 403
    assert client.post(f"/admin/sequences/suppression/{entry.pk}/delete/").status_code == 403
    # The same labels as the UI on the job and enrollment lists.
    assert "Scheduled for" in client.get("/admin/sequences/sendjob/").content.decode()
    assert "step 1: Scheduled for" in client.get("/admin/sequences/enrollment/").content.decode()
    # Sequence status is not a form field; pausing is an admin action that calls the service.
    html = client.get(f"/admin/sequences/sequence/{world['sequence'].pk}/change/").content.decode()
    assert 'name="status"' not in html
    client.post("/admin/sequences/sequence/", {"action": "pause_sequences", "_selected_action": [world["sequence"].pk]})
    assert Sequence.objects.get(pk=world["sequence"].pk).status == Sequence.Status.PAUSED
    assert OperatorAction.objects.filter(action="sequence_pause", actor=users["admin"].username).exists()
    client.post("/admin/sequences/enrollment/",
                {"action": "stop_enrollments", "_selected_action": [world["active"].pk]})
    assert Enrollment.objects.get(pk=world["active"].pk).stop_reason == "operator"


def test_admin_actions_need_the_operate_permission(client, users, world, django_user_model):
    """A Django-admin user without a role sees the lists it may view but cannot run a pause action."""
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_sequence"))
    client.force_login(viewer)
    assert client.get("/admin/sequences/sequence/").status_code == 200
    client.post("/admin/sequences/sequence/", {"action": "pause_sequences", "_selected_action": [world["sequence"].pk]})
    assert Sequence.objects.get(pk=world["sequence"].pk).status == Sequence.Status.ACTIVE


def test_add_user_creates_each_role_and_prints_the_password_once():
    out = io.StringIO()
    call_command("add_user", "alice", "--role", "operator", stdout=out)
    password = re.search(r"password for alice \(shown once\): (\S+)", out.getvalue()).group(1)
    alice = get_user_model().objects.get(username="alice")
    assert alice.check_password(password) and not alice.is_staff
    assert list(alice.groups.values_list("name", flat=True)) == ["operators"]
    assert alice.has_perm("sequences.operate") and not alice.has_perm("sequences.manage_suppressions")

    out = io.StringIO()
    call_command("add_user", "alice", "--role", "admin", stdout=out)
    alice = get_user_model().objects.get(username="alice")
    assert "password" not in out.getvalue() and alice.check_password(password)  # unchanged
    assert list(alice.groups.values_list("name", flat=True)) == ["admins"] and alice.is_staff
    with pytest.raises(CommandError):
        call_command("add_user", "bob", "--role", "root")


@pytest.mark.django_db(transaction=True)  # a real send: no transaction across the transport
def test_setup_demo_builds_every_state_through_the_services(monkeypatch, roles, smtp_server, client):
    monkeypatch.setenv("OUTREACH_CAPTURE_PORT", str(smtp_server.port))
    out = io.StringIO()
    call_command("setup_demo", stdout=out)
    assert re.search(r"password for admin \(shown once\): \S{12,}", out.getvalue())
    assert "log in at http://testserver/login/" in out.getvalue()  # the address this install serves
    status = dict(Enrollment.objects.values_list("contact__email", "status"))
    assert status == {"alan@example.org": "stopped", "linus@example.net": "paused",
                      "margaret@example.com": "stopped", "grace@example.com": "active"}
    alan = Enrollment.objects.get(contact__email="alan@example.org")
    assert alan.stop_reason == "replied"
    first, second = SendJob.objects.filter(enrollment=alan).order_by("step__position")
    # Alan's step 1 really went through the SMTP server, like every other message.
    assert first.state == S.SUBMITTED and first.smtp_reply.startswith("250")
    assert smtp_server.message_ids() == [first.message_id]
    assert (second.state, second.cancel_reason) == (S.CANCELED, "replied")
    # The demo admin's address is one the capture server receives: "Send test to me" works at once.
    admin = get_user_model().objects.get(username="admin")
    assert admin.email == "admin@demo.outreach.test"
    client.force_login(admin)
    client.post(reverse("step_send_test", args=[first.step_id]), {"contact": alan.contact_id})
    assert smtp_server.wait_for(2, timeout=10)
    assert smtp_server.received[-1].recipients == ["admin@demo.outreach.test"]
    assert list(Suppression.objects.filter(value="old-customer@example.com").values_list("action", flat=True)) == [
        "lift", "add"]
    out = io.StringIO()
    call_command("setup_demo", stdout=out)
    assert "already present" in out.getvalue() and "password" not in out.getvalue()


def test_setup_demo_without_the_capture_server_creates_nothing(monkeypatch, roles):
    from proving.management.commands import setup_demo

    monkeypatch.setattr(setup_demo, "WAIT_FOR_SMTP_SECONDS", 0.2)
    monkeypatch.setenv("OUTREACH_CAPTURE_PORT", "9")  # nothing listens on the discard port here
    with pytest.raises(CommandError, match="capture server on 127.0.0.1:9, and nothing listens there"):
        call_command("setup_demo", stdout=io.StringIO())
    assert not Enrollment.objects.exists() and not get_user_model().objects.exists()



def test_a_restarted_capture_server_keeps_the_earlier_captures(tmp_path):
    for n in (1, 2):  # the same folder, a new server each time: as after a restart of scripts/run
        with SmtpServer(keep_messages=False, capture_dir=tmp_path) as server:
            with smtplib.SMTP("127.0.0.1", server.port) as smtp:
                smtp.sendmail("a@example.com", ["b@example.com"], f"Subject: {n}\r\n\r\nmessage {n}\r\n")
            assert server.wait_for(1, timeout=10)
    captured = sorted(tmp_path.glob("*.eml"))
    assert [p.name for p in captured] == ["000001.eml", "000002.eml"]
    assert [b"message 1" in captured[0].read_bytes(), b"message 2" in captured[1].read_bytes()] == [True, True]
