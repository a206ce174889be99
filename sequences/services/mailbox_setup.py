"""Mailboxes added and changed from the operator pages: the row, its sealed secrets, the operator log, the block.

The form's connection check runs before, outside any transaction (network I/O); what it found comes in as
words. A mailbox saved with a failing check ("save anyway") is blocked in the same transaction, so no send
can use it before a probe or an operator's check passes. Nothing a worker or the watcher holds needs a
restart: the worker builds its transport from the row at each send, the watcher reads the list again within
its refresh interval. A change of what the reply view reads (IMAP or not, its folders, its max age, sending
follow-ups without it) makes the follow-ups it held due at once, each back through the final check
(`mailbox_health.held_release`). The operator log names the fields and the secrets replaced, never a value of a secret.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from db.clock import db_now
from mailboxes.bound import bind
from mailboxes.models import Auth, Mailbox
from mailboxes.sealed import SEALED_FIELDS

from ..locks import mailbox_lock
from ..reasons import Reason
from ..states import HEALTH_BLOCKED, HEALTH_OK, mailbox_health, mailbox_health_move
from .common import T, operator_log
from .mailbox_health import held_release, probe_interval

# The settings the reply view reads (sequences.reply_view): a change of one may lift its hold on follow-ups.
VIEW_FIELDS = frozenset({"imap_host", "imap_folders", "reply_view_max_age", "follow_ups_without_reply_view"})


def mailbox_save(*, mailbox_id: int | None, fields: dict[str, Any], sealed: dict[str, str], actor: str,
                 check: str, check_passed: bool, connected: tuple[str, ...] = ()) -> int:
    """Create (mailbox_id None) or change a mailbox; one durable transaction. `sealed`: column -> Fernet token;
    `fields` carries `secret_endpoints`, where each secret was entered for (mailboxes.bound)."""
    unknown = set(sealed) - set(SEALED_FIELDS)
    assert not unknown, f"not a sealed column: {unknown}"
    with transaction.atomic(durable=True):
        released = 0  # held follow-ups due again
        if mailbox_id is None:
            mailbox = Mailbox.objects.create(**fields, **sealed)
            action, changed = "mailbox_added", sorted(name for name, value in fields.items()
                                                      if name != "secret_endpoints" and value not in ("", None, {}))
        else:
            mailbox = mailbox_lock(mailbox_id=mailbox_id)
            action = "mailbox_changed"
            changed = sorted(name for name, value in fields.items()
                             if name != "secret_endpoints" and getattr(mailbox, name) != value)
            # New settings get their own first login: a refusal of the old password does not hold the new one back.
            Mailbox.objects.filter(pk=mailbox.pk).update(**fields, **sealed, imap_login_refusals=0,
                                                         imap_next_login_at=None)
            mailbox.refresh_from_db()
            if VIEW_FIELDS & set(changed):
                released = held_release(mailbox=mailbox, reason=Reason.MAILBOX_CHANGED)
        if not check_passed and mailbox_health(mailbox) == HEALTH_OK:
            mailbox_health_move(mailbox=mailbox, to=HEALTH_BLOCKED, reason=f"saved with a failing check: {check}",
                                next_probe_at=db_now() + probe_interval(0), actor=actor)
        operator_log(actor=actor, action=action, target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk,
                     result={"fields": changed, "secrets_replaced": [SEALED_FIELDS[c] for c in sorted(sealed)],
                             "check": check[:500], "connected": list(connected), "saved_anyway": not check_passed}
                     | ({"released": released} if released else {}))
        return mailbox.pk


def mailbox_form_checked(*, mailbox_id: int | None, name: str, actor: str, check: str, passed: bool,
                         connected: tuple[str, ...] = ()) -> None:
    """Record an operator's connection check of the form's settings (saved or not yet), with the servers it
    connected to; one short transaction."""
    with transaction.atomic(durable=True):
        operator_log(actor=actor, action="mailbox_form_check", target=f"mailbox {name}", kind=T.MAILBOX,
                     target_id=mailbox_id, result={"outcome": "passed" if passed else "failed", "detail": check[:500],
                                                   "connected": list(connected)})


def mailbox_signed_in(*, mailbox_id: int, refresh_sealed: str, identity: str, actor: str, client_id: str = "",
                      client_secret_sealed: str = "") -> None:
    """An OAuth sign-in gave a refresh token: store it sealed, log in as the account that consented from now on,
    and record who signed it in; one durable transaction. (The caller then probes a blocked mailbox.)"""
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        fields: dict[str, Any] = {"auth": Auth.OAUTH2, "oauth2_refresh_token_sealed": refresh_sealed,
                                  "oauth2_refresh_token_env": "", "address": identity, "smtp_username": identity,
                                  "imap_login_refusals": 0, "imap_next_login_at": None}
        if mailbox.imap_host:
            fields["imap_username"] = identity
        if client_id:
            fields.update(oauth2_client_id=client_id, oauth2_client_secret_sealed=client_secret_sealed,
                          oauth2_client_secret_env="")
        for name, value in fields.items():
            setattr(mailbox, name, value)
        for which in ("oauth2_refresh_token", "oauth2_client_secret") if client_id else ("oauth2_refresh_token",):
            bind(mailbox, which)  # given for these endpoints by the sign-in
        Mailbox.objects.filter(pk=mailbox.pk).update(**fields, secret_endpoints=mailbox.secret_endpoints)
        operator_log(actor=actor, action="mailbox_signed_in", target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk, result={"identity": identity, "provider": mailbox.oauth2_provider})
