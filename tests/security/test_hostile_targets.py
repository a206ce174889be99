"""The server connects only where it may: no request forgery into its own network through webhook URLs, OAuth
endpoints, mail hosts or a CA file (issue 34, item 10).

Real receivers on loopback (an HTTP receiver, the OAuth server, aiosmtpd). The suite allows loopback targets
(outreach.test_settings); each test here takes that permission away, as a production install has it.
"""

from __future__ import annotations

import socket
from io import StringIO

import pytest
import requests
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from mailboxes.models import Mailbox
from mailboxes.oauth2 import OAuth2Config, TokenRefused, access_token
from mailboxes.targets import GuardedAdapter, TargetRefused, guard, url_problem
from mailboxes.tls import ca_file_problem
from mailboxes.transports.base import MailboxRefused
from mailboxes.transports.smtp import SmtpConfig, SmtpTransport
from proving.harness.oauth import OAuthServer
from sequences.webhooks_out.deliver import webhook_deliver
from sequences.webhooks_out.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tests.api.receiver import Receiver
from tests.sequences.test_commands import GOOD, write

SECRET_ENV = "OUTREACH_SECRET_TEST_WEBHOOK"
HOSTILE_URLS = [
    "https://169.254.169.254/latest/meta-data/",
    "https://[fe80::1]/",
    "https://[::ffff:169.254.169.254]/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://10.0.0.7/admin",
    "https://192.168.1.1/",
    "https://127.0.0.1:6379/",
    "https://[::1]/",
    "http://127.0.0.1:8000/hooks",
]


@pytest.fixture
def production(settings):
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = []
    return settings


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_private_link_local_or_metadata_url_is_refused(production, url):
    assert url_problem(url)


def test_a_name_that_resolves_to_loopback_is_refused_and_the_allow_list_opens_it(production):
    name = socket.gethostname()  # resolves to this machine
    if not socket.gethostbyname(name).startswith("127."):
        pytest.skip("this machine's name does not resolve to loopback")
    assert "private, loopback" in url_problem(f"https://{name}/hooks")
    production.OUTREACH_ALLOW_PRIVATE_TARGETS = ["127.0.0.0/8"]
    assert url_problem(f"https://{name}/hooks") == "" and url_problem("http://127.0.0.1:9/x") == ""
    assert "link-local" in url_problem("https://169.254.169.254/")  # never opened by a loopback entry


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["https://169.254.169.254/latest/meta-data/", "https://10.1.2.3/hooks",
                                 "http://127.0.0.1:6379/"])
def test_the_webhook_form_refuses_a_private_target(production, users, url):
    client = Client()
    client.force_login(users["admin"])
    response = client.post(reverse("webhook_list"), {"url": url, "secret_env": SECRET_ENV,
                                                     "event_types": ["contact.replied"], "active": "on"})
    assert response.status_code == 400
    assert "OUTREACH_ALLOW_PRIVATE_TARGETS" in response.content.decode() or "link-local" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_delivery_checks_its_target_again_and_logs_no_timing_for_a_refused_one(production, receiver,
                                                                                  django_user_model, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "whsec-test-0123456789")
    endpoint = WebhookEndpoint.objects.create(url=receiver.url, secret_env=SECRET_ENV,  # saved while allowed
                                              event_types=["contact.replied"])
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event_type="contact.replied", body="{}")

    outcome = webhook_deliver(delivery_id=delivery.pk)

    assert "refused target" in outcome and receiver.received == []
    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code is None and attempt.duration_ms == 0 and attempt.refused
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "root@outreach.test", "x" * 16))
    log = client.get(reverse("webhook_deliveries")).content.decode()
    assert "not sent: refused target" in log and " ms)" not in log


def test_the_guarded_session_connects_only_to_an_allowed_address(production, receiver):
    with guard(requests.Session()) as session:
        assert isinstance(session.get_adapter(receiver.url), GuardedAdapter)
        with pytest.raises(TargetRefused):
            session.post(receiver.url, data=b"{}", timeout=5)
        assert receiver.received == []
        production.OUTREACH_ALLOW_PRIVATE_TARGETS = ["127.0.0.1"]
        assert session.post(receiver.url, data=b"{}", timeout=5).status_code == 200
    assert len(receiver.received) == 1


def test_an_oauth_token_endpoint_on_a_private_address_gets_no_request(production):
    with OAuthServer() as server:
        config = OAuth2Config(token_url=server.token_url, client_id="c", client_secret="s",  # noqa: S106
                              refresh_token="r", timeout=5)
        with pytest.raises(TokenRefused, match="OUTREACH_ALLOW_PRIVATE_TARGETS"):
            access_token(config)
        assert (server.refreshes, server.refused, server.issued) == (0, 0, [])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("change", "words"), [
    ('host = "127.0.0.1"', 'host = "169.254.169.254"'),
    ("security = \"none\" }", 'security = "none" }\nca_file = "/etc/passwd"'),
])
def test_load_sequences_refuses_a_link_local_host_and_a_ca_file_outside_the_allowed_directories(tmp_path, change,
                                                                                                words):
    with pytest.raises(CommandError) as refused:
        call_command("load_sequences", write(tmp_path, "t.toml", GOOD.replace(change, words, 1)), stdout=StringIO(),
                     stderr=StringIO())
    assert "link-local" in str(refused.value) or "not under an allowed directory" in str(refused.value)
    assert not Mailbox.objects.exists()


def test_a_ca_file_must_be_a_readable_pem_under_an_allowed_directory(settings, tmp_path):
    settings.OUTREACH_CA_DIRS = [str(tmp_path)]
    (tmp_path / "notes.txt").write_text("not a certificate")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert "not under an allowed directory" in ca_file_problem("/etc/passwd")
    assert "no PEM certificate" in ca_file_problem(str(tmp_path / "notes.txt"))
    assert "no file" in ca_file_problem(str(tmp_path / "missing.pem"))
    assert ca_file_problem(str(tmp_path / "ca.pem")) == ""


def test_smtp_refuses_a_link_local_host_before_connecting(production):
    transport = SmtpTransport(SmtpConfig(host="169.254.169.254", port=25, security="starttls", timeout=2))
    with pytest.raises(MailboxRefused, match="link-local"):
        transport.send(sender="a@acme.test", recipient="b@example.com", message=b"Subject: x\r\n\r\nx\r\n")


def test_imap_connects_to_the_address_it_checked_not_to_a_name_that_now_resolves_elsewhere(production, monkeypatch):
    """DNS rebinding: the name resolves to an allowed address when it is checked, then to the metadata service.
    The socket opens to an address checked right before it (the getaddrinfo answers stand in for a DNS server
    whose answer changes between two lookups)."""
    from mailboxes.imap.connection import ImapConfig, ImapConnection
    from mailboxes.imap.errors import ImapAuthError

    answers = iter(["93.184.215.14"])  # a public address: allowed for a mail host

    def getaddrinfo(host, port, *args, **kwargs):
        address = next(answers, "169.254.169.254")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    config = ImapConfig(host="imap.rebind.test", port=993, username="u", password="p", security="tls", timeout=2)
    with pytest.raises(ImapAuthError, match="refused to connect to imap.rebind.test:993: .*link-local"):
        ImapConnection(config).open()
