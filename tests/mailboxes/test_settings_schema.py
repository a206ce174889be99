"""One description of a mailbox's settings (mailboxes.settings_schema): the TOML loader and its export, the mailbox
form and the admin read it, so a setting described there is on each of them, with the same bounds and words; a
setting added to it reaches them all with no other change."""

from __future__ import annotations

import tomllib
from datetime import time

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import QueryDict
from django.test import RequestFactory

from api.main import api
from mailboxes import settings_schema
from mailboxes.models import Mailbox
from mailboxes.secrets import ENV_FIELDS
from mailboxes.settings_schema import NOT_SETTINGS, SECTIONS, Bounds, Kind, Setting
from sequences.config.apply import config_apply
from sequences.config.auth import OAUTH2_KEYS
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.storable import INT_MAX
from tests.factories import MailboxFactory, make_sequence
from ui.mailbox_forms import MailboxForm, form_groups

SETTINGS = settings_schema.SETTINGS
HEAD = '[[mailbox]]\nname = "box"\naddress = "box@acme.test"\n'


def uncovered(fields: list[models.Field], settings: tuple[Setting, ...], not_settings: dict[str, str]) -> set[str]:
    """The editable columns neither described as a setting nor listed as no setting."""
    editable = {f.name for f in fields if f.editable and not f.auto_created and not f.primary_key}
    return editable - {s.field for s in settings} - set(not_settings)


def test_every_editable_column_is_a_setting_or_listed_as_none():
    fields = Mailbox._meta.concrete_fields
    assert uncovered(fields, SETTINGS, NOT_SETTINGS) == set()
    assert not {s.field for s in SETTINGS} & set(NOT_SETTINGS)
    assert set(NOT_SETTINGS) <= {f.name for f in fields}
    # A column added to the model and to neither list is caught.
    assert uncovered(fields, SETTINGS[1:], NOT_SETTINGS) == {SETTINGS[0].field}


def test_each_setting_is_described_once_and_agrees_with_the_model():
    assert len({s.field for s in SETTINGS}) == len(SETTINGS)
    paths = [s.toml for s in SETTINGS if s.toml]
    assert len(set(paths)) == len(paths)
    for setting in SETTINGS:
        assert setting.model_field.editable, setting.field
        assert setting.label and setting.group, setting.field
        assert not setting.section or setting.section in SECTIONS, setting.field
        assert (setting.pattern == "") == (setting.pattern_words == ""), setting.field
        if setting.kind is Kind.CHOICE and setting.model_field.choices:
            assert set(setting.values) == {str(v) for v, _ in setting.model_field.choices}, setting.field
    # The tables that read these keys on their own say the same.
    assert {s.key for s in SETTINGS if s.section == "oauth2"} == OAUTH2_KEYS
    assert {s.field: ".".join(s.toml) for s in SETTINGS if s.kind is Kind.SECRET_ENV} == ENV_FIELDS
    # Defaults come from the model, but for the one the description gives.
    assert settings_schema.setting("daily_cap").default == Mailbox._meta.get_field("daily_cap").default
    assert settings_schema.setting("imap_folders").default == ["INBOX"]


