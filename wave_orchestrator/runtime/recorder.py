"""What a finished agent leaves on the desk: the files it held, handed to whoever waits for
them with its last output line as the note. (Its metrics record: metrics_writer.)"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..state.events import EventLog
from .agent_pool import AgentRun
from .snapshot import last_line, tail_text

if TYPE_CHECKING:
    from ..desk.claims import Desk


def open_desk(path: Path, repo: Path, wave: int) -> Desk:
    """The SQLite desk, loaded only for waves whose agents share files."""
    from ..desk.claims import Desk

    return Desk(path, repo, wave)


def release_files(run: AgentRun, desk: Desk, events: EventLog, wave: int) -> None:
    """Hand every file the agent held to the next in its queue, with its last output line."""
    note = f"{run.id} finished ({run.state.outcome}); its last output: " + last_line(
        tail_text(run.launch.paths.output_log)
    )
    for done in desk.release_all(run.id, note):
        events.emit("desk_handover", wave, run.id, path=done.path, to=done.to_agent)
