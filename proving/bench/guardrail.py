"""What the deliverability guardrail costs where a hard bounce is recorded, next to the same record without it.

A mailbox has N messages sent within its window (step 1 an hour ago, step 2
queued: `data.followups_create`). The product run records B hard bounces,
one `suppression_add` each: the ledger entry, the stop of the person's
enrollments, and `guardrail_record` (one signal row, two counts on the signal index, and a count of the window's sends
bounded by what could still cross the limit: `guardrail_may_cross`). The baseline, in the same run, records B
manual suppressions of other people of the same mailbox through the same
service: the ledger entry and the same stop, without the guardrail. The
limits are set out of reach, so nothing pauses and every call pays the full
evaluation.
"""

from __future__ import annotations

import time
from typing import Any

from proving.bench.stats import ratio, summary_ms, table
from proving.harness import data


def _timed(calls) -> list[float]:
    seconds = []
    for call in calls:
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def run(ctx) -> dict[str, Any]:
    from mailboxes.models import Mailbox
    from sequences.models import Enrollment
    from sequences.sending_mailbox import sends_from
    from sequences.services.guardrails import guardrail_figures, guardrail_may_cross
    from sequences.services.suppressions import suppression_add

    sends, bounces = ctx.options["guardrail_sends"], ctx.options["bounces"]
    ctx.reset()
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="guardrail")
    Mailbox.objects.filter(pk=mailbox.pk).update(guardrail_bounce_rate=100.0, guardrail_complaint_rate=100.0)
    sequences = data.sequences_create([mailbox])
    ctx.say(f"guardrail: {sends:,} sends in the window")
    data.followups_create(sends, sequences=sequences, tag="guardrail")
    ctx.analyze()
    emails = list(
        Enrollment.objects.filter(sends_from(mailbox.pk))
        .order_by("id")
        .values_list("contact__email", flat=True)[: 2 * bounces]
    )
    ctx.say(f"guardrail: {bounces} manual suppressions (baseline), then {bounces} hard bounces (product)")
    baseline = _timed(
        lambda e=e: suppression_add(value=e, reason="manual", note="bench") for e in emails[bounces:]
    )
    product = _timed(lambda e=e: suppression_add(value=e, reason="hard_bounce") for e in emails[:bounces])
    mailbox.refresh_from_db()
    figures = guardrail_figures(mailbox)
    counted = _timed([lambda: guardrail_figures(mailbox)] * bounces)
    bounded = _timed([lambda: guardrail_may_cross(mailbox)] * bounces)
    result = {
        "sends_in_window": sends,
        "bounces": bounces,
        "baseline_suppression": summary_ms(baseline),
        "product_hard_bounce": summary_ms(product),
        "figures_alone": summary_ms(counted),
        "bounded_check_alone": summary_ms(bounded),
        "figures": figures.as_dict(),
        "paused": mailbox.paused,
    }
    b, p, f = result["baseline_suppression"], result["product_hard_bounce"], result["figures_alone"]
    c = result["bounded_check_alone"]
    result["tables"] = [
        table(
            f"guardrail: recording a hard bounce with {sends:,} sends in the mailbox's window",
            ["record", "n", "p50 ms", "p99 ms", "mean ms"],
            [
                ("manual suppression + stop (baseline)", b["n"], b["p50_ms"], b["p99_ms"], b["mean_ms"]),
                ("hard bounce + stop + guardrail (product)", p["n"], p["p50_ms"], p["p99_ms"], p["mean_ms"]),
                ("the bounded check alone (what a bounce runs)", c["n"], c["p50_ms"], c["p99_ms"], c["mean_ms"]),
                (
                    "the full counts alone (only when a limit is crossed)",
                    f["n"],
                    f["p50_ms"],
                    f["p99_ms"],
                    f["mean_ms"],
                ),
            ],
            [
                f"product ÷ baseline, p50: {ratio(p['p50_ms'], b['p50_ms'])}; "
                f"mean: {ratio(p['mean_ms'], b['mean_ms'])}.",
                f"counted at the end: {figures.sends:,} sends, {figures.hard_bounces} hard bounces in "
                f"{figures.window_days} days; limits out of reach, so nothing paused ({mailbox.paused=}).",
                "each record is its own durable transaction, in one process against the bench database.",
            ],
        )
    ]
    return result
