"""The admin's form for a webhook endpoint."""

from __future__ import annotations

from urllib.parse import urlparse

from django import forms

from mailboxes.secrets import secret_env_problem
from mailboxes.targets import url_problem
from sequences.secret_names import webhook_name_problem
from sequences.webhooks_out.events import WebhookEvent


class WebhookEndpointForm(forms.Form):
    url = forms.URLField(
        max_length=500,
        label="URL",
        assume_scheme="https",
        help_text="https://… to a public address (a private one, or plain http, only where the install allows "
                  "it: OUTREACH_ALLOW_PRIVATE_TARGETS)",
    )
    secret_env = forms.CharField(
        max_length=100,
        label="Signing secret variable",
        help_text="the environment variable that holds the signing secret, e.g. "
        "OUTREACH_SECRET_CRM_WEBHOOK; the receiver keeps the same value",
    )
    event_types = forms.MultipleChoiceField(
        choices=[(e.value, e.value) for e in WebhookEvent], widget=forms.CheckboxSelectMultiple, label="Events"
    )
    description = forms.CharField(max_length=200, required=False)
    active = forms.BooleanField(required=False, initial=True)

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        parsed = urlparse(url)
        if parsed.username or parsed.password:
            raise forms.ValidationError("no credentials in the URL: deliveries are signed instead")
        if problem := url_problem(url):  # resolved now, and again at each delivery
            raise forms.ValidationError(problem)
        return url

    def clean_secret_env(self) -> str:
        name = self.cleaned_data["secret_env"].strip()
        if problem := secret_env_problem(name):
            raise forms.ValidationError(problem.replace("a mailbox secret", "a webhook secret"))
        if problem := webhook_name_problem(name):
            raise forms.ValidationError(problem)
        return name
