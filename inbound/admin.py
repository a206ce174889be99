"""Django admin for mailboxes (editable config, never secrets) and the read-only inbound side."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet

from inbound.erasure import contact_erase
from mailboxes import settings_schema
from mailboxes.models import ImapCursor, Mailbox, ProviderEvent
from mailboxes.secrets import ENV_FIELDS, PREFIX, validate_secret_env_name
from mailboxes.settings_schema import Bounds, Kind
from mailboxes.tls import mailbox_connection_problems
from sequences.admin import ContactAdmin, ReadOnlyAdmin, SelectionChecked, report_stop
from sequences.labels import stamp
from sequences.models import Contact
from sequences.secret_names import mailbox_name_problem
from sequences.services.stops import mailbox_pause, mailbox_resume
from sequences.window import RECIPIENT, zone_problem

from .models import InboundMessage

# Durations are kept as whole numbers here: the unit the column holds.
UNITS = {Kind.DURATION: "in seconds", Kind.DAYS: "in days"}


def _bounds_validator(bounds: Bounds):
    def validate(value) -> None:
        if value is not None and (problem := bounds.problem(value)):
            raise forms.ValidationError(problem, code="out_of_bounds")

    return validate


class MailboxForm(forms.ModelForm):
    """The settings of mailboxes.settings_schema, with their bounds; the *_env fields name an environment variable
    from the allow-list (mailboxes/secrets.py)."""

    class Meta:
        model = Mailbox
        # The admin's fieldsets choose the fields: the settings (esp_api_url is none: an ESP's API URL is fixed).
        fields = tuple(ENV_FIELDS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for setting in settings_schema.SETTINGS:
            field = self.fields.get(setting.field)
            if field is None:
                continue
            if setting.bounds is not None:
                field.validators.append(_bounds_validator(setting.bounds))
            if setting.kind in UNITS and not field.help_text:
                field.help_text = UNITS[setting.kind]
        for name in ENV_FIELDS:
            if name in self.fields:
                self.fields[name].validators.append(validate_secret_env_name)
                self.fields[name].help_text = f"The name of an environment variable starting with {PREFIX}."

    # Zones as TOML and the UI check them: an unknown one would count the window and the daily cap in UTC.
    def clean_window_timezone(self) -> str:
        name = self.cleaned_data.get("window_timezone", "").strip()
        if name != RECIPIENT and (problem := zone_problem(name)):
            raise forms.ValidationError(f'{problem}, or "{RECIPIENT}" for each contact\'s own zone')
        return name

    def clean_window_fallback_timezone(self) -> str:
        name = self.cleaned_data.get("window_fallback_timezone", "").strip()
        if problem := zone_problem(name):
            raise forms.ValidationError(problem)
        return name

    def clean(self):
        data = super().clean()
        # No login in clear text, as the mailbox form and TOML refuse it (mailboxes.tls).
        stored = {f.name: getattr(self.instance, f.name) for f in Mailbox._meta.concrete_fields}
        for name, problem in mailbox_connection_problems(stored | data).items():
            self.add_error(name if name in self.fields else None, problem)
        for name in ENV_FIELDS:  # a webhook's signing secret is no mailbox's
            if name in self.fields and (problem := mailbox_name_problem(data.get(name) or "")):
                self.add_error(name, problem)
        return data


@admin.register(Mailbox)
class MailboxAdmin(SelectionChecked, admin.ModelAdmin):
    form = MailboxForm
    list_display = ("name", "address", "transport_kind", "paused", "last_poll_at", "poll_failures")
    list_filter = ("paused", "transport_kind")
    search_fields = ("name", "address")
    # Passwords are never stored: the *_env fields name an environment variable.
    readonly_fields = ("paused", "version", "last_poll_at", "last_poll_ok_at", "last_poll_error", "poll_failures",
                       "imap_login_refused_at", "imap_login_refused_error", "created_at", "guardrail_paused_at",
                       "guardrail_reason", "guardrail_silenced_until", "sent_copy_failed_at", "sent_copy_error")
    # State shown (read only) beside the settings of a section, and a section of its own.
    STATE = {"Mailbox": ("paused", "version"),
             "Deliverability guardrail": ("guardrail_paused_at", "guardrail_reason", "guardrail_silenced_until"),
             "Sent folder": ("sent_copy_failed_at", "sent_copy_error")}
    POLL_HEALTH = ("last_poll_at", "last_poll_ok_at", "last_poll_error", "poll_failures", "imap_login_refused_at",
                   "imap_login_refused_error", "created_at")
    actions = ["pause_mailboxes", "resume_mailboxes"]

    def get_fieldsets(self, request, obj=None):
        """The settings' sections (mailboxes.settings_schema), each with its state, and the poller's health."""
        return [(title, {"fields": (*(s.field for s in group), *self.STATE.get(title, ()))})
                for title, group in settings_schema.groups().items()] + [("Poll health", {"fields": self.POLL_HEALTH})]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm("sequences.operate")

    @admin.action(description="Pause selected mailboxes (cancels jobs not yet authorized)", permissions=["operate"])
    def pause_mailboxes(self, request, queryset) -> None:
        for mailbox in queryset:
            report_stop(request, f"Paused {mailbox.name}",
                        mailbox_pause(mailbox_id=mailbox.pk, actor=request.user.get_username()))

    @admin.action(description="Resume selected mailboxes", permissions=["operate"])
    def resume_mailboxes(self, request, queryset) -> None:
        for mailbox in queryset:
            n = mailbox_resume(mailbox_id=mailbox.pk, actor=request.user.get_username())
            messages.info(request, f"Resumed {mailbox.name}: {n} next step(s) scheduled.")


@admin.register(ImapCursor)
class ImapCursorAdmin(ReadOnlyAdmin):
    list_display = ("mailbox", "folder", "uidvalidity", "last_uid", "highestmodseq", "rescans", "failures",
                    "last_error", "updated_at")


@admin.register(InboundMessage)
class InboundMessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "committed_ms", "kind", "from_address", "subject", "correlation_rule", "enrollment")
    list_filter = ("kind", "correlation_rule", "mailbox")
    search_fields = ("from_address", "message_id", "subject")
    list_select_related = ("enrollment__contact", "enrollment__sequence")
    # The raw bytes stay out of the admin; the operator UI shows them as escaped text.
    exclude = ("raw",)

    @admin.display(description="Committed (database clock)", ordering="committed_at")
    def committed_ms(self, message: InboundMessage) -> str:
        return stamp(message.committed_at)


@admin.register(ProviderEvent)
class ProviderEventAdmin(ReadOnlyAdmin):
    list_display = ("provider", "event_type", "recipient", "provider_message_id", "job", "received_at", "effect")
    list_filter = ("provider", "event_type")
    search_fields = ("recipient", "provider_message_id", "event_id")


admin.site.unregister(Contact)


@admin.register(Contact)
class ErasingContactAdmin(ContactAdmin):
    """The contacts' admin with the erasure, which blanks the person in the inbound ledger as well."""

    actions = ["erase_contacts"]

    @admin.action(description="Erase selected people (GDPR art. 17): stop everything, keep only a hash of the "
                              "address", permissions=["manage_suppressions"])
    def erase_contacts(self, request, queryset: QuerySet[Contact]) -> None:
        for email in list(queryset.values_list("email", flat=True)):
            result = contact_erase(email=email, actor=request.user.get_username())
            messages.info(request, f"Erased contact #{result['contact']}: {result['enrollments_stopped']} "
                                   "enrollment(s) stopped; only a keyed hash of the address is kept.")

    def has_manage_suppressions_permission(self, request) -> bool:
        return request.user.has_perm("sequences.manage_suppressions")
