"""The enrollment page shows, for each message that passed the final check, how long before its hand-off the
mailbox had read its replies: the answer to "you sent a follow-up after I replied" (real Dovecot and SMTP)."""

from __future__ import annotations

import re

import pytest

from sequences.models import TimelineEvent
from tests.races.test_reply_view import poll, run_due, step_one_sent

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_sent_step_says_how_fresh_the_reply_view_was(imap_mailbox, smtp_server, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("boss", "boss@example.com", "pw"))
    enrollment = step_one_sent(imap_mailbox, smtp_server, ["ada@example.com"])["ada@example.com"]
    assert poll(imap_mailbox).error == ""
    (step2,) = run_due()
    seconds = TimelineEvent.objects.get(job_id=step2, kind="job_authorized").data["replies_read_seconds_before"]

    page = client.get(f"/enrollments/{enrollment.pk}/").content.decode()
    evidence = re.findall(r'<span class="small muted hand-off">([^<]*)</span>', page)
    assert evidence == ["no reply view needed: a first message to this person",
                        f"replies read up to {seconds:.1f} s before the hand-off"]
