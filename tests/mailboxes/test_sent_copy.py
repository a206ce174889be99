"""A copy of each message sent lands in the mailbox's own Sent folder, with \\Seen, on a real Dovecot.

Real parts on loopback: the aiosmtpd server (proving/harness/smtp.py), Dovecot (proving/harness/dovecot.py), Redis
and RQ run in-process. The send goes through the pipeline as a send worker runs it; the copy is a job of its own on
the "default" queue, run afterwards by an in-process RQ worker. Then the Sent folder is read over IMAP.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

import django_rq
import pytest
from django.core.management import CommandError
from django.http import QueryDict
from rq import SimpleWorker

from db.clock import db_now
from mailboxes.models import Mailbox, SaveToSent
from proving.harness.dovecot import Dovecot
from sequences.config.export import sequence_export_toml
from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.sent_copies import TASK, sent_copy_enqueue, sent_copy_wanted
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.sequences.test_commands import GOOD, run, write
from tests.ui.conftest import roles, users  # noqa: F401 - fixtures
from ui.mailbox_forms import MailboxForm

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
# A Sent folder as Debian's stock Dovecot config declares it (15-mailboxes.conf): special-use \Sent, another name.
SPECIAL_USE_SENT = """
namespace inbox {
  mailbox "Sent Messages" {
    special_use = \\Sent
    auto = subscribe
  }
}
"""


def send_one(mailbox: Mailbox, email: str = "pat@example.com") -> SendJob:
    """Enroll one person and hand their first message off through the pipeline, as a send worker does."""
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), email)
    (job_id,) = [j for j in dispatch_due() if SendJob.objects.filter(pk=j, enrollment=enrollment).exists()]
    outcome = send_job_process(job_id=job_id, worker_id="w1")
    assert outcome.state == S.SUBMITTED, outcome
    return SendJob.objects.get(pk=job_id)


def queued_copies(name: str) -> int:
    queue = django_rq.get_queue(name)
    return sum(1 for job in queue.get_jobs() if job.func_name == TASK)


def run_default_queue() -> None:
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def in_folder(server: Dovecot, user: str, folder: str, message_id: str) -> list[tuple[tuple, bytes]]:
    """(flags, raw) of each message in *folder* with this Message-ID; [] when the folder does not exist."""
    with server.client(user) as c:
        if not c.folder_exists(folder):
            return []
        c.select_folder(folder, readonly=True)
        uids = c.search(["HEADER", "Message-ID", message_id])
        return [(tuple(v[b"FLAGS"]), v[b"BODY[]"]) for v in c.fetch(uids, ["FLAGS", "BODY.PEEK[]"]).values()]


def folders(server: Dovecot, user: str) -> dict[str, tuple]:
    with server.client(user) as c:
        return {name: flags for flags, _delim, name in c.list_folders()}


def subscribed(server: Dovecot, user: str) -> set[str]:
    with server.client(user) as c:
        return {name for _flags, _delim, name in c.list_sub_folders()}


@pytest.fixture
def sent_dovecot():
    with Dovecot({"alice": "alicepw"}, extra_config=SPECIAL_USE_SENT) as server:
        yield server


@pytest.fixture
def box(smtp_server, sent_dovecot, monkeypatch) -> Mailbox:
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    return MailboxFactory(smtp_port=smtp_server.port, imap_host=sent_dovecot.host, imap_port=sent_dovecot.port,
                          imap_username="alice", imap_password_env="OUTREACH_SECRET_TEST_IMAP",
                          imap_folders=["INBOX"])


def test_a_message_sent_lands_in_the_special_use_sent_folder_seen_and_byte_for_byte(
    box, sent_dovecot, smtp_server, redis_conn, caplog
):
    assert box.save_to_sent == SaveToSent.AUTO  # the default
    job = send_one(box)
    # The copy waits on the default queue, never on the send queue; nothing was copied during the send.
    assert (queued_copies("default"), queued_copies("send")) == (1, 0)
    assert in_folder(sent_dovecot, "alice", "Sent Messages", job.message_id) == []

    run_default_queue()
    ((flags, raw),) = in_folder(sent_dovecot, "alice", "Sent Messages", job.message_id)
    assert b"\\Seen" in flags
    (received,) = smtp_server.received
    assert raw.rstrip(b"\r\n") == received.data.rstrip(b"\r\n")  # the bytes handed off, not a rebuilt message
    assert "Sent" not in folders(sent_dovecot, "alice")  # the server's Sent folder was used; none was made
    job.refresh_from_db()
    assert job.state == S.SUBMITTED
    box.refresh_from_db()
    assert (box.sent_copy_failed_at, box.sent_copy_error) == (None, "")

    # A repeated delivery of the same RQ job adds nothing.
    django_rq.get_queue("default").enqueue(TASK, box.pk, job.pk, raw, 1)
    with caplog.at_level(logging.INFO, logger="outreach.sent_copies"):
        run_default_queue()
    assert len(in_folder(sent_dovecot, "alice", "Sent Messages", job.message_id)) == 1
    assert [r.getMessage() for r in caplog.records if "already there" in r.getMessage()]
    box.refresh_from_db()
    assert box.sent_copy_error == ""


def test_without_a_sent_folder_one_named_sent_is_made_and_subscribed(imap_mailbox, dovecot, redis_conn):
    assert "Sent" not in folders(dovecot, "alice")
    first, second = send_one(imap_mailbox, "a@example.com"), send_one(imap_mailbox, "b@example.com")
    run_default_queue()
    for job in (first, second):
        ((flags, _raw),) = in_folder(dovecot, "alice", "Sent", job.message_id)
        assert b"\\Seen" in flags
    assert "Sent" in subscribed(dovecot, "alice")


def test_on_a_server_whose_folders_live_under_inbox_the_copy_goes_to_inbox_sent(smtp_server, monkeypatch,
                                                                              redis_conn):
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    with Dovecot({"alice": "alicepw"}, separator=".") as server:  # Cyrus-style: INBOX.Sent
        box = MailboxFactory(smtp_port=smtp_server.port, imap_host=server.host, imap_port=server.port,
                             imap_username="alice", imap_password_env="OUTREACH_SECRET_TEST_IMAP")
        job = send_one(box)
        run_default_queue()
        ((flags, _raw),) = in_folder(server, "alice", "INBOX.Sent", job.message_id)
        assert b"\\Seen" in flags


def test_never_saves_nothing(box, sent_dovecot, redis_conn):
    Mailbox.objects.filter(pk=box.pk).update(save_to_sent=SaveToSent.NEVER)
    job = send_one(Mailbox.objects.get(pk=box.pk))
    assert queued_copies("default") == 0
    run_default_queue()
    assert in_folder(sent_dovecot, "alice", "Sent Messages", job.message_id) == []


@pytest.mark.parametrize(("fields", "wanted"), [
    ({"smtp_host": "smtp.gmail.com"}, False),  # Gmail files what it sends in Sent Mail itself
    ({"smtp_host": "SMTP.GMAIL.COM."}, False),
    ({"auth": "oauth2", "oauth2_provider": "google"}, False),  # the preset's Google token URL
    ({"auth": "oauth2", "oauth2_provider": "generic", "oauth2_token_url": "https://oauth2.googleapis.com/token"},
     False),
    ({"transport_kind": "anymail", "esp_name": "sendgrid"}, False),  # an ESP keeps no IMAP Sent folder
    ({"imap_host": ""}, False),  # nowhere to put it
    ({"smtp_host": "mail.acme.test"}, True),  # Postfix + Dovecot keep no copy
    ({"smtp_host": "smtp.office365.com", "auth": "oauth2", "oauth2_provider": "microsoft"}, True),
    ({"smtp_host": "smtp.gmail.com", "save_to_sent": "always"}, True),
    ({"smtp_host": "mail.acme.test", "save_to_sent": "never"}, False),
    ({"imap_host": "", "save_to_sent": "always"}, False),
])
def test_the_auto_rule(fields, wanted):
    assert sent_copy_wanted(Mailbox(**({"imap_host": "imap.acme.test"} | fields))) is wanted


def test_auto_with_a_gmail_host_enqueues_no_copy(redis_conn):
    gmail = MailboxFactory(smtp_host="smtp.gmail.com", smtp_security="starttls", imap_host="imap.gmail.com",
                           imap_security="tls")
    assert sent_copy_enqueue(mailbox=gmail, job_id=1, message=b"Subject: x\r\n\r\nx\r\n") is False
    assert queued_copies("default") == 0


def test_an_imap_failure_leaves_the_send_submitted_and_says_so_on_the_mailbox_once(
    box, sent_dovecot, smtp_server, redis_conn, settings, caplog
):
    settings.OUTREACH_SENT_COPY_RETRY_SECONDS = (0, 0)  # the tries at once, in this burst
    job = send_one(box)
    sent_dovecot.kill()  # the IMAP server is gone after the hand-off
    with caplog.at_level(logging.INFO, logger="outreach.sent_copies"):
        run_default_queue()
    job.refresh_from_db()
    assert job.state == S.SUBMITTED and len(smtp_server.received) == 1
    box.refresh_from_db()
    assert box.sent_copy_failed_at is not None
    assert re.match(rf"copy to Sent of {re.escape(job.message_id)} failed: .*{sent_dovecot.port}", box.sent_copy_error)
    assert "trying again" not in box.sent_copy_error  # the last try's words
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert len([r for r in caplog.records if "failed" in r.getMessage()]) == 3  # the first try and two more

    sent_dovecot.start()  # back: the next copy is saved and the warning goes
    later = send_one(Mailbox.objects.get(pk=box.pk), "next@example.com")
    run_default_queue()
    assert len(in_folder(sent_dovecot, "alice", "Sent Messages", later.message_id)) == 1
    box.refresh_from_db()
    assert (box.sent_copy_failed_at, box.sent_copy_error) == (None, "")


def test_a_refused_login_is_tried_once_not_again(box, sent_dovecot, redis_conn, settings, monkeypatch):
    settings.OUTREACH_SENT_COPY_RETRY_SECONDS = (0, 0, 0)
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "not-alices-password")
    job = send_one(box)
    run_default_queue()
    assert sent_dovecot.log().count("Password mismatch") == 1  # one login: no burst a provider would lock for
    box.refresh_from_db()
    assert box.sent_copy_error.startswith(f"copy to Sent of {job.message_id} failed: ")
    assert "refused" in box.sent_copy_error


def with_save_to_sent(value: str) -> str:
    return GOOD.replace("daily_cap = 50", f'daily_cap = 50\nsave_to_sent = "{value}"')


def test_save_to_sent_in_toml_loads_exports_and_refuses_nonsense(tmp_path):
    run("load_sequences", write(tmp_path, "a.toml", GOOD))
    mailbox = Mailbox.objects.get(name="sales")
    assert mailbox.save_to_sent == SaveToSent.AUTO  # absent: the default
    assert 'save_to_sent = "auto"' in sequence_export_toml(mailbox.sequences.first())

    run("load_sequences", write(tmp_path, "b.toml", with_save_to_sent("never")))
    mailbox.refresh_from_db()
    assert mailbox.save_to_sent == SaveToSent.NEVER
    exported = sequence_export_toml(mailbox.sequences.first())
    assert 'save_to_sent = "never"' in exported
    run("load_sequences", write(tmp_path, "c.toml", exported))  # what it exports loads back unchanged
    mailbox.refresh_from_db()
    assert mailbox.save_to_sent == SaveToSent.NEVER

    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "d.toml", with_save_to_sent("yes")))
    assert "save_to_sent" in str(excinfo.value) and "auto, always, never" in str(excinfo.value)


def test_the_form_refuses_always_without_imap_and_the_edit_page_shows_the_last_failure(client, users):
    data = {"preset": "other", "name": "sales", "address": "sales@acme.test", "auth": "password",
            "smtp_host": "127.0.0.1", "smtp_port": 2525, "smtp_security": "none", "imap_port": 993,
            "imap_security": "tls", "daily_cap": 50, "window_timezone": "UTC", "save_to_sent": "always"}
    form = MailboxForm(QueryDict(urlencode(data)))  # "Read replies over IMAP" not ticked
    assert not form.is_valid() and "over IMAP" in form.errors["save_to_sent"][0]
    form = MailboxForm(QueryDict(urlencode(data | {"save_to_sent": ""})))  # sent without it: the default
    assert form.is_valid(), form.errors
    assert form.column_values()["save_to_sent"] == SaveToSent.AUTO

    box = MailboxFactory(sent_copy_error="copy to Sent of <m1@acme.test> failed: NO [OVERQUOTA] Quota exceeded",
                         sent_copy_failed_at=db_now())
    client.force_login(users["operator"])
    page = client.get(f"/mailboxes/{box.pk}/edit/").content.decode()
    assert "copy to Sent of &lt;m1@acme.test&gt; failed: NO [OVERQUOTA] Quota exceeded" in page
