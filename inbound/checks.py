"""Start-up checks: a webhook that cannot work is refused when the process starts, not at the first request."""

from __future__ import annotations

import warnings

from anymail.exceptions import AnymailNotSupportedWarning
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from .webhook_events import tracking_patterns


@checks.register(checks.Tags.security)
def webhook_esps_configured(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for esp in settings.OUTREACH_WEBHOOK_ESPS:
        patterns = tracking_patterns([esp])
        if not patterns:
            errors.append(checks.Error(f"OUTREACH_WEBHOOK_ESPS names {esp!r}, which has no anymail tracking webhook",
                                       id="outreach.E001"))
        for pattern in patterns:
            view = pattern.callback
            try:
                # anymail's webhook views read their settings when built: build one now.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", AnymailNotSupportedWarning)  # SendGrid: community support only
                    view.view_class(**view.view_initkwargs)
            except ImproperlyConfigured as exc:
                first_line = str(exc).strip().splitlines()[0]
                errors.append(checks.Error(f"the {esp} tracking webhook is not configured: {first_line}",
                                           hint="set it in ANYMAIL, or drop the ESP from OUTREACH_WEBHOOK_ESPS",
                                           id="outreach.E002"))
                break
    return errors
