"""Refuse paths and query strings no page can use: a clear 400 instead of a database error deep in a view."""

from __future__ import annotations

import re

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

# NUL (PostgreSQL refuses it in text) and the other C0 control characters but tab, newline, return;
# U+FFFD is what Django decodes bytes that are not UTF-8 to.
INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


class RejectInvalidQueryMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A path carries values too (/api/v1/contacts/<email>, /api/v1/timeline/<email>).
        if INVALID.search(request.path):
            return HttpResponseBadRequest("Bad request: the path holds a control character or bytes that are not "
                                          "UTF-8.\n", content_type="text/plain; charset=utf-8")
        for key, values in request.GET.lists():
            if INVALID.search(key) or any(INVALID.search(value) for value in values):
                return HttpResponseBadRequest(
                    f"Bad request: the query parameter {key_text(key)} holds a control character or bytes that "
                    "are not UTF-8.\n", content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def key_text(key: str) -> str:
    return repr(INVALID.sub("?", key)[:40])
