"""The preview and "Send test to me" show and send the same A/B variant, and a threaded follow-up's preview
answers with "Re:" and the subject of the variant the person got at step 1, as the real send does.

Real database (both), the Django test client, a real SMTP server on loopback.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from sequences.models import SendJob, Step, StepVariant
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.variants import variant_save
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def _setup(users, smtp_port: int):
    """Two steps; step 1 has no text of its own and sends variants A and B (1:1); step 2 threads under it. Six
    people enrolled: the split gives each of them one of A and B."""
    operator = users["operator"]
    operator.email = "me@operator.test"
    operator.save(update_fields=["email"])
    sequence = make_sequence(mailbox=MailboxFactory(smtp_port=smtp_port), steps=2, name="Split")
    step = sequence.steps.get(position=1)
    for name in ("A", "B"):
        variant_save(step_id=step.pk, variant_id=None, name=name, subject=f"Subject {name} for {{{{ first_name }}}}",
                     body=f"Hi {{{{ first_name }}}}, this is text {name}.", weight=1, actor="op")
    Step.objects.filter(pk=step.pk).update(body="")  # the variants are the step's only texts
    people = [enroll(sequence, f"p{n}@example.com", first_name=f"Person{n}") for n in range(6)]
    got = {e.contact.email: SendJob.objects.get(enrollment=e).variant.name for e in people}
    assert set(got.values()) == {"A", "B"}, got
    client = Client()
    client.force_login(operator)
    return client, sequence, step, got


def _preview(client, step, email: str, variant: StepVariant | None = None):
    query = {"contact": email} | ({"variant": variant.pk} if variant is not None else {})
    return client.get(f"{reverse('step_preview', args=[step.pk])}?{urlencode(query)}")


def _send_test_form(page: str) -> dict[str, str]:
    """The fields the page's "Send test to me" form posts, as the browser would send them."""
    form = re.search(r'<form method="post" action="[^"]*/send-test/".*?</form>', page, re.S)
    assert form, "the page offers Send test to me"
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form.group(0)))


def test_the_test_sent_is_the_variant_previewed(users, smtp_server):
    client, sequence, step, got = _setup(users, smtp_server.port)
    email = next(e for e, name in got.items() if name == "A")
    b = step.variants.get(name="B")

    # The operator picks variant B for a person the split gives A: the page shows B, the test is B.
    response = _preview(client, step, email, variant=b)
    preview = response.context["preview"]
    assert preview.ok and preview.subject == f"Subject B for Person{email[1]}"
    client.post(reverse("step_send_test", args=[step.pk]), _send_test_form(response.content.decode()))
    assert smtp_server.wait_for(1, timeout=10)
    message = smtp_server.received[-1].message
    assert message["Subject"] == f"[Test] {preview.subject}"
    assert message.get_payload(decode=True).decode().strip() == preview.body.strip() == \
        f"Hi Person{email[1]}, this is text B."
    assert preview.variant == b and "(variant B)" in message["X-Outreach-Test"]

    # Without a pick, the page shows the variant the person gets, and the test sends that one.
    other = next(e for e, name in got.items() if name == "B")
    response = _preview(client, step, other)
    preview = response.context["preview"]
    assert preview.variant.name == "B" and preview.subject == f"Subject B for Person{other[1]}"
    assert "the one p" in response.content.decode()  # "B — the one … gets"
    client.post(reverse("step_send_test", args=[step.pk]), _send_test_form(response.content.decode()))
    assert smtp_server.wait_for(2, timeout=10)
    assert smtp_server.received[-1].message["Subject"] == f"[Test] Subject B for Person{other[1]}"
    assert not SendJob.objects.filter(state__in=(S.SUBMITTED, S.ACCEPTED)).exists(), "a test is no send"


def test_a_follow_ups_re_subject_is_that_of_the_variant_the_person_got_at_step_1(users, smtp_server):
    client, sequence, step, got = _setup(users, smtp_server.port)
    email = next(e for e, name in got.items() if name == "B")
    follow_up = sequence.steps.get(position=2)
    expected = f"Re: Subject B for Person{email[1]}"

    # Before step 1 left: the variant the person will get.
    assert _preview(client, follow_up, email).context["preview"].subject == expected
    # After the real sends, step 1 and then step 2 (no wait): the preview says what was really sent.
    for _ in range(2):
        for job_id in dispatch_due():
            assert send_job_process(job_id=job_id, worker_id="w").state == S.SUBMITTED
    sent = {r.message["X-Outreach-Job"]: r.message["Subject"] for r in smtp_server.received}
    job = SendJob.objects.get(enrollment__contact__email=email, step=follow_up)
    assert sent[str(job.pk)] == expected
    assert _preview(client, follow_up, email).context["preview"].subject == expected
