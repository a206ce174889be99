"""API tokens in the Django admin: created by `manage.py api_token` (printed once), listed and revoked here."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet

from sequences.admin import NoWrites, SelectionChecked

from .models import ApiToken
from .tokens import api_token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(SelectionChecked, NoWrites, admin.ModelAdmin):
    """Tokens are created by `manage.py api_token` (printed once); here they are listed and revoked."""

    list_display = ("name", "role", "prefix", "rate_per_minute", "created_at", "last_used_at", "revoked_at")
    list_filter = ("role",)
    readonly_fields = ("name", "role", "prefix", "rate_per_minute", "created_at", "last_used_at", "revoked_at")
    exclude = ("digest",)
    actions = ["revoke"]

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("sequences.manage_webhooks")

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset: QuerySet[ApiToken]):
        revoked = sum(api_token_revoke(token_id=pk) for pk in queryset.values_list("pk", flat=True))
        messages.info(request, f"{revoked} token{'' if revoked == 1 else 's'} revoked.")
