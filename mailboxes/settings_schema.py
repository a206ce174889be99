"""A mailbox's settings, each described once: the TOML loader and its export (sequences.config), the mailbox form
(ui.mailbox_forms, ui.mailboxes) and the admin (inbound.admin) read this list.

The model stays the source of a setting's type, default and column size (`Setting.default`, `.max_length`,
`.blank` read the `Mailbox` field); a setting adds where it sits in a TOML `[[mailbox]]`, the kind of value it takes,
its bounds and their words, its label and help, and its section on the form and in the admin. A rule that spans
several settings (a window's two ends, a login in clear text, OAuth2's table) stays with the surface that checks it.

A new setting: its column in `mailboxes/models.py` (and the migration), one `Setting` here; its TOML key, export,
form field and admin field follow. The JSON API shows no mailbox settings.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db.models import NOT_PROVIDED

from .models import Auth, Mailbox, SaveToSent, Security


class Kind(StrEnum):
    """The kind of value a setting takes: how a file writes it, which input the form shows."""

    TEXT = "text"
    EMAIL = "email"
    URL = "url"
    SECRET_ENV = "secret_env"  # the name of an environment variable that holds a secret (mailboxes.secrets)
    CHOICE = "choice"
    INT = "int"
    PERCENT = "percent"  # a number, int or float
    BOOL = "bool"
    TIME = "time"  # "HH:MM"
    WEEKDAYS = "weekdays"  # "mon,tue,..."; empty: every day
    FOLDERS = "folders"  # a list of IMAP folder names
    DURATION = "duration"  # stored in seconds; written "90s", "15m", "3 days"
    DAYS = "days"  # stored in whole days; written "7d"


@dataclass(frozen=True)
class Bounds:
    """The values a number may take, and the words that refuse one outside them ({value}, {low}, {high})."""

    low: float
    high: float | None = None  # None: what the column holds (sequences.storable checks it)
    low_words: str = "must be {low} or more, got {value}"
    high_words: str = ""  # "": the low end's words
    above: bool = False  # the low end itself is out (a rate above 0)

    def problem(self, value: float) -> str | None:
        words = None
        if value < self.low or (self.above and value == self.low):
            words = self.low_words
        elif self.high is not None and value > self.high:
            words = self.high_words or self.low_words
        return words.format(value=value, low=self.low, high=self.high) if words else None


PORT = Bounds(1, 65535, "{value} is not a port (1-65535)")
RATE = Bounds(0, 100, "a percentage above 0 and at most 100, got {value}", above=True)
SAMPLE = Bounds(1)  # a guardrail's minimum sample
# The furthest ahead an ESP may be handed a message: a year, like every duration.
MAX_SCHEDULE_AHEAD_MINUTES = 365 * 24 * 60
# The most a ramp-up starts with or adds in a day: past any daily cap a mailbox keeps its reputation with.
MAX_RAMP = 1_000_000

SECURITY_WORDS = ((Security.NONE, "no encryption"), (Security.STARTTLS, "STARTTLS"), (Security.TLS, "TLS"))
SECRET_ENV_HELP = "instead of a stored password: an OUTREACH_SECRET_… variable"


@dataclass(frozen=True)
class Setting:
    """One setting an operator or a file sets on a mailbox."""

    field: str  # the Mailbox field
    toml: tuple[str, ...] | None  # its key path in a TOML [[mailbox]]; None: not set by a file
    kind: Kind
    group: str  # its section on the mailbox form and in the admin
    label: str
    help: str = ""
    bounds: Bounds | None = None
    pattern: str = ""  # a text value (when not empty) matches it whole
    pattern_words: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # value and words; () for the model field's
    required: bool = False  # a file gives it (in its table, when the file gives the table)
    on_form: bool = True  # False: set by a file or in the admin only
    exported_empty: bool = True  # False: an export leaves it out when empty (absent says the same)
    fallback: Any = NOT_PROVIDED  # the setting's default where the model's is not it

    @property
    def model_field(self):
        return Mailbox._meta.get_field(self.field)

    @property
    def default(self) -> Any:
        """The value a file or a form that leaves the setting out gives it (a fresh copy): the model's default, else
        its empty value ("" for text, None for a column that may be null)."""
        if self.fallback is not NOT_PROVIDED:
            return copy.deepcopy(self.fallback)
        return self.model_field.get_default()

    @property
    def max_length(self) -> int | None:
        return self.model_field.max_length

    @property
    def blank(self) -> bool:
        """Whether it may be empty (the model's word for it)."""
        return self.model_field.blank

    @property
    def values(self) -> tuple[str, ...]:
        """A choice's values."""
        return tuple(str(value) for value, _words in (self.choices or self.model_field.choices or ()))

    @property
    def section(self) -> str:
        """The TOML table it sits in ("" for a key of the [[mailbox]] itself)."""
        return self.toml[0] if self.toml and len(self.toml) > 1 else ""

    @property
    def key(self) -> str:
        """Its key in that table."""
        return self.toml[-1] if self.toml else ""


@dataclass(frozen=True)
class Section:
    """A table of a TOML [[mailbox]] (`[mailbox.smtp]`, ...)."""

    # True: a file without it, or with it empty, says nothing of its settings (a mailbox it creates takes the
    # model's defaults). False: a file without it reads as one that gives none of its keys (each its default).
    # Either way an existing mailbox changes only in the keys a file names.
    optional: bool = False
    exported: Callable[[Mailbox], bool] = lambda mailbox: True  # whether an export writes the table


SECTIONS: dict[str, Section] = {
    "smtp": Section(),
    "window": Section(),
    "ramp": Section(exported=lambda mailbox: mailbox.ramp_start is not None),
    "imap": Section(optional=True, exported=lambda mailbox: bool(mailbox.imap_host)),
    "transport": Section(optional=True, exported=lambda mailbox: mailbox.transport_kind != "smtp"),
    "oauth2": Section(exported=lambda mailbox: mailbox.auth == Auth.OAUTH2),  # read by sequences.config.auth
    "guardrail": Section(),
}

S, K = Setting, Kind
# In the order the form shows them, section by section; an export writes the TOML tables in this order too.
SETTINGS: tuple[Setting, ...] = (
    S("name", ("name",), K.TEXT, "Mailbox", "Name", "a short name: letters, digits, - and _",
      pattern=r"[-a-zA-Z0-9_]+", pattern_words="use letters, digits, '-' and '_' only", required=True),
    S("address", ("address",), K.EMAIL, "Mailbox", "Address", required=True),
    S("display_name", ("display_name",), K.TEXT, "Mailbox", "Display name"),
    S("auth", ("auth",), K.CHOICE, "Mailbox", "Log in with",
      choices=((Auth.PASSWORD, "Password"), (Auth.OAUTH2, "OAuth sign-in"))),
    S("is_drill_target", ("drill_target",), K.BOOL, "Mailbox", "Drill target",
      "only a mailbox marked as a drill target may be used by `manage.py drill`", on_form=False),

    S("smtp_host", ("smtp", "host"), K.TEXT, "Sending (SMTP)", "SMTP host",
      "empty: from the preset and the address's domain"),
    S("smtp_port", ("smtp", "port"), K.INT, "Sending (SMTP)", "SMTP port", bounds=PORT),
    S("smtp_security", ("smtp", "security"), K.CHOICE, "Sending (SMTP)", "SMTP security", choices=SECURITY_WORDS),
    S("smtp_username", ("smtp", "username"), K.TEXT, "Sending (SMTP)", "SMTP username",
      "empty: the address when a password is given; no login at all without one (a relay that needs none)"),
    S("smtp_password_env", ("smtp", "password_env"), K.SECRET_ENV, "Sending (SMTP)", "SMTP password variable",
      SECRET_ENV_HELP),

    S("imap_host", ("imap", "host"), K.TEXT, "Reading replies (IMAP)", "IMAP host",
      "empty: from the preset and the address's domain", required=True),
    S("imap_port", ("imap", "port"), K.INT, "Reading replies (IMAP)", "IMAP port", bounds=PORT),
    S("imap_security", ("imap", "security"), K.CHOICE, "Reading replies (IMAP)", "IMAP security",
      choices=SECURITY_WORDS),
    S("imap_username", ("imap", "username"), K.TEXT, "Reading replies (IMAP)", "IMAP username",
      "empty: the SMTP username"),
    S("imap_password_env", ("imap", "password_env"), K.SECRET_ENV, "Reading replies (IMAP)",
      "IMAP password variable", SECRET_ENV_HELP),
    # An [imap] table without folders, or a form with none ticked, reads INBOX (the model's [] means the same).
    S("imap_folders", ("imap", "folders"), K.FOLDERS, "Reading replies (IMAP)", "Folders to read",
      "the server's folders after a check", fallback=["INBOX"]),

    S("ca_file", ("ca_file",), K.TEXT, "TLS", "Private CA",
      "a PEM file on the server trusted for SMTP and IMAP TLS (empty: the system's)", exported_empty=False),

    S("dkim_selector", ("dkim_selector",), K.TEXT, "Domain authentication", "DKIM selector",
      "the selector your provider signs with, e.g. google or selector1; the check reads "
      "<selector>._domainkey.<your domain>", pattern=r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?",
      pattern_words="letters, digits, dots, '-' and '_' only", exported_empty=False),

    S("daily_cap", ("daily_cap",), K.INT, "Limits", "Daily cap", bounds=Bounds(0)),
    S("window_days", ("window", "days"), K.WEEKDAYS, "Limits", "Sending days", "none ticked: every day"),
    S("window_start", ("window", "start"), K.TIME, "Limits", "Sending window start"),
    S("window_end", ("window", "end"), K.TIME, "Limits", "Sending window end"),
    S("window_timezone", ("window", "timezone"), K.TEXT, "Limits", "Time zone",
      'an IANA zone such as Europe/Berlin, or "recipient"'),
    S("window_fallback_timezone", ("window", "fallback_timezone"), K.TEXT, "Limits", "Fallback time zone",
      'with time zone "recipient": the zone of a contact who has none', on_form=False),

    S("min_gap", ("min_gap",), K.DURATION, "Pace", "Minimum gap",
      'at least this long between two messages of this mailbox, e.g. "3m" (empty: no spacing); the next one '
      "leaves at the first dispatcher pass after the gap (every 10 s), so 30 s gives 30 to 40 s",
      exported_empty=False),
    S("gap_jitter", ("gap_jitter",), K.DURATION, "Pace", "Gap jitter",
      'a random extra up to this long on each gap, e.g. "1m"', exported_empty=False),
    S("ramp_start", ("ramp", "start"), K.INT, "Pace", "Ramp-up start",
      "messages on the first sending day (empty: the daily cap from day one)", required=True,
      bounds=Bounds(1, MAX_RAMP, "must be at least 1 (the first day's messages)", "must be at most {high}")),
    S("ramp_step", ("ramp", "step"), K.INT, "Pace", "Ramp-up step",
      "more messages each following day, up to the daily cap",
      bounds=Bounds(0, MAX_RAMP, "must be 0 or more", "must be at most {high}")),

    S("reply_view_max_age", ("reply_view_max_age",), K.DURATION, "Reply view", "Reply view max age",
      "follow-ups wait when replies were last read longer ago than this, e.g. \"10m\" (empty: the install's "
      "default)"),
    S("follow_ups_without_reply_view", ("follow_ups_without_reply_view",), K.BOOL, "Reply view",
      "Follow-ups without reply view", "send follow-ups from a mailbox that reads no replies (no IMAP)"),

    S("oauth2_provider", ("oauth2", "provider"), K.CHOICE, "OAuth sign-in", "OAuth provider",
      choices=(("", "—"), ("google", "Google"), ("microsoft", "Microsoft"), ("generic", "OAuth2 provider")),
      exported_empty=False),
    S("oauth2_client_id", ("oauth2", "client_id"), K.TEXT, "OAuth sign-in", "OAuth client ID",
      "empty: the install's for Google or Microsoft", exported_empty=False),
    # Where a "generic" provider's consent page and signed-in identity are: for the browser's sign-in only.
    S("oauth2_authorize_url", None, K.URL, "OAuth sign-in", "Authorization URL"),
    S("oauth2_token_url", ("oauth2", "token_url"), K.URL, "OAuth sign-in", "Token URL", exported_empty=False),
    S("oauth2_userinfo_url", None, K.URL, "OAuth sign-in", "Userinfo URL"),
    S("oauth2_scope", ("oauth2", "scope"), K.TEXT, "OAuth sign-in", "OAuth scope", "empty: the provider's",
      exported_empty=False),
    S("oauth2_client_secret_env", ("oauth2", "client_secret_env"), K.SECRET_ENV, "OAuth sign-in",
      "OAuth client secret variable", on_form=False, exported_empty=False),
    S("oauth2_refresh_token_env", ("oauth2", "refresh_token_env"), K.SECRET_ENV, "OAuth sign-in",
      "OAuth refresh token variable", on_form=False, exported_empty=False),

    S("save_to_sent", ("save_to_sent",), K.CHOICE, "Sent folder", "Copy to the Sent folder",
      "each message sent, marked read, in the IMAP Sent folder your mail program shows; automatic: not through "
      "Gmail (which keeps its own copy) or an ESP",
      choices=((SaveToSent.AUTO, "automatic"), (SaveToSent.ALWAYS, "always"), (SaveToSent.NEVER, "never"))),

    S("transport_kind", ("transport", "kind"), K.CHOICE, "ESP (anymail)", "Transport", on_form=False),
    S("esp_name", ("transport", "esp"), K.TEXT, "ESP (anymail)", "ESP", 'an anymail backend, e.g. "sendgrid"',
      on_form=False),
    S("esp_api_key_env", ("transport", "api_key_env"), K.SECRET_ENV, "ESP (anymail)", "ESP API key variable",
      on_form=False),
    S("esp_schedule_ahead_minutes", ("transport", "schedule_ahead_minutes"), K.INT, "ESP (anymail)",
      "Schedule ahead (minutes)", "hand a message to the ESP at most this long before its send time (0: at it)",
      bounds=Bounds(0, MAX_SCHEDULE_AHEAD_MINUTES, high_words="{value} is too far ahead: at most {high} minutes "
                    "(365 days)"), on_form=False),

    S("guardrail_window_days", ("guardrail", "window"), K.DAYS, "Deliverability guardrail", "Guardrail window",
      "the rates are counted over this many days", on_form=False),
    S("guardrail_bounce_rate", ("guardrail", "bounce_rate"), K.PERCENT, "Deliverability guardrail",
      "Hard-bounce rate", "percent of sends that pauses the mailbox", bounds=RATE, on_form=False),
    S("guardrail_bounce_min_sends", ("guardrail", "bounce_min_sends"), K.INT, "Deliverability guardrail",
      "Hard-bounce sample", "sends in the window before the rate counts", bounds=SAMPLE, on_form=False),
    S("guardrail_complaint_rate", ("guardrail", "complaint_rate"), K.PERCENT, "Deliverability guardrail",
      "Complaint rate", "percent of deliveries that pauses the mailbox", bounds=RATE, on_form=False),
    S("guardrail_complaint_min_deliveries", ("guardrail", "complaint_min_deliveries"), K.INT,
      "Deliverability guardrail", "Complaint sample", "deliveries in the window before the rate counts",
      bounds=SAMPLE, on_form=False),
    S("guardrail_refusal_rate", ("guardrail", "refusal_rate"), K.PERCENT, "Deliverability guardrail",
      "Refusal rate", "percent of sends refused for authentication or a blocklist that pauses the mailbox",
      bounds=RATE, on_form=False),
    S("guardrail_refusal_min_sends", ("guardrail", "refusal_min_sends"), K.INT, "Deliverability guardrail",
      "Refusal sample", "sends in the window before the rate counts", bounds=SAMPLE, on_form=False),
    S("guardrail_silence_seconds", ("guardrail", "silence_after_resume"), K.DURATION, "Deliverability guardrail",
      "Silence after a resume", "how long an operator's resume keeps the guardrail from pausing again",
      on_form=False),
)
del S, K

# Editable Mailbox columns that are no setting: state the system writes, counters, and what is set elsewhere.
NOT_SETTINGS = {
    "paused": "an operator's action with a record (manage.py pause, the mailboxes page), never configuration",
    "esp_api_url": "ignored: an ESP's API URL is fixed; a file that names it is refused (mailboxes.secrets)",
    "version": "the row's version, moved by the mailbox-health machine",
    "created_at": "when the row was made (database clock)",
    "next_handoff_at": "the pace's next hand-off, written by the final check",
    **dict.fromkeys(("blocked_at", "blocked_reason", "blocked_probes", "next_probe_at", "connect_failures"),
                    "the mailbox-health machine's state"),
    **dict.fromkeys(("guardrail_paused_at", "guardrail_reason", "guardrail_silenced_until"), "the guardrail's state"),
    **dict.fromkeys(("auth_checked_at", "auth_verdict", "auth_summary", "auth_failing_since"),
                    "the last domain-authentication check"),
    **dict.fromkeys(("sent_copy_failed_at", "sent_copy_error"), "the last copy to the Sent folder that failed"),
    **dict.fromkeys(("last_poll_at", "last_poll_ok_at", "last_poll_error", "poll_failures", "imap_login_refusals",
                     "imap_next_login_at", "imap_login_refused_at", "imap_login_refused_error",
                     "reply_view_blind_since"), "the poller's and the reply view's health"),
}


# Each reads SETTINGS when called, never a copy taken at import (a test adds a setting to see every surface take it).
def setting(field: str) -> Setting:
    return next(s for s in SETTINGS if s.field == field)


def in_toml() -> list[Setting]:
    return [s for s in SETTINGS if s.toml is not None]


def on_form() -> list[Setting]:
    return [s for s in SETTINGS if s.on_form]


def groups() -> dict[str, list[Setting]]:
    """Section title -> its settings, in order."""
    out: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        out.setdefault(s.group, []).append(s)
    return out
