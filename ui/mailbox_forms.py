"""The mailbox form of the operator UI: presets, labelled fields, secrets that are never shown again.

A password typed here is sealed (mailboxes.sealed) as soon as the form is read; the page never renders it back,
only "set — type to replace". Empty means keep the stored one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import available_timezones

from django import forms

from mailboxes import settings_schema
from mailboxes.bound import WORDS, bound_problem, endpoint
from mailboxes.models import MAILBOX_NAME_TAKEN, Auth, Mailbox, SaveToSent
from mailboxes.oauth2 import token_url_problem
from mailboxes.secrets import validate_secret_env_name
from mailboxes.settings_schema import Kind, Setting
from mailboxes.tls import mailbox_connection_problems
from sequences.config.durations import duration_text, parse_duration
from sequences.secret_names import mailbox_name_problem
from sequences.storable import INT_MAX


@dataclass(frozen=True)
class Preset:
    label: str
    smtp: tuple[str, int, str]  # host ("{domain}" for the address's domain), port, security
    imap: tuple[str, int, str]
    auth: str
    provider: str = ""


PRESETS = {
    "google": Preset("Google Workspace", ("smtp.gmail.com", 587, "starttls"), ("imap.gmail.com", 993, "tls"),
                     Auth.OAUTH2, "google"),
    "microsoft": Preset("Microsoft 365", ("smtp.office365.com", 587, "starttls"),
                        ("outlook.office365.com", 993, "tls"), Auth.OAUTH2, "microsoft"),
    "other": Preset("Other (IMAP/SMTP)", ("smtp.{domain}", 587, "starttls"), ("imap.{domain}", 993, "tls"),
                    Auth.PASSWORD),
}
# The secrets of the form: field name -> (sealed column, label).
SECRET_FIELDS = {
    "smtp_password": ("smtp_password_sealed", "SMTP password"),
    "imap_password": ("imap_password_sealed", "IMAP password"),
    "oauth2_client_secret": ("oauth2_client_secret_sealed", "OAuth2 client secret"),
}
SECRET_OF = {column: field for field, (column, _label) in SECRET_FIELDS.items()}
# Set by admins only: what names a secret of the install, or where a secret is sent.
ADMIN_FIELDS = ("smtp_password_env", "imap_password_env", "oauth2_authorize_url", "oauth2_token_url",
                "oauth2_userinfo_url")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Fields that one way of logging in uses and the other does not: the page hides them while the other is chosen
# (static/mailbox_form.js; without JavaScript every field shows, and the server ignores those of the other way).
LOGIN_ONLY = {
    **dict.fromkeys(("smtp_password", "smtp_password_env", "imap_password", "imap_password_env"), Auth.PASSWORD),
    **dict.fromkeys(("oauth2_provider", "oauth2_client_id", "oauth2_client_secret", "oauth2_authorize_url",
                     "oauth2_token_url", "oauth2_userinfo_url", "oauth2_scope"), Auth.OAUTH2),
}
# The fields of an SMTP login: hidden while "No login to send" is ticked (static/mailbox_form.js).
SMTP_LOGIN = ("smtp_username", "smtp_password", "smtp_password_env")
# Short fields: two share a row on a phone (the page's stylesheet, .field.short).
SHORT = ("smtp_port", "smtp_security", "imap_port", "imap_security", "window_start", "window_end", "min_gap",
         "gap_jitter", "ramp_start", "ramp_step")
# Settings the model needs that the form may leave empty: clean() fills them (the preset's host, the default).
FILLED_BY_PRESET = ("smtp_host",)
FILLED_BY_DEFAULT = ("ramp_step", "save_to_sent")
# The form's fields that are no setting, each shown before (or after) the setting named.
BEFORE = {"smtp_username": ("smtp_no_login",), "smtp_password_env": ("smtp_password",), "imap_host": ("imap_enabled",),
          "imap_password_env": ("imap_password",), "oauth2_authorize_url": ("oauth2_client_secret",)}
AFTER = {"imap_folders": ("imap_folders_more",)}
# A section the page shows on its own, below the others, with the last copy that failed (ui/mailbox_form.html).
OWN_PLACE = ("Sent folder",)


def setting_names() -> list[str]:
    """The Mailbox columns the form writes (besides the sealed secrets): the settings on the form."""
    return [s.field for s in settings_schema.on_form()]


def form_groups() -> list[tuple[str, list[str]]]:
    """The form's sections in order, each with its fields: its settings (mailboxes.settings_schema) and the fields
    that are no setting beside them."""
    out = []
    for title, group in settings_schema.groups().items():
        names = [name for s in group if s.on_form for name in (*BEFORE.get(s.field, ()), s.field,
                                                                *AFTER.get(s.field, ()))]
        if names and title not in OWN_PLACE:
            out.append((title, names))
    return out


class DurationField(forms.CharField):
    """A duration in words ("90s", "15m", "3 days"), cleaned to seconds; empty: the setting's default."""

    def __init__(self, *, default: int | None, **kwargs):
        super().__init__(max_length=40, **kwargs)
        self.default = default

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):  # seconds, from the mailbox
            return "" if value == self.default else duration_text(value)
        return value

    def clean(self, value) -> int | None:
        text = super().clean(value)
        if not text:
            return self.default
        try:
            return parse_duration(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class WeekdaysField(forms.MultipleChoiceField):
    """Sending days as boxes to tick, cleaned to the column's "mon,tue" (none ticked: every day)."""

    widget = forms.CheckboxSelectMultiple

    def __init__(self, **kwargs):
        super().__init__(choices=[(d, d.capitalize()) for d in DAYS], **kwargs)

    def prepare_value(self, value):
        return [d for d in value.split(",") if d] if isinstance(value, str) else value

    def clean(self, value) -> str:
        chosen = super().clean(value)
        return ",".join(d for d in DAYS if d in chosen)


def _number(setting: Setting, field: type[forms.Field], common: dict[str, Any]) -> forms.Field:
    bounds = setting.bounds
    return field(min_value=bounds.low if bounds else None,
                 max_value=bounds.high if bounds and bounds.high is not None else INT_MAX, **common)


def _text(setting: Setting, common: dict[str, Any]) -> forms.Field:
    if setting.pattern:
        return forms.RegexField(regex=rf"\A(?:{setting.pattern})\Z", max_length=setting.max_length,
                                error_messages={"invalid": setting.pattern_words}, **common)
    return forms.CharField(max_length=setting.max_length, **common)


# A setting's kind -> its form field (with the setting's label, help and whether it may be left empty).
FIELD_OF: dict[Kind, Callable[[Setting, dict[str, Any]], forms.Field]] = {
    Kind.TEXT: _text,
    Kind.EMAIL: lambda s, common: forms.EmailField(**common),
    Kind.URL: lambda s, common: forms.URLField(max_length=s.max_length, assume_scheme="https", **common),
    Kind.SECRET_ENV: lambda s, common: forms.CharField(max_length=s.max_length, validators=[validate_secret_env_name],
                                                       **common),
    Kind.CHOICE: lambda s, common: forms.ChoiceField(choices=s.choices or s.model_field.choices, **common),
    Kind.INT: lambda s, common: _number(s, forms.IntegerField, common),
    Kind.PERCENT: lambda s, common: _number(s, forms.FloatField, common),
    Kind.BOOL: lambda s, common: forms.BooleanField(**common),
    Kind.TIME: lambda s, common: forms.TimeField(widget=forms.TimeInput(attrs={"type": "time"}), **common),
    Kind.WEEKDAYS: lambda s, common: WeekdaysField(**common),
    Kind.FOLDERS: lambda s, common: forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, **common),
    Kind.DURATION: lambda s, common: DurationField(default=s.default, **common),
    Kind.DAYS: lambda s, common: forms.IntegerField(min_value=1, max_value=365, **common),
}


