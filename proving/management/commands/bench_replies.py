"""Score the suggested category of replies (the replies inbox) against a labelled corpus.

    python manage.py bench_replies [--corpus PATH] [--json OUT] [--show-misses]

Without --corpus the corpus shipped with the tests is scored (tests/inbound/reply_categories/corpus.jsonl);
another file of the same format (JSON Lines: text, expected, and optionally id, language, split, note) scores
a held-out set. Pure: nothing here touches the database or the network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from proving.bench.replies import CorpusError, format_report, run
from proving.jsonout import json_target

DEFAULT_CORPUS = Path(settings.BASE_DIR) / "tests" / "inbound" / "reply_categories" / "corpus.jsonl"


class Command(BaseCommand):
    help = "Score the suggested reply categories on a labelled corpus of replies."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="JSON Lines file of labelled replies")
        parser.add_argument("--json", dest="json_out", help="write all figures to this JSON file")
        parser.add_argument("--show-misses", action="store_true", help="list every disagreement")

    def handle(self, *args: Any, **options: Any) -> None:
        json_out = json_target(options["json_out"])
        try:
            result = run(Path(options["corpus"]))
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(format_report(result, show_misses=options["show_misses"]))
        if json_out:
            json_out.write_text(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False))
            self.stdout.write(f"JSON written to {options['json_out']}")
