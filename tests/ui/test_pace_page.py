"""The Mailboxes page says a mailbox's pace: today's limit on its ramp, the day it reaches the cap, the gap."""

from __future__ import annotations

from datetime import timedelta

import pytest

from db.clock import db_now
from sequences import daily_cap
from sequences.models import DailySendCount
from tests.factories import MailboxFactory

pytestmark = pytest.mark.django_db


def test_the_mailboxes_page_says_todays_ramp_limit_the_day_it_reaches_the_cap_and_the_gap(client, users):
    mailbox = MailboxFactory(name="ramping", daily_cap=50, ramp_start=10, ramp_step=5, min_gap=180, gap_jitter=60)
    today = daily_cap.cap_day(mailbox, db_now())
    DailySendCount.objects.create(mailbox=mailbox, day=today - timedelta(days=2), sent=10)  # its first day
    DailySendCount.objects.create(mailbox=mailbox, day=today, sent=7)
    client.force_login(users["operator"])
    page = client.get("/mailboxes/").content.decode()
    full = today + timedelta(days=6)  # 10 on day one, +5 a day: 50 on the first day + 8 days
    assert (f"today 7 of 20 sent (ramping up by 5 a day: the full 50 from {full:%a %-d %b}); "
            "messages at least 3 minutes plus up to 1 minute apart") in page
