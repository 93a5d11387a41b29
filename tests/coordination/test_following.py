"""The launcher follows a growing coordination log: only what was appended is read, and only
the inboxes of the agents a new item concerns are written again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from wave_orchestrator.coordination.follower import Coordinator
from wave_orchestrator.coordination.log import CoordLog, LogFollower
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.layout import StateLayout


class Quiet:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_refresh_reads_only_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "wave-1.jsonl"
    log, follower = CoordLog(path, 1), LogFollower(path, 1)
    first = log.post(kind="evidence", summary="one", agent="A")
    assert follower.refresh() is None  # the first read is a whole read
    second = log.post(kind="request", summary="two", agent="A", targets=["B"])
    with path.open("a") as fh:
        fh.write('{"id": "c-00000000000000ff", "kind": "ev')  # a line still being written
    assert follower.refresh() == {second}
    with path.open("a") as fh:
        fh.write('idence", "summary": "three", "agent": "A", "wave": 1}\n')
    assert follower.refresh() == {"c-00000000000000ff"}  # the line once whole
    log.update(first, status="resolved")
    assert follower.refresh() == {first}
    assert follower.records[first].status == "resolved"
    assert list(follower.records) == list(log.records())
    os.replace(path, tmp_path / "old.jsonl")  # a new run's fresh log
    fresh = log.post(kind="decision", summary="four", agent="B")
    assert follower.refresh() is None and list(follower.records) == [fresh]


def test_a_post_rewrites_only_the_inboxes_it_concerns(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    owners = {f"A{n}": (f"src/a{n}/",) for n in range(50)}
    coordinator = Coordinator(layout, EventLog(tmp_path / "events.jsonl"), Quiet())
    log = CoordLog(layout.coordination_log(1), 1)
    for n in range(300):
        log.post(kind="evidence", summary=f"old {n}", agent=f"A{n % 50}")
    coordinator.begin(1, owners)
    inbox = {a: layout.inbox(1, a) for a in owners}
    before = {a: p.stat().st_mtime_ns for a, p in inbox.items()}
    rid = log.post(
        kind="request",
        summary="expose GET /items",
        agent="A1",
        targets=["A2"],
        artifacts=["src/a3/api.py"],
    )
    assert coordinator.tick()
    coordinator.flush()  # drawn at most twice a second: now
    rewritten = {a for a, p in inbox.items() if p.stat().st_mtime_ns != before[a]}
    assert rewritten == {"A1", "A2", "A3"}  # the poster, the target, the owner of the file
    for agent in ("A2", "A3"):
        assert rid in inbox[agent].read_text() and rid in coordinator.prompt_context(agent)
    assert rid not in inbox["A4"].read_text()
    guide = log.post(kind="guidance", summary="no new deps", agent="human", source="human")
    coordinator.tick()
    coordinator.flush()
    assert all(guide in p.read_text() for p in inbox.values())  # for everyone: every inbox


def test_a_question_reaches_a_person_through_the_tell_the_launcher_passed(
    tmp_path: Path,
) -> None:
    """The follower owns no notifier: a new question goes, once, to the ``tell`` it was
    given (the launcher's sinks) and is printed through ``echo``."""
    from wave_orchestrator.coordination.feedback import FeedbackStore

    layout = StateLayout(tmp_path / "state", "main")
    told: list[dict[str, Any]] = []
    printed: list[str] = []
    events = EventLog(tmp_path / "events.jsonl")
    coordinator = Coordinator(layout, events, told.append, echo=printed.append)
    coordinator.begin(1, {"A": ("src/",)})
    asked = FeedbackStore(layout.feedback, "main", layout.coordination_log).ask(
        1, "A", "which database?"
    )
    assert coordinator.tick()
    coordinator.tick()  # nothing new: told once
    assert [(d["kind"], d["id"], d["reason"]) for d in told] == [
        ("question", asked.id, "which database?")
    ]
    assert "A asks" in printed[0] and asked.id in printed[0]
    assert coordinator.waiting_human() == frozenset()  # asked without waiting
    coordinator.tell_person({"kind": "usage-limit"})  # the pool's way to a person
    assert told[-1] == {"kind": "usage-limit"}
