"""The mailbox form of the operator UI: presets, labelled fields, secrets that are never shown again.

A password typed here is sealed (mailboxes.sealed) as soon as the form is read; the page never renders it back,
only "set — type to replace". Empty means keep the stored one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from zoneinfo import available_timezones

from django import forms

from mailboxes.bound import WORDS, bound_problem, endpoint
from mailboxes.models import Auth, Mailbox, SaveToSent, Security
from mailboxes.oauth2 import token_url_problem
from mailboxes.secrets import validate_secret_env_name
from mailboxes.tls import mailbox_connection_problems
from sequences.config.parse import duration_text, parse_duration
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
SECURITY_CHOICES = [(Security.NONE, "no encryption"), (Security.STARTTLS, "STARTTLS"), (Security.TLS, "TLS")]
# The columns the form writes (besides the sealed secrets).
FIELDS = ("name", "address", "display_name", "auth", "smtp_host", "smtp_port", "smtp_security", "smtp_username",
          "smtp_password_env", "imap_host", "imap_port", "imap_security", "imap_username", "imap_password_env",
          "imap_folders", "ca_file", "dkim_selector", "daily_cap", "window_days", "window_start", "window_end",
          "window_timezone",
          "reply_view_max_age", "follow_ups_without_reply_view", "min_gap", "gap_jitter", "ramp_start", "ramp_step",
          "save_to_sent", "oauth2_provider", "oauth2_client_id",
          "oauth2_token_url", "oauth2_authorize_url", "oauth2_userinfo_url", "oauth2_scope")
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


def _secret_input() -> forms.CharField:
    return forms.CharField(required=False, strip=False, max_length=4096,
                           widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}))


def _server_fields(part: str, *, username_help: str) -> tuple[forms.Field, ...]:
    """Host, port, security, username, password and password variable of one side (SMTP or IMAP)."""
    password = _secret_input()
    password.label = f"{part} password"
    return (
        forms.CharField(max_length=255, required=False, label=f"{part} host",
                        help_text="empty: from the preset and the address's domain"),
        forms.IntegerField(min_value=1, max_value=65535, label=f"{part} port"),
        forms.ChoiceField(choices=SECURITY_CHOICES, label=f"{part} security"),
        forms.CharField(max_length=255, required=False, label=f"{part} username", help_text=username_help),
        password,
        forms.CharField(max_length=100, required=False, label=f"{part} password variable",
                        validators=[validate_secret_env_name],
                        help_text="instead of a stored password: an OUTREACH_SECRET_… variable"),
    )


class MailboxForm(forms.Form):
    no_login = False  # clean(): the mailbox sends without an SMTP login ("No login to send")

    preset = forms.ChoiceField(choices=[(k, p.label) for k, p in PRESETS.items()], label="Provider",
                               widget=forms.HiddenInput)
    name = forms.SlugField(max_length=100, label="Name", help_text="a short name: letters, digits, - and _")
    address = forms.EmailField(label="Address")
    display_name = forms.CharField(max_length=200, required=False, label="Display name")
    auth = forms.ChoiceField(choices=[(Auth.PASSWORD, "Password"), (Auth.OAUTH2, "OAuth sign-in")],
                             label="Log in with")

    smtp_no_login = forms.BooleanField(
        required=False, label="No login to send",
        help_text="the SMTP server takes mail from this host without a login: a local relay (Postfix), a smarthost, "
                  "the local run's capture server")
    smtp_host, smtp_port, smtp_security, smtp_username, smtp_password, smtp_password_env = _server_fields(
        "SMTP", username_help="empty: the address when a password is given; no login at all without one "
                              "(a relay that needs none)")
    imap_enabled = forms.BooleanField(required=False, initial=True, label="Read replies over IMAP")
    imap_host, imap_port, imap_security, imap_username, imap_password, imap_password_env = _server_fields(
        "IMAP", username_help="empty: the SMTP username")
    imap_folders = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                             label="Folders to read", help_text="the server's folders after a check")
    imap_folders_more = forms.CharField(max_length=500, required=False, label="Other folders to read",
                                        help_text="comma separated, e.g. INBOX, Bounces")
    ca_file = forms.CharField(max_length=500, required=False, label="Private CA",
                              help_text="a PEM file on the server trusted for SMTP and IMAP TLS (empty: the system's)")

    dkim_selector = forms.RegexField(
        regex=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$", max_length=63, required=False,
        label="DKIM selector", error_messages={"invalid": "letters, digits, dots, - and _ only"},
        help_text="the selector your provider signs with, e.g. google or selector1; the check reads "
                  "<selector>._domainkey.<your domain>")

    daily_cap = forms.IntegerField(min_value=0, max_value=INT_MAX, label="Daily cap", initial=200)
    window_days = forms.MultipleChoiceField(choices=[(d, d.capitalize()) for d in DAYS], required=False,
                                            widget=forms.CheckboxSelectMultiple, label="Sending days",
                                            help_text="none ticked: every day")
    window_start = forms.TimeField(required=False, label="Sending window start", widget=forms.TimeInput(
        attrs={"type": "time"}))
    window_end = forms.TimeField(required=False, label="Sending window end",
                                 widget=forms.TimeInput(attrs={"type": "time"}))
    window_timezone = forms.CharField(max_length=64, initial="UTC", label="Time zone",
                                      help_text='an IANA zone such as Europe/Berlin, or "recipient"')
    min_gap = forms.CharField(max_length=40, required=False, label="Minimum gap",
                              help_text='at least this long between two messages of this mailbox, e.g. "3m" '
                                        '(empty: no spacing); the next one leaves at the first dispatcher pass '
                                        'after the gap (every 10 s), so 30 s gives 30 to 40 s')
    gap_jitter = forms.CharField(max_length=40, required=False, label="Gap jitter",
                                 help_text='a random extra up to this long on each gap, e.g. "1m"')
    ramp_start = forms.IntegerField(min_value=1, max_value=1_000_000, required=False, label="Ramp-up start",
                                    help_text="messages on the first sending day (empty: the daily cap from day one)")
    ramp_step = forms.IntegerField(min_value=0, max_value=1_000_000, required=False, label="Ramp-up step",
                                   help_text="more messages each following day, up to the daily cap")
    reply_view_max_age = forms.CharField(max_length=40, required=False, label="Reply view max age",
                                         help_text='follow-ups wait when replies were last read longer ago than '
                                                   'this, e.g. "10m" (empty: the install\'s default)')
    follow_ups_without_reply_view = forms.BooleanField(
        required=False, label="Follow-ups without reply view",
        help_text="send follow-ups from a mailbox that reads no replies (no IMAP)")

    save_to_sent = forms.ChoiceField(
        choices=[(SaveToSent.AUTO, "automatic"), (SaveToSent.ALWAYS, "always"), (SaveToSent.NEVER, "never")],
        initial=SaveToSent.AUTO, required=False, label="Copy to the Sent folder",
        help_text="each message sent, marked read, in the IMAP Sent folder your mail program shows; automatic: not "
                  "through Gmail (which keeps its own copy) or an ESP")

    oauth2_provider = forms.ChoiceField(
        choices=[("", "—"), ("google", "Google"), ("microsoft", "Microsoft"), ("generic", "OAuth2 provider")],
        required=False, label="OAuth provider")
    oauth2_client_id = forms.CharField(max_length=255, required=False, label="OAuth client ID",
                                       help_text="empty: the install's for Google or Microsoft")
    oauth2_client_secret = _secret_input()
    oauth2_client_secret.label = "OAuth client secret"
    oauth2_authorize_url = forms.URLField(max_length=500, required=False, label="Authorization URL",
                                          assume_scheme="https")
    oauth2_token_url = forms.URLField(max_length=500, required=False, label="Token URL", assume_scheme="https")
    oauth2_userinfo_url = forms.URLField(max_length=500, required=False, label="Userinfo URL", assume_scheme="https")
    oauth2_scope = forms.CharField(max_length=500, required=False, label="OAuth scope",
                                   help_text="empty: the provider's")

    def __init__(self, *args, mailbox: Mailbox | None = None, listed: list[str] | None = None,
                 pending: dict[str, tuple[str, str]] | None = None, admin: bool = False, **kwargs):
        super().__init__(*args, label_suffix="", **kwargs)
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

    def clean_reply_view_max_age(self) -> int | None:
        value = self.cleaned_data["reply_view_max_age"].strip()
        if not value:
            return None
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def _seconds(self, field: str) -> int:
        value = self.cleaned_data[field].strip()
        if not value:
            return 0
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_min_gap(self) -> int:
        return self._seconds("min_gap")

    def clean_gap_jitter(self) -> int:
        return self._seconds("gap_jitter")

    def clean_save_to_sent(self) -> str:
        return self.cleaned_data["save_to_sent"] or SaveToSent.AUTO  # a form sent without it: the default

    def clean_ramp_step(self) -> int:
        return self.cleaned_data["ramp_step"] or 0

    def clean_window_timezone(self) -> str:
        zone = self.cleaned_data["window_timezone"].strip()
        if zone != "recipient" and zone not in available_timezones():
            raise forms.ValidationError(f"{zone!r} is not an IANA time zone (e.g. Europe/Berlin) or \"recipient\"")
        return zone

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        others = Mailbox.objects.filter(name=name).exclude(pk=self.mailbox.pk if self.mailbox else None)
        if others.exists():
            raise forms.ValidationError(f"a mailbox named {name} exists already")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
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
        data["imap_folders"] = list(dict.fromkeys([*data["imap_folders"], *more])) or ["INBOX"]
        data["window_days"] = ",".join(d for d in DAYS if d in data["window_days"])
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
        values = {name: self.cleaned_data[name] for name in FIELDS}
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
                "imap_security": chosen.imap[2], "imap_folders": ["INBOX"], "daily_cap": 200, "imap_enabled": True,
                "window_timezone": "UTC", "save_to_sent": SaveToSent.AUTO}
    values = {name: getattr(mailbox, name) for name in FIELDS}
    values["preset"] = mailbox.oauth2_provider if mailbox.oauth2_provider in PRESETS else "other"
    values["window_days"] = [d for d in mailbox.window_days.split(",") if d]
    values["imap_enabled"] = bool(mailbox.imap_host)
    values["smtp_no_login"] = mailbox.auth == Auth.PASSWORD and not mailbox.smtp_username
    if mailbox.reply_view_max_age is not None:
        values["reply_view_max_age"] = duration_text(mailbox.reply_view_max_age)
    for name in ("min_gap", "gap_jitter"):
        values[name] = duration_text(getattr(mailbox, name)) if getattr(mailbox, name) else ""
    return values
