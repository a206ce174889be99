"""Mailbox secrets entered in the browser, sealed at rest with keys that are not in the database.

A password, an OAuth2 client secret or a refresh token typed into the mailbox form is kept in a `*_sealed`
column as a Fernet token (AES-128-CBC and HMAC-SHA256, `cryptography`): the database, a dump or a backup
holds only ciphertext. The keys come from OUTREACH_ENCRYPTION_KEYS (comma-separated, newest first), or else
from the file `<OUTREACH_VAR_DIR>/encryption_keys` that `scripts/run` writes once per install (one key a line,
newest first, mode 0600). The first key seals; every key unseals (MultiFernet), so a new key can be put in
front, `manage.py rotate_encryption_key` re-seals every stored secret with it, and the old one can then go.

A model instance only ever holds the token: the plain secret exists only in the transport's config (whose
repr hides it), for the length of a connection. Nothing here logs or raises a secret or a key.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from .secrets import SecretRefused

KEYS_ENV = "OUTREACH_ENCRYPTION_KEYS"
KEYS_FILE_NAME = "encryption_keys"
# The Mailbox columns that hold a sealed secret, and what each is called on a page or in an error.
SEALED_FIELDS = {
    "smtp_password_sealed": "SMTP password",
    "imap_password_sealed": "IMAP password",
    "oauth2_client_secret_sealed": "OAuth2 client secret",
    "oauth2_refresh_token_sealed": "OAuth2 refresh token",
}

# Sealed columns of other apps' models (a booking source's signing key: meetings), registered by their app at
# start-up: model -> {column: what it is called}. `rotate_encryption_key` re-seals them with the mailboxes' own.
SEALED_ELSEWHERE: dict[type, dict[str, str]] = {}


def sealed_columns_register(model: type, columns: dict[str, str]) -> None:
    SEALED_ELSEWHERE[model] = dict(columns)


class SealedSecretUnreadable(SecretRefused):
    """A stored secret cannot be used here: no key is configured, or none of the keys opens it.

    The mailbox's problem, never the message's: the transport refuses as a whole, with `hint`."""

    def __init__(self, message: str, *, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class NoEncryptionKey(SealedSecretUnreadable):
    """Neither OUTREACH_ENCRYPTION_KEYS nor the key file gives a key."""


def keys_file() -> Path:
    return Path(settings.VAR_DIR) / KEYS_FILE_NAME


def configured_keys() -> list[bytes]:
    """The keys in force, newest first: the environment's, else the install's file; [] when there are none."""
    raw = os.environ.get(KEYS_ENV, "").strip()
    if raw:
        return [part.strip().encode() for part in raw.split(",") if part.strip()]
    path = keys_file()
    if path.is_file():
        return [line.strip().encode() for line in path.read_text().splitlines() if line.strip()]
    return []


def _fernet() -> MultiFernet:
    keys = configured_keys()
    if not keys:
        raise NoEncryptionKey(
            f"no encryption key for stored mailbox secrets: {KEYS_ENV} is not set and {keys_file()} does not exist",
            hint=f"set {KEYS_ENV} (a key from `Fernet.generate_key()`) in the environment of the web app and the "
                 "workers, or start with scripts/run, which generates one")
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError:
        raise NoEncryptionKey(f"{KEYS_ENV} holds something that is not a Fernet key (32 url-safe base64 bytes)",
                              hint="generate one with `Fernet.generate_key()`") from None


def encryption_ready() -> str:
    """Why a secret cannot be sealed now, in words; "" when it can."""
    try:
        _fernet()
    except NoEncryptionKey as exc:
        return f"{exc} — {exc.hint}"
    return ""


def seal(secret: str) -> str:
    """The secret as a token to store (NoEncryptionKey without a key)."""
    return _fernet().encrypt(secret.encode()).decode()


def unseal(token: str, *, what: str = "stored secret") -> str:
    """The secret a stored token holds; "" for no token. SealedSecretUnreadable when no key in force opens it."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SealedSecretUnreadable(
            f"the {what} cannot be decrypted with the keys in {KEYS_ENV} or {keys_file()}",
            hint="a key was removed before `manage.py rotate_encryption_key` re-sealed it: put the old key back "
                 "behind the new one and rotate, or enter the secret again") from None


def reseal(token: str) -> str:
    """The same secret sealed with the newest key (MultiFernet.rotate); InvalidToken when no key opens it."""
    return _fernet().rotate(token.encode()).decode()


def opens_with_newest(token: str) -> bool:
    """Whether the newest key alone opens the token (after a rotation, every token should)."""
    keys = configured_keys()
    try:
        Fernet(keys[0]).decrypt(token.encode())
    except (InvalidToken, IndexError, ValueError):
        return False
    return True
