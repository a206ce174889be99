"""Request lines in the logs without the secrets a query string can carry.

The OAuth sign-in comes back to CALLBACK_PATH with the provider's one-time code and our state in the query; a
line per request in an access log (gunicorn's, the development server's) would keep both wherever logs go. So the
query of a request to that path, of a request whose query names it (the login page's `next`, when the session
ended during the sign-in), and of a Referer that is either, is logged as "?[not logged]". Every other request line
is logged as it came.

gunicorn: outreach.access_log. The development server: `SecretQueryFilter` on the `django.server` logger (LOGGING
in outreach/settings.py), which every process configures at its start: this module loads nothing heavier than
the standard library.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote_plus, urlsplit

from mailboxes.callback import CALLBACK_PATH

SECRET_QUERY_PATHS = (CALLBACK_PATH,)
HIDDEN = "[not logged]"


def secret_query(uri: str) -> bool:
    """Whether the query of a request target or a Referer may carry a secret: the URI goes to one of
    SECRET_QUERY_PATHS, or its query names one."""
    parts = urlsplit(uri)
    if not parts.query:
        return False
    query = unquote_plus(parts.query)
    return parts.path in SECRET_QUERY_PATHS or any(path in query for path in SECRET_QUERY_PATHS)


def redacted(uri: str) -> str:
    """The URI as a log may keep it: its query replaced by HIDDEN when it may carry a secret."""
    return f"{uri.partition('?')[0]}?{HIDDEN}" if secret_query(uri) else uri


def redacted_line(line: str) -> str:
    """A request line ("GET /path?query HTTP/1.1") with its target redacted."""
    parts = line.split(" ")
    return " ".join([parts[0], redacted(parts[1]), *parts[2:]]) if len(parts) >= 2 else line


class SecretQueryFilter(logging.Filter):
    """For the development server's line per request (`django.server`): its request line redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args and isinstance(record.args[0], str):
            record.args = (redacted_line(record.args[0]), *record.args[1:])
        return True