@pytest.fixture
def two_mailboxes(db, settings, tmp_path, monkeypatch):
    """A password mailbox and an OAuth2 mailbox on an ESP: between them, every TOML setting off its default."""
    settings.OUTREACH_CA_DIRS = [str(tmp_path)]
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    for name in ("A_SMTP", "A_IMAP", "B_CLIENT", "B_REFRESH", "B_ESP"):
        monkeypatch.setenv(f"OUTREACH_SECRET_{name}", "x")
    a = MailboxFactory(
        name="schema-a", address="a@acme.test", display_name="Acme A", is_drill_target=True,
        smtp_host="127.0.0.1", smtp_port=2526, smtp_security="none", smtp_username="a-user",
        smtp_password_env="OUTREACH_SECRET_A_SMTP", imap_host="127.0.0.1", imap_port=1143, imap_security="none",
        imap_username="a-imap", imap_password_env="OUTREACH_SECRET_A_IMAP", imap_folders=["INBOX", "Bounces"],
        ca_file=str(tmp_path / "ca.pem"), dkim_selector="s1", daily_cap=77, window_days="mon,fri",
        window_start=time(8, 30), window_end=time(18), window_timezone="recipient",
        window_fallback_timezone="Europe/Berlin", min_gap=180, gap_jitter=30, ramp_start=10, ramp_step=5,
        reply_view_max_age=900, follow_ups_without_reply_view=True, save_to_sent="never",
        guardrail_window_days=14, guardrail_bounce_rate=4.5, guardrail_bounce_min_sends=60,
        guardrail_complaint_rate=0.2, guardrail_complaint_min_deliveries=900, guardrail_refusal_rate=1.5,
        guardrail_refusal_min_sends=25, guardrail_silence_seconds=7200)
    b = MailboxFactory(
        name="schema-b", address="b@acme.test", auth="oauth2", smtp_username="b@acme.test", imap_host="127.0.0.1",
        imap_username="b@acme.test", oauth2_provider="google", oauth2_client_id="cid",
        oauth2_token_url="https://oauth.localhost/token", oauth2_scope="https://mail.google.com/",
        oauth2_client_secret_env="OUTREACH_SECRET_B_CLIENT", oauth2_refresh_token_env="OUTREACH_SECRET_B_REFRESH",
        transport_kind="anymail", esp_name="sendgrid", esp_api_key_env="OUTREACH_SECRET_B_ESP",
        esp_schedule_ahead_minutes=30)
    return a, b


