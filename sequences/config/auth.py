"""`auth = "oauth2"` in a TOML [[mailbox]]: the offline checks of its `oauth2` table (read by `parse`)."""

from __future__ import annotations

from typing import Any

from mailboxes.oauth2 import PROVIDERS, provider_defaults, token_url_problem

from .validate import Reader

OAUTH2_KEYS = {"provider", "token_url", "client_id", "client_secret_env", "refresh_token_env", "scope"}


def parse_oauth2(reader: Reader, path: str, table: dict, out: dict[str, Any]) -> None:
    """`auth = "oauth2"` and its `oauth2 = { ... }` table: a known provider or a token endpoint, a client id,
    the variables that hold the secrets, and a username on each protocol (the SASL identity)."""
    out["auth"] = reader.get(table, path, "auth", str, "password")
    if out["auth"] not in ("password", "oauth2"):
        reader.error(f"{path}.auth", f'must be "password" or "oauth2", got {out["auth"]!r}', out["auth"])
    oauth = reader.get(table, path, "oauth2", dict, {})
    reader.unknown(oauth, f"{path}.oauth2", OAUTH2_KEYS)
    opath = f"{path}.oauth2"
    for key in sorted(OAUTH2_KEYS):
        out[f"oauth2_{key}"] = reader.get(oauth, opath, key, str, "")
    if out["auth"] != "oauth2":
        if oauth:
            reader.error(opath, 'OAuth2 settings need auth = "oauth2"')
        return
    provider = out["oauth2_provider"]
    preset = provider_defaults(provider) if provider else None
    if provider and preset is None:
        reader.error(
            f"{opath}.provider",
            f"unknown provider {provider!r} (known: {', '.join(sorted(PROVIDERS))}; "
            "or leave it out and give token_url and scope)",
            provider,
        )
    token_url = out["oauth2_token_url"] or (preset.token_url if preset else "")
    unknown_provider = bool(provider) and preset is None  # already reported: no second error about its URL
    if not unknown_provider and (problem := token_url_problem(token_url)):
        reader.error(f"{opath}.token_url", problem, out["oauth2_token_url"] or None)
    if not out["oauth2_client_id"]:
        reader.error(f"{opath}.client_id", 'is required with auth = "oauth2"')
    if not out["oauth2_refresh_token_env"]:
        reader.error(
            f"{opath}.refresh_token_env",
            'is required with auth = "oauth2": name the environment variable that holds the refresh token',
        )
    for protocol in ("smtp", "imap"):
        section = table.get(protocol)
        if not isinstance(section, dict):
            continue
        if section.get("password_env"):
            reader.error(
                f"{path}.{protocol}.password_env",
                'not used with auth = "oauth2" (the access token is the password): remove it',
            )
        if not section.get("username") and (protocol == "imap" or out.get("transport_kind", "smtp") == "smtp"):
            reader.error(
                f"{path}.{protocol}.username",
                'is required with auth = "oauth2": the account the token belongs to (usually the address)',
            )
