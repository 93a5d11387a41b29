"""Completion signals by file events: a status (or backoff) file appearing in an agent folder.

Only created/moved events are delivered, so other readers of the folder cost nothing. The
launcher also polls, so a missed event is never fatal.
"""

from __future__ import annotations

import queue
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...state.fsutil import ensure_dir

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

WATCHED_NAMES = frozenset({"status.json", "backoff.json"})


def _handler(sink: queue.Queue[tuple[str, str]]) -> Any:
    """The watchdog handler, built on first use: watchdog loads only when a wave runs
    (dry runs and read-only commands start faster without it)."""
    from watchdog.events import FileMovedEvent, FileSystemEvent, FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            target = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
            path = Path(target if isinstance(target, str) else target.decode())
            if path.name in WATCHED_NAMES:
                sink.put((path.parent.name, path.name))

    return Handler()


class AgentFolderWatcher:
    """Watches ``agents/`` of one wave; ``get(timeout)`` yields (agent id, file name)."""

    def __init__(self, agents_dir: Path) -> None:
        self.agents_dir = agents_dir
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        self._observer: BaseObserver | None = None

    def start(self) -> bool:
        """Start watching (if not already: a wave's stages share one watch); False when the
        system allows no more watches (the inotify limit): the launcher's polling still
        notices everything, a little later."""
        if self._observer is not None:
            return True
        from watchdog.events import FileCreatedEvent, FileMovedEvent
        from watchdog.observers import Observer
        from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

        # watchdog holds each rename's "moved from" half up to 0.5 s to pair it with its "moved
        # to", and its queue sleeps that long on one at its head: every event behind it waits,
        # and each atomic write in these folders (wave's and the wrappers') is a rename. Unpaired,
        # the "moved to" of a status file arrives at once as a created event, which is all the
        # launcher needs (measured: 0.2 s stalls during a 200-agent launch; docs/performance.md).
        InotifyMoveEventGrouper.delay = 0

        ensure_dir(self.agents_dir)
        observer = Observer()
        observer.schedule(
            _handler(self.events),
            str(self.agents_dir),
            recursive=True,
            event_filter=[FileCreatedEvent, FileMovedEvent],
        )
        observer.daemon = True
        try:
            observer.start()
        except OSError:
            return False
        self._observer = observer
        return True

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None

    def get(self, timeout: float) -> tuple[str, str] | None:
        try:
            return self.events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def drain(self) -> list[tuple[str, str]]:
        out = []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                return out
