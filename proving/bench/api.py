"""What the API and the webhook outbox cost, each next to its baseline in the same run.

1. One enrollment per call: `POST /api/v1/enrollments` through Django's whole
   stack in process (middleware, token lookup, Redis rate count, idempotency
   key claimed and its answer stored, validation, presenting the
   jobs with their labels) next to the same service called directly
   (`enrollment_create_from_row`, what the endpoint calls).
2. The outbox: N enrollment stops (two timeline events each) with no webhook
   endpoint next to three endpoints subscribed to every event (a delivery row
   per endpoint for each `enrollment.stopped`, written in the stop's
   transaction; nothing is sent: delivery is an RQ job after commit).
"""

from __future__ import annotations

import json
import time
from typing import Any

from proving.bench.stats import ratio, table
from proving.harness import data


def _enroll_direct(sequence, n: int) -> float:
    from api.contacts import contact_row, enrollment_create_from_row

    started = time.perf_counter()
    for i in range(n):
        row = contact_row({"email": f"direct{i}@api.bench", "first_name": f"D{i}", "company": "Bench"})
        enrollment_create_from_row(sequence_id=sequence.pk, row=row, update_contact=False, actor="bench")
    return time.perf_counter() - started


def _enroll_api(sequence, n: int) -> tuple[float, dict[int, int]]:
    from django.test import Client

    from api.tokens import MAX_RATE_PER_MINUTE, api_token_create

    _, token = api_token_create(name="bench", role="operator", rate_per_minute=MAX_RATE_PER_MINUTE)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    statuses: dict[int, int] = {}
    started = time.perf_counter()
    for i in range(n):
        body = json.dumps({"sequence_id": sequence.pk, "email": f"api{i}@api.bench", "first_name": f"A{i}",
                           "company": "Bench"})
        response = client.post("/api/v1/enrollments", body, content_type="application/json", secure=True,
                               HTTP_IDEMPOTENCY_KEY=f"bench-{i}")
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
    return time.perf_counter() - started, statuses


def _stops(sequence, n: int, tag: str) -> float:
    from sequences.models import Enrollment
    from sequences.services.enrollments import ContactRow, enrollments_create_batch
    from sequences.services.stops import enrollment_stop

    rows = [ContactRow(line=i, email=f"{tag}{i}@api.bench", first_name="Bench", company="Bench") for i in range(n)]
    enrollments_create_batch(sequence_id=sequence.pk, rows=rows)
    ids = list(Enrollment.objects.filter(sequence=sequence, contact__email__startswith=tag)
               .order_by("id").values_list("id", flat=True))
    started = time.perf_counter()
    for enrollment_id in ids:
        enrollment_stop(enrollment_id=enrollment_id, reason="operator")
    return time.perf_counter() - started


def run(ctx) -> dict[str, Any]:
    from sequences.models import Enrollment
    from sequences.webhooks_out.events import WebhookEvent
    from sequences.webhooks_out.models import WebhookDelivery, WebhookEndpoint

    n = ctx.options["api_calls"]
    ctx.reset()
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="api")
    direct_seq = data.sequence_create(mailbox=mailbox, name="bench-api-direct", waits=(0, 86400))
    api_seq = data.sequence_create(mailbox=mailbox, name="bench-api-http", waits=(0, 86400))
    ctx.say(f"api: {n:,} enrollments through the service")
    direct = _enroll_direct(direct_seq, n)
    ctx.say(f"api: {n:,} enrollments through POST /api/v1/enrollments")
    through_api, statuses = _enroll_api(api_seq, n)

    stop_seq = data.sequence_create(mailbox=mailbox, name="bench-api-stops", waits=(0, 86400))
    ctx.say(f"api: {n:,} stops without webhook endpoints")
    bare = _stops(stop_seq, n, "bare")
    for i in range(3):
        WebhookEndpoint.objects.create(url=f"https://hooks{i}.bench.invalid/", secret_env="OUTREACH_SECRET_BENCH",
                                       event_types=[e.value for e in WebhookEvent])
    ctx.say(f"api: {n:,} stops with three endpoints subscribed to everything")
    hooked = _stops(stop_seq, n, "hooked")
    outbox_rows = WebhookDelivery.objects.count()

    result = {
        "calls": n,
        "enroll_direct": {"seconds": round(direct, 3), "per_s": round(n / direct, 1),
                          "ms_per_call": round(direct * 1000 / n, 2)},
        "enroll_api": {"seconds": round(through_api, 3), "per_s": round(n / through_api, 1),
                       "ms_per_call": round(through_api * 1000 / n, 2), "statuses": statuses,
                       "enrolled": Enrollment.objects.filter(sequence=api_seq).count()},
        "stops_no_endpoint": {"seconds": round(bare, 3), "ms_per_stop": round(bare * 1000 / n, 2)},
        "stops_three_endpoints": {"seconds": round(hooked, 3), "ms_per_stop": round(hooked * 1000 / n, 2),
                                  "outbox_rows": outbox_rows},
    }
    d, a = result["enroll_direct"], result["enroll_api"]
    s0, s3 = result["stops_no_endpoint"], result["stops_three_endpoints"]
    result["tables"] = [table(
        f"api: {n:,} calls each, in one process against the bench database",
        ["measured", "calls", "seconds", "ms per call"],
        [("enroll: the service directly (baseline)", n, d["seconds"], d["ms_per_call"]),
         ("enroll: POST /api/v1/enrollments with a key", n, a["seconds"], a["ms_per_call"]),
         ("stop: no webhook endpoint (baseline)", n, s0["seconds"], s0["ms_per_stop"]),
         ("stop: three endpoints, outbox rows written", n, s3["seconds"], s3["ms_per_stop"])],
        [f"API ÷ service time per enrollment: {ratio(a['seconds'], d['seconds'])} (answers: {statuses}).",
         f"stop with the outbox ÷ without: {ratio(s3['seconds'], s0['seconds'])}; {outbox_rows:,} delivery rows "
         "written (one per endpoint per enrollment.stopped), none sent.",
         "the API run includes the token lookup, the Redis rate count, the idempotency lock and stored answer, "
         "and the labelled response."])]
    return result