def setting_field(setting: Setting) -> forms.Field:
    """The form field of a setting: its kind's input with its label, help, bounds and column size."""
    required = (not setting.blank and setting.kind not in (Kind.BOOL, Kind.DURATION)
                and setting.field not in (*FILLED_BY_PRESET, *FILLED_BY_DEFAULT))
    common: dict[str, Any] = {"label": setting.label, "help_text": setting.help, "required": required}
    if required or setting.kind is Kind.CHOICE:
        common["initial"] = setting.default  # what a new mailbox starts from
    return FIELD_OF[setting.kind](setting, common)


def _secret_input(label: str) -> forms.CharField:
    return forms.CharField(required=False, strip=False, max_length=4096, label=label,
                           widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}))


class MailboxForm(forms.Form):
    """The settings on the form (mailboxes.settings_schema, added to each form as it is made), and the fields that
    are no setting: the preset, the secrets, "No login to send", "Read replies over IMAP", more folders."""

    no_login = False  # clean(): the mailbox sends without an SMTP login ("No login to send")

    preset = forms.ChoiceField(choices=[(k, p.label) for k, p in PRESETS.items()], label="Provider",
                               widget=forms.HiddenInput)
    smtp_no_login = forms.BooleanField(
        required=False, label="No login to send",
        help_text="the SMTP server takes mail from this host without a login: a local relay (Postfix), a smarthost, "
                  "the local run's capture server")
    smtp_password = _secret_input("SMTP password")
    imap_enabled = forms.BooleanField(required=False, initial=True, label="Read replies over IMAP")
    imap_password = _secret_input("IMAP password")
    imap_folders_more = forms.CharField(max_length=500, required=False, label="Other folders to read",
                                        help_text="comma separated, e.g. INBOX, Bounces")
    oauth2_client_secret = _secret_input("OAuth client secret")

    def __init__(self, *args, mailbox: Mailbox | None = None, listed: list[str] | None = None,
                 pending: dict[str, tuple[str, str]] | None = None, admin: bool = False, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)
        for setting in settings_schema.on_form():
            self.fields[setting.field] = setting_field(setting)
        self.mailbox = mailbox
        # Sealed secrets typed on an earlier round of this form, not yet saved: column -> (token, typed for).
        self.pending = pending or {}
        if not admin:
            for name in ADMIN_FIELDS:  # the stored value stays; the browser's is ignored
                self.fields[name].disabled = True
                self.fields[name].initial = getattr(mailbox, name) if mailbox is not None else ""
                self.fields[name].help_text = "set by an admin"
        current = list(mailbox.imap_folders) if mailbox else []
        chosen = list(self.data.getlist("imap_folders")) if self.is_bound else []
        names = list(dict.fromkeys([*(listed or []), *current, *chosen, "INBOX"]))
        self.fields["imap_folders"].choices = [(n, n) for n in names]
        for name, login in LOGIN_ONLY.items():
            self.fields[name].login = login  # the template marks the field's block with it (data-login)
        for name in SHORT:
            self.fields[name].short = True
        for name in SMTP_LOGIN:
            self.fields[name].smtp_login = True
        for field, (_column, label) in SECRET_FIELDS.items():
            if self.secret_is_set(field):
                self.fields[field].label = f"{label} (set — replace)"
            self.fields[field].help_text = self.help_for(field)

    def secret_is_set(self, field: str) -> bool:
        column = SECRET_FIELDS[field][0]
        return bool(self.pending.get(column) or (self.mailbox is not None and getattr(self.mailbox, column)))

    def help_for(self, field: str) -> str:
        """Next to a secret: where it may go, and that changing it asks for the secret again."""
        if self.mailbox is None or not getattr(self.mailbox, SECRET_FIELDS[field][0]):
            return "stored encrypted; it goes only to the server it is entered for"
        entered_for = (self.mailbox.secret_endpoints or {}).get(field) or endpoint(self.mailbox, field)
        return (f"stored encrypted for {entered_for}; leave empty to keep it. Changing that server, port, security "
                "or username asks for it again")

    def clean_window_timezone(self) -> str:
        zone = self.cleaned_data["window_timezone"].strip()
        if zone != "recipient" and zone not in available_timezones():
            raise forms.ValidationError(f"{zone!r} is not an IANA time zone (e.g. Europe/Berlin) or \"recipient\"")
        return zone

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        itself = self.mailbox.pk if self.mailbox else None
        if Mailbox.objects.filter(name=name).exclude(pk=itself).exists():  # the request's workspace's
            raise forms.ValidationError(f"a mailbox named {name} exists already")
        # Another workspace's: names are the install's (mailboxes.models), and the words say no more than that.
        if Mailbox._base_manager.filter(name=name).exclude(pk=itself).exists():
            raise forms.ValidationError(MAILBOX_NAME_TAKEN)
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for name in FILLED_BY_DEFAULT:  # left empty, or a form sent without it
            if data.get(name) in (None, ""):
                data[name] = settings_schema.setting(name).default
        if self.errors:
            return data
        preset = PRESETS[data["preset"]]
        domain = data["address"].rpartition("@")[2]
        data["smtp_host"] = data["smtp_host"].strip() or preset.smtp[0].format(domain=domain)
        data["imap_host"] = (data["imap_host"].strip() or preset.imap[0].format(domain=domain)
                             if data.pop("imap_enabled") else "")
        if self.sends_without_login(data):
            data["smtp_username"] = data["smtp_password"] = data["smtp_password_env"] = ""
        else:
            logs_in = data["auth"] == Auth.OAUTH2 or bool(
                data["smtp_password"] or data["smtp_password_env"] or self.secret_is_set("smtp_password"))
            data["smtp_username"] = data["smtp_username"].strip() or (data["address"] if logs_in else "")
        data["imap_username"] = data["imap_username"].strip() or data["smtp_username"] or data["address"]
        more = [f.strip() for f in data.pop("imap_folders_more", "").split(",") if f.strip()]
        data["imap_folders"] = (list(dict.fromkeys([*data["imap_folders"], *more]))
                                or settings_schema.setting("imap_folders").default)
        if data["save_to_sent"] == SaveToSent.ALWAYS and not data["imap_host"]:
            self.add_error("save_to_sent", "a copy goes to the Sent folder over IMAP: tick \"Read replies over IMAP\" "
                                           "and give its server, or choose automatic or never")
        if bool(data["window_start"]) != bool(data["window_end"]):
            self.add_error("window_end", "give both ends of the sending window, or neither")
        for name, problem in mailbox_connection_problems(data).items():  # never a password in clear text
            self.add_error(name, problem)
        for name in ("smtp_password_env", "imap_password_env"):  # a webhook's signing secret is no mailbox's
            if problem := mailbox_name_problem(data[name]):
                self.add_error(name, problem)
        if data["auth"] == Auth.OAUTH2:
            provider = data["oauth2_provider"] or preset.provider or "generic"
            data["oauth2_provider"] = provider
            if provider == "generic":
                for field in ("oauth2_authorize_url", "oauth2_token_url", "oauth2_userinfo_url", "oauth2_client_id"):
                    if not data.get(field):
                        self.add_error(field, "an OAuth2 provider needs it")  # (and drops it from the data)
                if data.get("oauth2_token_url") and (problem := token_url_problem(data["oauth2_token_url"])):
                    self.add_error("oauth2_token_url", problem)
        return data

    def sends_without_login(self, data: dict[str, Any]) -> bool:
        """Whether "No login to send" is ticked and may be: not with OAuth (it logs in), not over a password
        variable an admin named when an operator saves (an admin drops it)."""
        if not data.pop("smtp_no_login", False):
            return False
        if data["auth"] == Auth.OAUTH2:
            self.add_error("smtp_no_login", "OAuth sign-in logs in to send: choose \"Password\" under Log in with "
                                            "to send without a login")
            return False
        if data["smtp_password_env"] and self.fields["smtp_password_env"].disabled:
            self.add_error("smtp_no_login", f"an admin named this mailbox's SMTP password "
                                            f"({data['smtp_password_env']}): only an admin can drop it")
            return False
        self.no_login = True
        return True

    def secrets_asked_again(self, candidate: Mailbox) -> list[str]:
        """Errors on each secret the candidate would use but may not: stored, or typed on an earlier round, for
        other settings than the form's. Nothing may connect with it."""
        used = {"smtp_password": candidate.auth != Auth.OAUTH2,
                "imap_password": candidate.auth != Auth.OAUTH2 and candidate.has_imap,
                "oauth2_client_secret": candidate.auth == Auth.OAUTH2}
        for field, (column, label) in SECRET_FIELDS.items():
            if not used[field]:
                continue
            problem = bound_problem(candidate, field)
            if not problem and column in self.pending and getattr(candidate, column) != self.pending[column][0]:
                problem = f"the {label} typed earlier was for {self.pending[column][1]}"
            if problem:
                env = f"{field}_env" if f"{field}_env" in self.fields else ""
                self.add_error(field, f"{problem} — you changed where it goes: type the {WORDS[field]} again"
                               + (" (or an admin names its variable again)" if env else ""))
        return [error for errors in self.errors.values() for error in errors]

    def column_values(self) -> dict[str, Any]:
        """The Mailbox columns this form sets (no secret among them, but a stored SMTP password dropped when the
        mailbox sends without a login: nothing keeps a secret no connection uses)."""
        values = {name: self.cleaned_data[name] for name in setting_names()}
        if self.no_login:
            values["smtp_password_sealed"] = ""
        return values

    def typed_secrets(self) -> dict[str, str]:
        """Sealed column -> the plain secret typed this round (only those typed)."""
        return {column: self.cleaned_data[field] for field, (column, _) in SECRET_FIELDS.items()
                if self.cleaned_data.get(field)}


