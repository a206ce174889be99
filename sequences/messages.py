"""Preparation: render a job's step and build the MIME message. No transaction, no network."""

from __future__ import annotations

from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from urllib.parse import quote

from django.template import Context, Engine
from django.utils import timezone

from .models import SendJob
from .tokens import unsubscribe_url

# Plain-text mail: no HTML autoescaping; operators write the templates.
ENGINE = Engine(autoescape=False, debug=False)
# Long List-Unsubscribe URLs must not be folded into RFC 2047 encoded-words
# (mail clients would not find the URL); 998 is SMTP's own line limit.
POLICY = policy.SMTP.clone(max_line_length=998)


@dataclass(frozen=True)
class PreparedMessage:
    job_id: int
    sender: str
    recipient: str
    message_id: str
    data: bytes


def render(template: str, context: dict) -> str:
    return ENGINE.from_string(template).render(Context(context))


def message_prepare(*, job_id: int) -> PreparedMessage:
    """Render subject and body, thread it under earlier steps, add List-Unsubscribe."""
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence__mailbox", "step").get(pk=job_id)
    contact = job.enrollment.contact
    mailbox = job.enrollment.sequence.mailbox
    context = {
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "company": contact.company,
        "email": contact.email,
        "fields": contact.fields,
        **{k: v for k, v in contact.fields.items() if k.isidentifier()},
    }
    subject = " ".join(render(job.step.subject, context).split())
    body = render(job.step.body, context)

    msg = EmailMessage(policy=POLICY)
    msg["From"] = mailbox.from_header
    name = " ".join(p for p in (contact.first_name, contact.last_name) if p)
    msg["To"] = formataddr((name, contact.email)) if name else contact.email
    msg["Date"] = format_datetime(timezone.now())
    msg["Message-ID"] = job.message_id
    if job.step.thread:
        earlier = list(
            SendJob.objects.filter(
                enrollment=job.enrollment, state__in=(SendJob.State.SUBMITTED, SendJob.State.ACCEPTED),
                step__position__lt=job.step.position,
            ).order_by("step__position").values_list("message_id", "step__subject")
        )
        if earlier:
            msg["In-Reply-To"] = earlier[-1][0]
            msg["References"] = " ".join(mid for mid, _ in earlier)
            if not subject:
                subject = "Re: " + " ".join(render(earlier[0][1], context).split())
    msg["Subject"] = subject
    url = unsubscribe_url(job_id=job.pk, email=contact.email)
    mailto = f"mailto:{mailbox.address}?subject={quote('unsubscribe')}"
    # RFC 2369 + RFC 8058 one-click: mail clients POST "List-Unsubscribe=One-Click" to the URL.
    msg["List-Unsubscribe"] = f"<{url}>, <{mailto}>"
    msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg["X-Outreach-Job"] = str(job.pk)
    msg.set_content(body)
    return PreparedMessage(
        job_id=job.pk, sender=mailbox.address, recipient=contact.email, message_id=job.message_id,
        data=msg.as_bytes(),
    )
