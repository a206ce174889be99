"""The API's errors as its OpenAPI schema documents them: every status an operation can answer, each with the body
`{"detail": "<words>"}` (schemas.Error), and validation errors in that same shape.

Any operation can answer 400 (a body that is not JSON or too large, a control character in a path or query), 401
(no live token, with `WWW-Authenticate: Bearer`), 403 (the token's role), 422 (invalid input) and 429 (the token's
rate); one with a path parameter 404; a POST 409 (the domain refuses, or a concurrent write won). The generated
schema gets each of those that an operation does not declare itself, so the schema and the answers cannot drift.

And any operation 414, which is not the API's: the web server refuses a request line longer than it takes
(gunicorn: 4094 bytes, its `--limit-request-line`) with a page of its own, before any view runs.
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

ERROR_REF = {"$ref": "#/components/schemas/Error"}
WORDS = {400: "Bad request: the body is not JSON or too large, or a path or query holds a control character",
         401: "No live API token (the answer carries `WWW-Authenticate: Bearer`)",
         403: "The token's role does not include this endpoint",
         404: "Not found",
         409: "Refused by the domain (already enrolled, suppressed, nothing to resume) or a concurrent write",
         422: "Invalid input, or an Idempotency-Key reused with another body",
         429: "Over the token's rate (see Retry-After)"}
URI_TOO_LONG = {"description": "The request line is longer than the web server takes (its own HTML page)",
                "content": {"text/html": {"schema": {"type": "string"}}}}


def statuses_for(method: str, path: str) -> list[int]:
    statuses = [400, 401, 403, 422, 429]
    if "{" in path:
        statuses.append(404)
    if method == "post":
        statuses.append(409)
    return sorted(statuses)


class DocumentedErrorsAPI(NinjaAPI):
    """A NinjaAPI whose schema documents every error status its operations answer."""

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                responses = operation.setdefault("responses", {})
                for status in statuses_for(method, path):
                    if status in responses or str(status) in responses:  # ninja's own keys are integers
                        continue
                    responses[status] = ({
                        "description": WORDS[status],
                        "content": {"application/json": {"schema": ERROR_REF}}})
                responses.setdefault(414, URI_TOO_LONG)
        return schema


def validation_detail(errors: list[dict[str, Any]]) -> str:
    """Pydantic's list of errors as one line of words: `body.email: Field required; query.limit: ...`."""
    parts = []
    for error in errors[:20]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body" or len(error.get("loc", ())) == 1)
        parts.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid input"