def initial_for(mailbox: Mailbox | None, preset: str) -> dict[str, Any]:
    """What the form shows first: the stored mailbox, or the preset's defaults."""
    if mailbox is None:
        chosen = PRESETS.get(preset) or PRESETS["other"]
        return {"preset": preset if preset in PRESETS else "other", "auth": chosen.auth,
                "oauth2_provider": chosen.provider,
                "smtp_host": "" if "{domain}" in chosen.smtp[0] else chosen.smtp[0], "smtp_port": chosen.smtp[1],
                "smtp_security": chosen.smtp[2],
                "imap_host": "" if "{domain}" in chosen.imap[0] else chosen.imap[0], "imap_port": chosen.imap[1],
                "imap_security": chosen.imap[2], "imap_enabled": True,
                **{name: settings_schema.setting(name).default
                   for name in ("imap_folders", "daily_cap", "window_timezone", "save_to_sent")}}
    # Durations and sending days are shown in words by their fields (DurationField, WeekdaysField).
    values = {name: getattr(mailbox, name) for name in setting_names()}
    values["preset"] = mailbox.oauth2_provider if mailbox.oauth2_provider in PRESETS else "other"
    values["imap_enabled"] = bool(mailbox.imap_host)
    values["smtp_no_login"] = mailbox.auth == Auth.PASSWORD and not mailbox.smtp_username
    return values
