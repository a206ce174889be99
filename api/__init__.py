"""The JSON API under /api/v1/ (django-ninja): routers, schemas, token auth, idempotency keys, rate limits."""
