"""The operator's view of a mailbox that fails as a whole: banner, status, log, and "Check connection"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from proving.harness.smtp import SmtpServer
from sequences.models import SendJob
from tests.factories import MailboxFactory
from tests.mailboxes.checking import submit
from tests.mailboxes.test_mailbox_health import RIGHT, SECRET_ENV, WRONG, enroll_many, run_due

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


@pytest.fixture
def auth_server():
    with SmtpServer(credentials={"sales": RIGHT}) as server:
        yield server


def test_the_pages_say_the_mailbox_is_blocked_and_check_connection_unblocks_it(auth_server, monkeypatch, client,
                                                                              users):
    monkeypatch.setenv(SECRET_ENV, WRONG)
    mailbox = MailboxFactory(name="sales", smtp_port=auth_server.port, smtp_username="sales",
                             smtp_password_env=SECRET_ENV)
    enroll_many(mailbox, 2)
    run_due()
    client.force_login(users["operator"])

    page = client.get(reverse("dashboard")).content.decode()
    assert "Sending from <strong>sales</strong> is blocked since" in page and "535" in page
    page = client.get(reverse("mailbox_list")).content.decode()
    assert "blocked</span>" in page and f"check the password in {SECRET_ENV}" in page and WRONG not in page
    log = client.get(reverse("operator_log")).content.decode()
    assert "mailbox_blocked" in log

    monkeypatch.setenv(SECRET_ENV, RIGHT)
    page = submit(client, reverse("mailbox_check", args=[mailbox.pk]), {}).content.decode()  # a worker checks
    assert "sales: Sending works again; 2 held message(s) due again" in page
    mailbox.refresh_from_db()
    assert mailbox.sending_status == "active"
    assert set(run_due()) == {S.SUBMITTED}


@pytest.mark.parametrize("role", ["anonymous", "staff", "operator", "admin"])
def test_check_connection_is_an_operators_button(role, users, client):
    from tests.ui.test_permissions import OPERATE_POST, TABLE

    mailbox = MailboxFactory(name="sales")
    expected = dict((name, rules) for name, _, rules in TABLE)["mailbox_check"][role]
    assert expected == OPERATE_POST[role]
    if role != "anonymous":
        client.force_login(users[role])
    url = reverse("mailbox_check", args=[mailbox.pk])
    assert (client.get(url).status_code, client.post(url).status_code) == tuple(
        302 if e == "login" else e for e in expected)
