"""Values never change silently: durations and integers from forms, the admin, TOML and commands are range-checked
with words before the write, never wrapped or a 500 (issue 34, item 4)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from api.models import ApiToken
from mailboxes.models import Mailbox
from sequences.admin import StepForm as AdminStepForm
from sequences.config.durations import parse_duration
from sequences.models import Sequence
from tests.factories import MailboxFactory, make_sequence
from tests.sequences.test_commands import GOOD, write

# 71582789 minutes are 4294967340 seconds: 44 once wrapped into 32 bits.
HUGE_WAIT = "71582789 minutes"
ESP = 'transport = { kind = "anymail", esp = "sendgrid", api_key_env = "OUTREACH_SECRET_K",'


@pytest.mark.parametrize("value", [HUGE_WAIT, "366 days", "53w", 31_622_400, "9" * 5000 + "s"])
def test_a_duration_over_a_year_is_refused_with_the_maximum(value):
    with pytest.raises(ValueError, match="at most 365 days"):
        parse_duration(value)
    assert parse_duration("365 days") == 365 * 86400  # the maximum itself is a wait


@pytest.mark.django_db
def test_the_step_editor_refuses_a_wait_over_the_maximum_and_keeps_the_step(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    step = sequence.steps.get(position=2)
    client = Client()
    client.force_login(users["operator"])
    response = client.post(reverse("step_edit", args=[step.pk]),
                           {"subject": "", "body": "Following up", "wait": HUGE_WAIT, "thread": "on"})
    assert response.status_code == 400
    assert "at most 365 days" in response.content.decode()
    step.refresh_from_db()
    assert step.wait_seconds == 3600


@pytest.mark.django_db
def test_the_admin_refuses_a_wait_over_the_maximum():
    form = AdminStepForm(data={"position": 2, "subject": "", "body": "Following up", "wait_seconds": 4294967340,
                               "thread": "on"})
    assert not form.is_valid()
    assert "at most 365 days" in " ".join(form.errors["wait_seconds"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("change", "expected", "words"), [
    ('wait = "3d"', f'wait = "{HUGE_WAIT}"', "at most 365 days"),
    ("daily_cap = 50", "daily_cap = 99999999999999999999", "at most 2147483647"),
    ("daily_cap = 50", "daily_cap = 4294967297", "at most 2147483647"),
    ("daily_cap = 50", f"daily_cap = 50\n{ESP} schedule_ahead_minutes = 4294967297 }}", "at most 2147483647"),
    ("daily_cap = 50", f"daily_cap = 50\n{ESP} schedule_ahead_minutes = 600000 }}", "at most 525600 minutes"),
])
def test_load_sequences_refuses_numbers_its_columns_cannot_hold(tmp_path, change, expected, words):
    out = StringIO()
    with pytest.raises(CommandError) as excinfo:
        call_command("load_sequences", write(tmp_path, "big.toml", GOOD.replace(change, expected)), stdout=out,
                     stderr=out)
    assert words in str(excinfo.value) and "nothing was changed" in str(excinfo.value)
    assert not Mailbox.objects.exists() and not Sequence.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("rate", ["4294967297", "2147483648", "1000001"])
def test_api_token_refuses_a_rate_over_the_maximum(rate):
    with pytest.raises(CommandError, match="at most 1000000"):
        call_command("api_token", "crm", "--role", "staff", "--rate", rate, stdout=StringIO(), stderr=StringIO())
    assert not ApiToken.objects.exists()
