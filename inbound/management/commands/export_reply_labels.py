"""Write the replies operators labelled, in the labelled corpus's format (JSON Lines), to score and retrain on.

    python manage.py export_reply_labels [--output FILE] [--since YYYY-MM-DD]

One line a labelled reply: ``id`` ("label-<n>"), ``language`` (as the suggestion read it), ``expected`` (the
operator's category), ``split`` ("install"), ``text`` (the person's new text) and ``note`` (relabel or review,
who, when, what had been suggested). A reply labelled more than once gives its latest label. Replies whose text
was erased give nothing. Score with ``manage.py bench_replies --corpus FILE``; add the file to the training data
with ``manage.py train_replies --data inbound/classify/learned/data/*.jsonl FILE``.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbound.classify.intent import language_of, new_text
from inbound.models import ReplyLabel


class Command(BaseCommand):
    help = "Write the replies operators labelled as JSON Lines (the labelled corpus's format)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--output", default="-", help="a file to write (default: stdout)")
        parser.add_argument("--since", help="only labels given on or after this day (YYYY-MM-DD)")

    def handle(self, *args: Any, output: str, since: str | None, **options: Any) -> None:
        labels = ReplyLabel.objects.select_related("inbound").order_by("inbound_id", "-id")
        if since:
            try:
                labels = labels.filter(created_at__date__gte=date.fromisoformat(since))
            except ValueError:
                raise CommandError(f"--since {since!r}: give a day as YYYY-MM-DD") from None
        lines, seen = [], set()
        for label in labels.iterator():
            text = new_text(label.inbound.reply_text)
            if label.inbound_id in seen or not text:
                continue
            seen.add(label.inbound_id)
            lines.append(json.dumps({
                "id": f"label-{label.pk}", "language": language_of(text), "expected": label.category,
                "split": "install", "text": text,
                "note": f"{label.origin} by {label.actor} on {label.created_at:%Y-%m-%d}"
                        + (f"; suggested {label.suggested}" if label.suggested else ""),
            }, ensure_ascii=False))
        body = "".join(line + "\n" for line in lines)
        if output == "-":
            sys.stdout.write(body)
        else:
            with open(output, "w", encoding="utf-8") as out:
                out.write(body)
            self.stderr.write(f"wrote {len(lines)} labelled replies to {output}")
