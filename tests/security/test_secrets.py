"""Mailbox secrets come only from allow-listed environment variables, and never show."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from mailboxes.models import Mailbox
from mailboxes.transports.esp import EspConfig
from mailboxes.transports.smtp import SmtpConfig
from proving.harness.provider_api import ProviderApi
from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.providers.helpers import esp_mailbox, send_next

TOML = """
[[mailbox]]
name = "sales"
address = "sales@acme.test"
smtp = {{ host = "127.0.0.1", port = 2525, username = "u", {field} = "{name}" }}
"""


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "DATABASE_URL", "OUTREACH_WEBHOOK_SECRET", "OUTREACH_SECRET_"])
def test_loading_a_file_refuses_a_variable_outside_the_allow_list(tmp_path, name):
    path = tmp_path / "mailboxes.toml"
    path.write_text(TOML.format(field="password_env", name=name))
    with pytest.raises(CommandError, match="OUTREACH_SECRET_"):
        call_command("load_sequences", str(path))
    assert not Mailbox.objects.exists()


@pytest.mark.django_db
def test_loading_a_file_refuses_a_per_mailbox_api_url(tmp_path):
    path = tmp_path / "mailboxes.toml"
    path.write_text(TOML.format(field="password_env", name="OUTREACH_SECRET_SALES_SMTP") +
                    'transport = { kind = "anymail", esp = "sendgrid", api_key_env = "OUTREACH_SECRET_SG", '
                    'api_url = "https://collector.example/" }\n')
    with pytest.raises(CommandError, match="api_url"):
        call_command("load_sequences", str(path))
    assert not Mailbox.objects.exists()


@pytest.mark.django_db
def test_the_allow_list_setting_admits_a_named_variable(tmp_path, settings):
    settings.OUTREACH_SECRET_ENV_ALLOW = ["LEGACY_SMTP_PASSWORD"]
    path = tmp_path / "mailboxes.toml"
    path.write_text(TOML.format(field="password_env", name="LEGACY_SMTP_PASSWORD"))
    call_command("load_sequences", str(path))
    assert Mailbox.objects.get().smtp_password_env == "LEGACY_SMTP_PASSWORD"


@pytest.mark.django_db
def test_the_admin_form_refuses_a_variable_outside_the_allow_list(users):
    mailbox = MailboxFactory()
    request = RequestFactory().post("/admin/")
    request.user = users["admin"]
    model_admin = admin.site._registry[Mailbox]
    form_class = model_admin.get_form(request, mailbox)
    assert "esp_api_url" not in form_class.base_fields
    data = {name: getattr(mailbox, name) for name in form_class.base_fields
            if not isinstance(getattr(mailbox, name, None), list | type(None))}
    data |= {"imap_folders": '["INBOX"]', "smtp_password_env": "DATABASE_URL",
             "esp_api_key_env": "DJANGO_SECRET_KEY", "imap_password_env": "OUTREACH_SECRET_FINE"}
    form = form_class(data=data, instance=mailbox)
    assert not form.is_valid()
    assert set(form.errors) >= {"smtp_password_env", "esp_api_key_env"} and "imap_password_env" not in form.errors
    assert "OUTREACH_SECRET_" in str(form.errors["smtp_password_env"])


@pytest.mark.django_db(transaction=True)
def test_a_row_naming_another_variable_sends_nothing_and_says_why(smtp_server, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-signing-key-itself")
    mailbox = MailboxFactory(smtp_port=smtp_server.port, smtp_username="u", smtp_password_env="DJANGO_SECRET_KEY")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "ada@example.com")
    (job_id,) = dispatch_due()

    outcome = send_job_process(job_id=job_id, worker_id="w1")

    # The mailbox's configuration, not the message: the mailbox is blocked and the job waits for it.
    assert outcome.state == SendJob.State.SCHEDULED
    job = SendJob.objects.get(pk=job_id, enrollment=enrollment)
    assert "OUTREACH_SECRET_" in job.error and "the-signing-key-itself" not in job.error
    mailbox.refresh_from_db()
    assert mailbox.sending_status == "blocked" and "the-signing-key-itself" not in mailbox.blocked_reason
    assert smtp_server.received == []


def test_no_secret_in_a_transport_config_repr():
    assert "hunter2" not in repr(SmtpConfig(host="h", port=25, username="u", password="hunter2"))
    assert "sk-live-123" not in repr(EspConfig(esp="sendgrid", api_key="sk-live-123"))


@pytest.mark.django_db(transaction=True)
def test_a_mailbox_api_url_cannot_send_the_key_elsewhere(provider_api):
    elsewhere = ProviderApi().start()
    try:
        mailbox = esp_mailbox(provider_api, "sendgrid", esp_api_url=elsewhere.url("sendgrid"))
        job, outcome = send_next(enroll(make_sequence(mailbox=mailbox, steps=1), "ada@example.com"))
        assert outcome.state == SendJob.State.SUBMITTED
        assert elsewhere.requests == [] and len(provider_api.received("sendgrid.send")) == 1
    finally:
        elsewhere.stop()
