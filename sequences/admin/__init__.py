"""Django admin for admins: the same honest labels as the operator UI; append-only data is read-only.

No admin form edits a state field: status, version and every send-job field
are read-only, and state changes go through admin actions that call the same
services as the UI (so the operator log and the timeline record them).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpResponseRedirect
from django.urls import path

from sequences.config.durations import MAX_DURATION, MAX_DURATION_WORDS
from sequences.job_rows import latest_job_rows
from sequences.labels import job_label, stamp, stop_summary_text
from sequences.messages import step_validate
from sequences.models import Contact, Enrollment, OperatorAction, SendJob, Sequence, Step, Suppression, TimelineEvent
from sequences.services.campaigns import sequence_name_free
from sequences.services.common import ServiceError
from sequences.services.stops import (
    enrollment_pause,
    enrollment_resume,
    enrollment_stop,
    sequence_pause,
    sequence_resume,
)
from sequences.stop_summary import StopSummary
from sequences.storable import row_id
from sequences.window import zone_problem

from .reauth import reauth_required, reauth_view


class NoWrites:
    """Nobody (not even a superuser) adds, edits or deletes: append-only data and state fields."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class RowIdsField(forms.ModelMultipleChoiceField):
    """A many-to-many choice whose values must be ids before they are looked up (SQLite cannot compare a number
    past 64 bits; Django's check of each value leaves that to the lookup)."""

    def _check_values(self, value):
        for pk in value:
            if row_id(pk) is None:
                raise forms.ValidationError(self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                                            params={"pk": str(pk)[:40]})
        return super()._check_values(value)


class SelectionChecked:
    """Ids from a request are ids before any lookup: an action's selection that holds something else (a word, "²",
    a number past every column) is refused in words, where Django's lookup would end in a ValueError; a
    many-to-many choice is checked the same way (RowIdsField)."""

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        kwargs.setdefault("form_class", RowIdsField)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def response_action(self, request, queryset, **kwargs):
        if any(row_id(value) is None for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)):
            self.message_user(request, "The selection holds something that is no row's id; choose the rows again.",
                              messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, **kwargs)


class ReadOnlyAdmin(SelectionChecked, NoWrites, admin.ModelAdmin):
    """Viewable by whoever has the view permission; read-only for everyone."""


