"""What a finished agent leaves on the desk: the files it held, handed to whoever waits for
them with its report as the note (how it ended, the files it changed), and at wave end the
shared files that changed without anyone checking them out. (Its metrics record:
metrics_writer.)"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...definitions.model import WaveDef
from ...state.events import EventLog
from ...state.lifecycle import AgentState
from ..agent.run import AgentRun
from .snapshot import last_line, tail_text

if TYPE_CHECKING:
    from ...coordination.follower import Coordinator
    from ...desk.claims import Desk


def open_desk(path: Path, repo: Path, wave: int) -> Desk:
    """The SQLite desk, loaded only for waves whose agents share files."""
    from ...desk.claims import Desk

    return Desk(path, repo, wave)


def release_files(
    run: AgentRun, desk: Desk, events: EventLog, wave: int, coordinator: Coordinator
) -> None:
    """Hand every file the agent held to the next in its queue, with the holder's report:
    whether it completed, the files it changed and its last words."""
    held = [path for path, _ in desk.mine(run.id).held]
    changed = changed_files(run, held)
    completed = "completed" if run.state is AgentState.COMPLETED else run.state.outcome
    note = (
        f"{run.id} finished: {completed}; files changed: {', '.join(changed) or 'none'}; "
        f"its last output: {last_line(tail_text(run.launch.paths.output_log))}"
    )
    for done in desk.release_all(run.id, note):
        events.emit("desk_handover", wave, run.id, path=done.path, to=done.to_agent)
        if done.to_agent:
            coordinator.resolve_desk_wait(done.path, done.to_agent)


def changed_files(run: AgentRun, held: Sequence[str]) -> list[str]:
    """Of the files the agent held or owns, those written since it was launched."""
    since = (run.launched_wall or 0) - 1
    repo = run.launch.lane.repo
    found = []
    for rel in dict.fromkeys([*held, *(p for p in run.launch.agent.owns if not p.endswith("/"))]):
        try:
            if os.lstat(repo / rel).st_mtime >= since:
                found.append(rel)
        except OSError:
            continue
    return found


def unenforced_checkouts(
    desk: Desk | None, wave: WaveDef, repo: Path, since: float
) -> list[tuple[str, list[str]]]:
    """Shared files of the wave that changed since it started while nobody checked them out
    on the desk: (path, the agents that own it). None without a desk (nothing is shared)."""
    if desk is None:
        return []
    owners: dict[str, list[str]] = {}
    for agent in wave.agents:
        for path in agent.owns:
            owners.setdefault(path, []).append(agent.id)
    shared = {*wave.shared, *(p for p, who in owners.items() if len(who) > 1)}
    claimed = desk.claimed_paths()
    found = []
    for path in sorted(p for p in shared if not p.endswith("/") and p not in claimed):
        try:
            changed = os.lstat(repo / path).st_mtime >= since
        except OSError:
            continue
        if changed:
            found.append((path, owners.get(path, [])))
    return found
