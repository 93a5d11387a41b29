"""The one place a test builds a whole wave on the fakes (a fake placement and file events in
simulated time, the real runner, stage, pool and coordinator): when the wave's context
changes, this module changes and its callers do not."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fakes.clock import FakeClock
from fakes.placement import FakePlacement, Script
from fakes.pool import FakeWatcher
from wave_orchestrator.coordination.follower import Coordinator
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.runtime.agent.plan import Planner
from wave_orchestrator.runtime.wave import stage
from wave_orchestrator.runtime.wave.context import WaveContext
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.layout import StateLayout


def wave_on_fakes(
    root: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    lane_yaml: str,
    wave_yaml: str,
    script: Callable[[str], Script] = lambda session: Script(),
    told: Callable[[dict[str, Any]], None] = lambda payload: None,
) -> tuple[WaveContext, FakePlacement, StateLayout]:
    """Lane ``sim`` (``lane_yaml``, wave 1 of ``wave_yaml``) under ``root``: the context a
    WaveRunner runs it in, its agents' sessions scripted by ``script``."""
    folder = root / "lanes" / "sim"
    (folder / "waves").mkdir(parents=True)
    (folder / "lane.yaml").write_text(lane_yaml)
    (folder / "waves" / "wave-1.yaml").write_text(wave_yaml)
    lane = load_lane(root, "sim")
    layout = StateLayout(lane.state_dir, "sim")
    placement = FakePlacement(clock, script)

    def watcher(agents_dir: Path) -> FakeWatcher:
        fake = FakeWatcher(clock, agents_dir, 10_000)
        placement.file_event = lambda agent_id, name: fake.events.put((agent_id, name))
        return fake

    monkeypatch.setattr(stage, "AgentFolderWatcher", watcher)
    events = EventLog(layout.events)
    coordinator = Coordinator(layout, events, told, echo=lambda text: None)
    ctx = WaveContext(
        lane,
        layout,
        placement,
        events,
        threading.Event(),
        Planner(lane, layout),
        False,
        coordinator,
    )
    return ctx, placement, layout
