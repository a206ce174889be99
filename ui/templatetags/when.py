"""`{{ moment|when }}`: a time on a list page, to the minute; the full database-clock value in its title.

The page says UTC; static/localtime.js shows the minute in the browser's own time zone (the operator's), and
the title keeps the exact value (microseconds, UTC) that the timelines and the incident pages quote.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def when(moment: datetime | None) -> str:
    if moment is None:
        return ""
    utc = moment.astimezone(UTC)
    return format_html('<time class="local" datetime="{}" title="{} UTC">{} UTC</time>',
                       utc.isoformat(), utc.strftime("%Y-%m-%d %H:%M:%S.%f"), utc.strftime("%Y-%m-%d %H:%M"))
