"""`manage.py rotate_encryption_key`: re-seal every stored mailbox secret (and every other sealed secret, such as a
booking source's signing key: mailboxes.sealed.SEALED_ELSEWHERE) with the newest key.

Put the new key first in OUTREACH_ENCRYPTION_KEYS (or let `--generate` put a new one first in the install's
key file), keep the old ones behind it, run this; once it says every secret opens with the newest key, the
old keys can be removed (`--generate --drop-old` does that in the file). Prints counts, never a secret or a key.
"""

from __future__ import annotations

import os

from cryptography.fernet import Fernet, InvalidToken
from django.core.management.base import BaseCommand, CommandError

from mailboxes.models import Mailbox
from mailboxes.sealed import (
    KEYS_ENV,
    SEALED_ELSEWHERE,
    SEALED_FIELDS,
    SealedSecretUnreadable,
    configured_keys,
    keys_file,
    opens_with_newest,
    reseal,
)


class Command(BaseCommand):
    help = ("Re-encrypt every mailbox secret (and booking webhook signing key) stored in the database with the "
            "newest encryption key (the first of "
            f"{KEYS_ENV}, or of the install's key file). After it, the older keys can be removed.")

    def add_arguments(self, parser):
        parser.add_argument("--generate", action="store_true",
                            help="put a new key first in the install's key file (not with OUTREACH_ENCRYPTION_KEYS)")
        parser.add_argument("--drop-old", action="store_true",
                            help="with --generate: remove the older keys from the file once every secret is re-sealed")

    def handle(self, *args, generate, drop_old, **options):
        if drop_old and not generate:
            raise CommandError("--drop-old goes with --generate (keys in the environment are yours to remove)")
        if generate:
            if os.environ.get(KEYS_ENV, "").strip():
                raise CommandError(f"{KEYS_ENV} is set: put the new key first in it yourself, then run this again")
            _write_keys([Fernet.generate_key(), *configured_keys()])
            self.stdout.write(f"a new key is first in {keys_file()}")
        if not configured_keys():
            raise CommandError(f"no encryption key: set {KEYS_ENV} or create {keys_file()} (scripts/run does)")
        resealed = unreadable = left = 0
        # The mailboxes' secrets, then those other apps keep sealed the same way (a booking source's key).
        for model, fields in [(Mailbox, SEALED_FIELDS), *SEALED_ELSEWHERE.items()]:
            for row in model.objects.order_by("pk"):
                for field in fields:
                    token = getattr(row, field)
                    if not token:
                        continue
                    try:
                        new = reseal(token)
                    except (InvalidToken, SealedSecretUnreadable):
                        unreadable += 1
                        self.stderr.write(f"{model._meta.verbose_name} {row}: the {fields[field]} opens with none of "
                                          "the keys")
                        continue
                    # Compare-and-set: a secret replaced on the form meanwhile is already sealed with the newest key.
                    resealed += model.objects.filter(pk=row.pk, **{field: token}).update(**{field: new})
            left += sum(1 for row in model.objects.all() for f in fields
                        if getattr(row, f) and not opens_with_newest(getattr(row, f)))
        self.stdout.write(f"{resealed} stored secret{'s' if resealed != 1 else ''} re-encrypted with the newest key")
        if unreadable or left:
            raise CommandError(f"{left} stored secret(s) do not open with the newest key: keep the old keys")
        if drop_old:
            _write_keys(configured_keys()[:1])
            self.stdout.write(f"older keys removed from {keys_file()}")
        self.stdout.write("every stored secret opens with the newest key: the older keys can be removed")


def _write_keys(keys: list[bytes]) -> None:
    """The key file, replaced whole (mode 0600): a crash leaves the old file or the new one, never half."""
    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(key.decode() + "\n" for key in keys))
    os.replace(tmp, path)
