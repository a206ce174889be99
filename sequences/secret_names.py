"""A variable serves one purpose: a webhook's signing secret is never a mailbox's password, nor the reverse.

Both name OUTREACH_SECRET_* variables (mailboxes.secrets). Without this, whoever may name a mailbox's password
variable could name the variable that signs the install's webhooks and have it sent to a mail server of their
choosing (and a webhook could sign with a mailbox's password). Checked wherever a name is set: the mailbox form,
the webhook form, a configuration file and the Django admin.
"""

from __future__ import annotations

from mailboxes.models import Mailbox
from mailboxes.secrets import ENV_FIELDS

from .webhooks_out.models import WebhookEndpoint


def mailbox_name_problem(name: str) -> str:
    """Why a mailbox may not name variable *name* (a webhook signs with it), or ""."""
    if name and WebhookEndpoint.objects.filter(secret_env=name).exists():
        return f"{name} holds a webhook's signing secret: a mailbox names a variable of its own"
    return ""


def webhook_name_problem(name: str) -> str:
    """Why a webhook may not sign with variable *name* (a mailbox's secret), or ""."""
    if not name:
        return ""
    for field in ENV_FIELDS:
        if (used := Mailbox.objects.filter(**{field: name}).values_list("name", flat=True).first()) is not None:
            return f"{name} holds a secret of mailbox {used}: a webhook signs with a variable of its own"
    return ""
