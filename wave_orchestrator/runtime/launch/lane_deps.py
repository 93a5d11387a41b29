"""Waves that wait on other lanes: ``depends_on_lanes: [infra:2]`` holds a wave until wave 2
of lane ``infra`` (in the same repository) is recorded completed in that lane's ledger, by the
launcher that ran it. Its run-state.json, which any agent can write, is only shown: a wave it
alone calls completed is still waited for, and the wait says why. A dependency that failed is
waited on as well (someone may run it again); `wave stop` ends the wait."""

from __future__ import annotations

import threading
from pathlib import Path

from ...definitions.model import WaveDef
from ...definitions.repository.lanes import read_lane_header
from ...state.layout import StateLayout, resolve_state_dir
from ...state.ledger import ledger_path, read_ledger
from ...state.logs import Logger
from ...state.run_state import RunState

log = Logger(__name__)

POLL_SECONDS = 1.0


def lane_wave_state(repo: Path, lane: str, number: int) -> str:
    """The state another lane's launcher recorded for one of its waves ("pending" when it
    recorded none, or its ledger cannot be read)."""
    view = read_ledger(ledger_path(repo, lane))
    return (view.wave_state(number) if view else None) or "pending"


def said_completed(repo: Path, lane: str, number: int) -> bool:
    """Whether the lane's run-state.json (a view anyone can write) calls the wave completed."""
    header = read_lane_header(repo, lane)
    layout = StateLayout(resolve_state_dir(repo, lane, header.state_dir), lane, repo=repo)
    return RunState(layout.run_state, lane).state_of(number) == "completed"


def waiting_for(wave: WaveDef, repo: Path) -> str | None:
    """``lane <l> wave <n>`` of the first dependency not completed yet (None: all are)."""
    for lane, number in wave.depends_on_lanes:
        if lane_wave_state(repo, lane, number) != "completed":
            if said_completed(repo, lane, number):
                return (
                    f"lane {lane} wave {number} (its run-state.json says completed, but no "
                    "launcher recorded it so: run it again)"
                )
            return f"lane {lane} wave {number}"
    return None


def wait_for_lanes(wave: WaveDef, repo: Path, run_state: RunState, stop: threading.Event) -> bool:
    """Hold the wave until every lane wave it depends on completed, recording what it waits
    for in run-state.json (``wave status`` shows it); False when stopped meanwhile."""
    told = None
    while (blocker := waiting_for(wave, repo)) is not None:
        if blocker != told:
            log.info("wave waits", wave=wave.number, waiting_for=blocker)
            run_state.set_waiting(wave.number, blocker)
            told = blocker
        if stop.wait(POLL_SECONDS):
            run_state.set_waiting(wave.number, None)
            return False
    if told is not None:
        run_state.set_waiting(wave.number, None)
    return True
