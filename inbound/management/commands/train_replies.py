"""Train the learned reply classifier again from the shipped labelled replies.

    python manage.py train_replies [--data FILE ...] [--check]

Without --data the shipped files are read (inbound/classify/learned/data/*.jsonl and the tests' labelled corpus);
the model is written to inbound/classify/learned/model.npz and model.json, and its version is printed. The same
data gives the same model. --check writes nothing: it says whether the shipped model was trained on the shipped
data as it is now (exit status 1 when not).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbound.classify.training import TrainingError, shipped_matches, train


class Command(BaseCommand):
    help = "Train the learned reply classifier from the shipped labelled replies."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--data", nargs="+", metavar="FILE", help="JSON Lines files of labelled replies")
        parser.add_argument("--check", action="store_true",
                            help="write nothing; exit 1 when the shipped model was trained on other data")

    def handle(self, *args: Any, **options: Any) -> None:
        sources = [Path(name) for name in options["data"] or []]
        for path in sources:
            if not path.is_file():
                raise CommandError(f"training file not found: {path}")
        if options["check"]:
            ok, words = shipped_matches(sources or None)
            if not ok:
                raise CommandError(f"{words}: run manage.py train_replies")
            self.stdout.write(f"The shipped model {words} was trained on the shipped data.")
            return
        try:
            meta = train(sources or None, progress=self.stdout.write)
        except TrainingError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Model {meta['version']}: {meta['trained_on']['items']} replies.")