def _named(table: dict, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(table, dict) or key not in table:
            return False
        table = table[key]
    return True


def test_every_toml_setting_is_exported_read_back_and_round_trips(two_mailboxes):
    a, b = two_mailboxes
    sequence = make_sequence(mailbox=a, steps=1)
    sequence.pool.set([a, b])
    text = sequence_export_toml(sequence)
    tables = tomllib.loads(text)["mailbox"]
    for setting in settings_schema.in_toml():
        assert any(_named(table, setting.toml) for table in tables), f"{setting.field} is not exported"

    plan = parse(text)
    for mailbox, table, entry in zip((a, b), tables, plan.mailboxes, strict=True):
        assert entry["given"] == {s.field for s in settings_schema.in_toml()
                                  if s.field != "name" and _named(table, s.toml)}
        for setting in settings_schema.in_toml():
            assert entry.get(setting.field, setting.default) == getattr(mailbox, setting.field), setting.field
    result = config_apply(plan)
    assert sorted(result.unchanged)[:2] == ["mailbox schema-a", "mailbox schema-b"]
    assert not [change for change in result.changes if change.startswith("mailbox")]


def test_a_value_outside_a_settings_bounds_is_refused_in_its_words_and_its_edge_taken(db):
    for setting in settings_schema.in_toml():
        if setting.bounds is None or setting.section in ("oauth2",):
            continue
        bounds, path, kind = setting.bounds, setting.toml, float if setting.kind is Kind.PERCENT else int
        outside = [kind(bounds.low if bounds.above else bounds.low - 1)]
        if bounds.high is not None:
            outside.append(kind(bounds.high + 1))
        for value in outside:
            with pytest.raises(ConfigError) as excinfo:
                parse(HEAD + _toml(path, value))
            assert any(f"mailbox[0].{'.'.join(path)}" in e and bounds.problem(value) in e
                       for e in excinfo.value.errors), (setting.field, excinfo.value.errors)
        edge = kind(bounds.high if bounds.high is not None else bounds.low)
        (entry,) = parse(HEAD + _toml(path, edge)).mailboxes
        assert entry[setting.field] == edge, setting.field


def _toml(path: tuple[str, ...], value) -> str:
    """A key of a [[mailbox]], with what its table needs besides."""
    if len(path) == 1:
        return f"{path[0]} = {value}\n"
    extra = {"imap": ', host = "127.0.0.1"', "ramp": ", start = 1" if path[-1] != "start" else ""}.get(path[0], "")
    return f"{path[0]} = {{ {path[1]} = {value}{extra} }}\n"


def test_every_setting_on_the_form_has_its_label_help_and_bounds():
    form = MailboxForm(admin=True)
    grouped = [name for _title, names in form_groups() for name in names]
    for setting in settings_schema.on_form():
        field = form.fields[setting.field]
        assert (field.label, field.help_text) == (setting.label, setting.help), setting.field
        if setting.kind is Kind.INT:
            assert field.min_value == setting.bounds.low, setting.field
            assert field.max_value == (setting.bounds.high if setting.bounds.high is not None else INT_MAX)
        if setting.kind in (Kind.TEXT, Kind.URL, Kind.SECRET_ENV):
            assert field.max_length == setting.max_length, setting.field
        assert setting.field in grouped or setting.group == "Sent folder", setting.field
    # The form writes exactly the settings on it (and the sealed secrets, none of them a setting).
    assert {s.field for s in settings_schema.on_form()} == {
        f for f in form.fields if f in {s.field for s in SETTINGS}}


def test_every_setting_is_in_the_admin_with_its_bounds(db):
    from inbound.admin import MailboxAdmin

    model_admin = MailboxAdmin(Mailbox, admin.site)
    request = RequestFactory().get("/admin/mailboxes/mailbox/add/")
    shown = [f for _title, options in model_admin.get_fieldsets(request) for f in options["fields"]]
    assert len(shown) == len(set(shown))
    form = model_admin.get_form(request)()
    for setting in SETTINGS:
        assert setting.field in shown and setting.field in form.fields, setting.field
        if setting.bounds is not None:
            field = form.fields[setting.field]
            outside = field.to_python(setting.bounds.low if setting.bounds.above else setting.bounds.low - 1)
            with pytest.raises(ValidationError) as excinfo:
                field.clean(outside)
            assert setting.bounds.problem(outside) in excinfo.value.messages, setting.field


def test_the_api_shows_no_mailbox_setting():
    """The JSON API names a mailbox only (a reply's, a sequence's): a route that shows its settings reads this
    description too, and this test asks for it."""
    properties = {name for schema in api.get_openapi_schema()["components"]["schemas"].values()
                  for name in schema.get("properties", {})}
    own = {s.field for s in SETTINGS} - {"name", "address", "display_name", "auth"}
    assert not own & properties


FAKE = Setting("connect_failures", ("smtp", "failures_allowed"), Kind.INT, "Sending (SMTP)", "Failures allowed",
               "connection failures in a row before the mailbox is blocked",
               bounds=Bounds(0, 10, high_words="must be at most {high}"))


def test_a_setting_added_to_the_description_reaches_the_loader_the_export_the_form_and_the_admin(db, monkeypatch):
    """Adding a setting touches its column (and migration) and this description: nothing else."""
    text = HEAD + "smtp = { failures_allowed = 3 }\n"
    with pytest.raises(ConfigError, match="failures_allowed .*unknown key"):
        parse(text)
    monkeypatch.setattr(settings_schema, "SETTINGS", (*SETTINGS, FAKE))

    (entry,) = parse(text).mailboxes
    assert entry["connect_failures"] == 3 and "connect_failures" in entry["given"]
    with pytest.raises(ConfigError, match=r"mailbox\[0\]\.smtp\.failures_allowed \(line 4\): must be at most 10"):
        parse(text.replace("= 3", "= 11"))

    mailbox = MailboxFactory(connect_failures=4)
    exported = tomllib.loads(sequence_export_toml(make_sequence(mailbox=mailbox, steps=1)))
    assert exported["mailbox"][0]["smtp"]["failures_allowed"] == 4

    form = MailboxForm(admin=True)
    field = form.fields["connect_failures"]
    assert (field.label, field.help_text, field.min_value, field.max_value) == (
        "Failures allowed", FAKE.help, 0, 10)
    assert "connect_failures" in dict(form_groups())["Sending (SMTP)"]
    data = QueryDict(mutable=True)
    for key, value in {"preset": "other", "name": "box", "address": "box@acme.test", "auth": "password",
                       "smtp_host": "127.0.0.1", "smtp_port": "25", "smtp_security": "none", "imap_port": "993",
                       "imap_security": "tls", "daily_cap": "50", "window_timezone": "UTC",
                       "connect_failures": "3"}.items():
        data[key] = value
    bound = MailboxForm(data, admin=True)
    assert bound.is_valid(), bound.errors
    assert bound.column_values()["connect_failures"] == 3

    from inbound.admin import MailboxAdmin

    request = RequestFactory().get("/admin/mailboxes/mailbox/add/")
    fieldsets = dict(MailboxAdmin(Mailbox, admin.site).get_fieldsets(request))
    assert "connect_failures" in fieldsets["Sending (SMTP)"]["fields"]