class ReadOnlyInline(NoWrites, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True


def report_stop(request, what: str, summary: StopSummary) -> None:
    """An admin action's result, in the same words as every other surface."""
    messages.info(request, stop_summary_text(summary, what=what))


class ContactForm(forms.ModelForm):
    """The checks enrollment and the UI make: a known time zone, fields that are a table of names and values."""

    def clean_timezone(self) -> str:
        name = (self.cleaned_data.get("timezone") or "").strip()
        if name and (problem := zone_problem(name)):
            raise forms.ValidationError(problem)
        return name

    def clean_fields(self):
        fields = self.cleaned_data.get("fields")
        if fields is not None and not isinstance(fields, dict):
            raise forms.ValidationError('a contact\'s fields are a JSON object of names and values, e.g. '
                                        '{"city": "Rome"}')
        return fields


@admin.register(Contact)
class ContactAdmin(SelectionChecked, admin.ModelAdmin):
    form = ContactForm
    list_display = ("email", "first_name", "last_name", "company", "timezone")
    search_fields = ("email", "first_name", "last_name", "company")

    def get_readonly_fields(self, request, obj=None):
        # The address is the identity the ledger and the correlation use.
        return ("email", "created_at") if obj else ("created_at",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    # Erasing a person reaches the inbound ledger too: its action is added where that lives (inbound/admin.py).


class StepForm(forms.ModelForm):
    """A step edited here passes the same validation as one loaded from TOML (`messages.step_validate`)."""

    # The same bound as a wait written in words (TOML, the editor): never more than the column's range.
    wait_seconds = forms.IntegerField(
        min_value=0, max_value=MAX_DURATION, initial=0, label="Wait seconds",
        error_messages={"max_value": f"a wait is at most {MAX_DURATION_WORDS} ({MAX_DURATION} seconds)"})

    class Meta:
        model = Step
        fields = ("position", "subject", "body", "wait_seconds", "thread")

    def clean(self):
        cleaned = super().clean()
        errors = step_validate(subject=cleaned.get("subject") or "", body=cleaned.get("body") or "",
                               position=cleaned.get("position") or 1, thread=bool(cleaned.get("thread")))
        for field, messages_ in errors.items():
            for message in messages_:
                self.add_error(field, message)
        return cleaned


class StepInline(admin.TabularInline):
    model = Step
    form = StepForm
    extra = 0
    can_delete = False
    fields = ("position", "subject", "body", "wait_seconds", "thread")


class SequenceForm(forms.ModelForm):
    def clean_name(self) -> str:
        # Its workspace's names (the constraint's other column is not a field of the form, so Django leaves it).
        try:
            return sequence_name_free(self.cleaned_data["name"], workspace_id=self.instance.workspace_id,
                                      sequence_id=self.instance.pk)
        except ServiceError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(Sequence)
class SequenceAdmin(SelectionChecked, admin.ModelAdmin):
    form = SequenceForm
    list_display = ("name", "mailbox", "status", "version", "created_at")
    list_filter = ("status", "mailbox")
    search_fields = ("name",)
    readonly_fields = ("status", "version", "created_at")
    inlines = [StepInline]
    actions = ["pause_sequences", "resume_sequences"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Pause selected sequences (cancels jobs not yet authorized)", permissions=["operate"])
    def pause_sequences(self, request, queryset: QuerySet[Sequence]) -> None:
        for sequence in queryset:
            report_stop(request, f"Paused {sequence.name}",
                    sequence_pause(sequence_id=sequence.pk, actor=request.user.get_username()))

    @admin.action(description="Resume selected sequences", permissions=["operate"])
    def resume_sequences(self, request, queryset: QuerySet[Sequence]) -> None:
        for sequence in queryset:
            n = sequence_resume(sequence_id=sequence.pk, actor=request.user.get_username())
            messages.info(request, f"Resumed {sequence.name}: {n} next step(s) scheduled.")

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm("sequences.operate")


class SendJobInline(ReadOnlyInline):
    model = SendJob
    fields = ("step", "honest_label", "state", "version", "message_id")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("enrollment__mailbox", "enrollment__sequence__mailbox",
                                                            "step")

    @admin.display(description="What happened")
    def honest_label(self, job: SendJob) -> str:
        return job_label(job)


class TimelineInline(ReadOnlyInline):
    model = TimelineEvent
    fields = ("at_ms", "kind", "job", "version_seen", "worker_id", "data")
    readonly_fields = fields
    ordering = ("at", "id")
    show_change_link = False

    @admin.display(description="At (database clock)")
    def at_ms(self, event: TimelineEvent) -> str:
        return stamp(event.at)


@admin.register(Enrollment)
class EnrollmentAdmin(ReadOnlyAdmin):
    list_display = ("contact", "sequence", "mailbox", "status", "stop_reason", "latest_job")
    list_filter = ("status", "stop_reason", "sequence")
    search_fields = ("contact__email",)
    list_select_related = ("contact", "sequence", "mailbox")
    inlines = [SendJobInline, TimelineInline]
    actions = ["pause_enrollments", "stop_enrollments", "resume_enrollments"]

    @admin.display(description="Latest job")
    def latest_job(self, enrollment: Enrollment) -> str:
        row = latest_job_rows([enrollment.pk]).get(enrollment.pk)
        return f"step {row.position}: {row.label}" if row else "—"

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm("sequences.operate")

    @admin.action(description="Pause selected enrollments", permissions=["operate"])
    def pause_enrollments(self, request, queryset) -> None:
        for e in queryset:
            report_stop(request, f"Paused {e}", enrollment_pause(enrollment_id=e.pk,
                                                                     actor=request.user.get_username()))

    @admin.action(description="Stop selected enrollments for good (reason: operator)", permissions=["operate"])
    def stop_enrollments(self, request, queryset) -> None:
        for e in queryset:
            report_stop(request, f"Stopped {e}", enrollment_stop(
                enrollment_id=e.pk, reason=Enrollment.StopReason.OPERATOR, actor=request.user.get_username(),
                source="admin"))

    @admin.action(description="Resume selected enrollments", permissions=["operate"])
    def resume_enrollments(self, request, queryset) -> None:
        for e in queryset:
            try:
                enrollment_resume(enrollment_id=e.pk, actor=request.user.get_username())
            except ServiceError as exc:
                messages.error(request, f"{e}: {exc}")
            else:
                messages.info(request, f"Resumed {e}.")


@admin.register(SendJob)
class SendJobAdmin(ReadOnlyAdmin):
    list_display = ("id", "recipient", "step", "honest_label", "state", "version")
    list_filter = ("state", "cancel_reason")
    search_fields = ("message_id", "provider_message_id", "provider_request_id", "enrollment__contact__email")
    list_select_related = ("enrollment__mailbox", "enrollment__sequence__mailbox", "enrollment__contact",
                           "step__sequence")
    readonly_fields = ("honest_label",)
    inlines = [TimelineInline]

    @admin.display(description="Recipient", ordering="enrollment__contact__email")
    def recipient(self, job: SendJob) -> str:
        return job.enrollment.contact.email

    @admin.display(description="What happened")
    def honest_label(self, job: SendJob) -> str:
        return job_label(job)


@admin.register(Suppression)
class SuppressionAdmin(ReadOnlyAdmin):
    """The ledger: add, lift (with a justification), import and export live in the operator UI."""

    list_display = ("value", "action", "reason", "note", "source", "actor", "at_ms")
    list_filter = ("action", "reason", "is_domain")
    search_fields = ("value", "note", "source", "actor")

    @admin.display(description="At (database clock)", ordering="created_at")
    def at_ms(self, entry: Suppression) -> str:
        return stamp(entry.created_at)


@admin.register(TimelineEvent)
class TimelineEventAdmin(ReadOnlyAdmin):
    list_display = ("at_ms", "kind", "email", "enrollment", "job", "version_seen", "worker_id")
    list_filter = ("kind",)
    search_fields = ("email", "kind", "worker_id")
    ordering = ("-at", "-id")

    @admin.display(description="At (database clock)", ordering="at")
    def at_ms(self, event: TimelineEvent) -> str:
        return stamp(event.at)


@admin.register(OperatorAction)
class OperatorActionAdmin(ReadOnlyAdmin):
    list_display = ("at_ms", "actor", "action", "target", "result")
    list_filter = ("action",)
    search_fields = ("actor", "target")

    @admin.display(description="At (database clock)", ordering="at")
    def at_ms(self, action: OperatorAction) -> str:
        return stamp(action.at)


# --- users -------------------------------------------------------------------------------


class UserAdmin(SelectionChecked, DjangoUserAdmin):
    """Admins manage operators and staff, but never grant more than they hold.

    Only a superuser may set superuser status or single permissions, or edit a
    superuser at all (a password reset would take the account over). Anyone else
    may give only groups whose every permission they hold themselves.
    """

    def get_urls(self):
        confirm = path("reauthenticate/", self.admin_site.admin_view(self.reauthenticate_view),
                       name="reauthenticate")
        return [confirm, *super().get_urls()]

    def reauthenticate_view(self, request):
        return reauth_view(request, context=self.admin_site.each_context(request))

    # Another user's role (change form) and password: only after the admin confirmed their own password.
    def change_view(self, request, object_id, form_url="", extra_context=None):
        if self.has_change_permission(request) and (ask := reauth_required(request, object_id)):
            return ask
        return super().change_view(request, object_id, form_url, extra_context)

    def user_change_password(self, request, id, form_url=""):  # noqa: A002 - Django's own argument name
        if ask := reauth_required(request, id):
            return ask
        return super().user_change_password(request, id, form_url)

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += ["is_superuser", "user_permissions"]
        return fields

    def has_change_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "groups" and not request.user.is_superuser:
            kwargs["queryset"] = grantable_groups(request.user)
        return super().formfield_for_manytomany(db_field, request, **kwargs)


def grantable_groups(user) -> QuerySet[Group]:
    """The groups all of whose permissions USER holds."""
    held = user.get_all_permissions()
    ids = [group.pk for group in Group.objects.prefetch_related("permissions__content_type")
           if {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()} <= held]
    return Group.objects.filter(pk__in=ids)


admin.site.unregister(User)
admin.site.register(User, UserAdmin)


# --- outbound webhooks ------------------------------------------------------------

from sequences.webhooks_out.models import WebhookDelivery  # noqa: E402


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("pk", "event_type", "endpoint", "state", "attempts", "last_status", "created_at")
    list_filter = ("state", "event_type")
