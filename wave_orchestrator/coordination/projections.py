"""A wave's board, shared summary and inboxes, redrawn from the items of its coordination log.

An index of which items may concern which agent lets a post redraw the inboxes it touches,
not every inbox, and lets a prompt read one agent's items without going over the whole log.
Writes are best effort: a board that cannot be written never stops a wave.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from typing import Any

from ..sanitize import one_line as clean
from ..state.events import utc_now
from ..state.fsutil import write_atomic
from ..state.layout import StateLayout
from ..state.logs import Logger
from .log import CoordRecord
from .views import (
    InboxOwner,
    board,
    for_everyone,
    inbox,
    inbox_items,
    newest_first,
    open_blockers,
    open_requests,
    shared_summary,
)

log = Logger(__name__)
PROJECTION_SECONDS = 1.0  # board, summary and inboxes redrawn at most this often
Records = Mapping[str, CoordRecord]


class Projections:
    """One wave's projections: which agent each item may concern, and what is left to draw."""

    def __init__(
        self, layout: StateLayout, wave: int, owners: Mapping[str, tuple[str, ...]]
    ) -> None:
        self.layout = layout
        self.wave = wave
        self.owners = owners
        self.owned: dict[str, set[str]] = {}  # an owned path -> the agents that own it
        for agent, paths in owners.items():
            for path in paths:
                self.owned.setdefault(path.rstrip("/"), set()).add(agent)
        self.index: dict[str, set[str]] = {}  # agent -> ids of items that may concern it
        self.everyone: set[str] = set()  # ids of items for every agent
        self.summary = ""
        self.open: dict[str, Any] = {"blockers": [], "requests": []}
        self.affected: set[str] | None = set()  # inboxes to redraw (None: every one)
        self.stale = False  # projections to write
        self.next_drawing = 0.0

    def note(self, records: Records, changed: set[str] | None) -> None:
        """Items changed (``None``: every item, the index built again): index them and mark
        what they touch to be drawn."""
        affected = self._index_changes(records, changed)
        if changed is None or changed:
            self.stale = True
            if affected is None or self.affected is None:
                self.affected = None
            else:
                self.affected |= affected

    def flush(self, records: Records, now: bool = False) -> None:
        """Write the projections of what changed, at most once per ``PROJECTION_SECONDS``:
        at 50 posts a second the board is redrawn once a second, not fifty times."""
        if not self.stale or (not now and time.monotonic() < self.next_drawing):
            return
        self._write(records, self.affected)
        self.affected, self.stale = set(), False
        self.next_drawing = time.monotonic() + PROJECTION_SECONDS

    def inbox(self, records: Records, agent: str) -> tuple[bool, str]:
        """Whether the agent's inbox holds anything, and its text, from the index."""
        ids = self.index.get(agent, set()) | self.everyone
        mine = {rid: records[rid] for rid in ids if rid in records}
        owner = InboxOwner(agent, self.owners.get(agent, ()))
        return bool(inbox_items(owner, mine)), inbox(owner, mine)

    def _concerned(self, record: CoordRecord) -> set[str] | None:
        """The agents whose inbox an item may be in (None: every agent's)."""
        if for_everyone(record):
            return None
        who = {t for t in record.targets if t in self.owners}
        if record.agent in self.owners:
            who.add(record.agent)
        for path in record.artifacts:  # each folder on its way, looked up: not every owner
            parts = path.split("/")
            for n in range(1, len(parts) + 1):
                who |= self.owned.get("/".join(parts[:n]), set())
        return who

    def _index_changes(self, records: Records, changed: set[str] | None) -> set[str] | None:
        """Note which agents the changed items concern (``None``: all items, the index built
        again); returns the agents whose inbox changed (``None``: every agent's)."""
        if changed is None:
            self.index, self.everyone = {}, set()
        everyone, affected = changed is None, set()
        for rid in records if changed is None else changed:
            record = records.get(rid)
            who = self._concerned(record) if record is not None else set()
            if who is None:
                self.everyone.add(rid)
                everyone = True
                continue
            for agent in who:
                self.index.setdefault(agent, set()).add(rid)
            affected |= who
        return None if everyone else affected

    def _write(self, records: Records, affected: set[str] | None) -> None:
        """Board and shared summary anew, and the inboxes of ``affected`` (None: all)."""
        ordered = newest_first(records.values())  # sorted once; the views keep the order
        self.summary = shared_summary(ordered)
        requests = (r for r in open_requests(ordered) if r.kind != "human-feedback")  # questions
        self.open = {
            "blockers": [_brief(r) for r in open_blockers(ordered)[:10]],
            "requests": [_brief(r) for r in itertools.islice(requests, 10)],
        }
        lane, wave = self.layout.lane, self.wave
        try:
            write_atomic(self.layout.board(wave), board(lane, wave, ordered, utc_now()) + "\n")
            write_atomic(self.layout.shared_summary(wave), self.summary + "\n")
            for agent in self.owners if affected is None else affected & self.owners.keys():
                text = self.inbox(records, agent)[1]
                write_atomic(self.layout.inbox(wave, agent), text + "\n")
        except OSError as exc:
            log.warning("coordination: cannot write the board", error=str(exc))


def _brief(record: CoordRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "kind": record.kind,
        "agent": record.agent,
        "priority": record.priority,
        "summary": clean(record.summary)[:120],
    }
