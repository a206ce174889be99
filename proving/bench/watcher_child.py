"""`python -m proving.bench.watcher_child`: the rejected thread-per-folder watcher as a process of its own.

The baseline of `bench watcher`: the same folders, the same `on_new` (enqueue a poll on the `ingest` queue)
and the same IDLE cycle as the product's `manage.py watch_mailboxes`, but one thread and one connection per
folder (proving.variants.watch_thread_per_folder). Argument: the IDLE cycle in seconds. Runs until SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import threading


def main() -> None:
    import django

    django.setup()
    from inbound.tasks import enqueue_poll
    from proving.variants import watch_thread_per_folder

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    watch_thread_per_folder(
        stop,
        name=None,
        on_new=enqueue_poll,
        idle_seconds=float(sys.argv[1]) if len(sys.argv) > 1 else 300.0,
        say=lambda text: print(text, flush=True),
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
