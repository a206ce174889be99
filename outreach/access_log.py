"""gunicorn's access log without the secrets a query string can carry (outreach.secret_queries): `--logger-class
outreach.access_log.AccessLog` (Procfile, deploy/outreach-web.service).
"""

from __future__ import annotations

from gunicorn.glogging import Logger

from .secret_queries import HIDDEN, redacted, secret_query


class AccessLog(Logger):
    """gunicorn's logger, its access log fed a redacted request target, query string and Referer."""

    def atoms(self, resp, req, environ, request_time):
        raw_uri, referer = environ.get("RAW_URI", ""), environ.get("HTTP_REFERER", "")
        hidden = {}
        if secret_query(raw_uri):
            hidden |= {"RAW_URI": redacted(raw_uri), "QUERY_STRING": HIDDEN}
        if referer and secret_query(referer):
            hidden["HTTP_REFERER"] = redacted(referer)
        atoms = super().atoms(resp, req, environ | hidden, request_time)
        if "HTTP_REFERER" in hidden:
            atoms["{referer}i"] = hidden["HTTP_REFERER"]  # the header atoms are read from the request, not environ
        return atoms
