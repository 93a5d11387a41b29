"""Waves that wait on other lanes (issue 24 §5): ``depends_on_lanes: [infra:2]`` holds a wave
until wave 2 of lane ``infra`` (in the same repository) is recorded completed in that lane's
run-state.json. A dependency that failed is waited on as well (someone may run it again);
`wave stop` ends the wait."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..definitions.model import WaveDef
from ..definitions.repository import read_lane_header
from ..state.layout import StateLayout, resolve_state_dir
from ..state.run_state import RunState

POLL_SECONDS = 1.0


def lane_wave_state(repo: Path, lane: str, number: int) -> str:
    """The state another lane's run-state.json records for one of its waves ("pending" when
    it has none, or none can be read)."""
    header = read_lane_header(repo, lane)
    layout = StateLayout(resolve_state_dir(repo, lane, header.state_dir), lane, repo=repo)
    return RunState(layout.run_state, lane).state_of(number)


def waiting_for(wave: WaveDef, repo: Path) -> str | None:
    """``lane <l> wave <n>`` of the first dependency not completed yet (None: all are)."""
    for lane, number in wave.depends_on_lanes:
        if lane_wave_state(repo, lane, number) != "completed":
            return f"lane {lane} wave {number}"
    return None


def wait_for_lanes(
    wave: WaveDef, repo: Path, run_state: RunState, stop: threading.Event, log: Any
) -> bool:
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
