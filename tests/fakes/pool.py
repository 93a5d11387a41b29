"""The one place a test or a benchmark builds an agent pool on the fakes: when the pool's
constructor changes, this module changes and its callers do not."""

from __future__ import annotations

import json
import queue
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.clock import FakeClock
from fakes.placement import FakePlacement, Script
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.runtime.agent.plan import Planner
from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.runtime.pool.context import PoolContext, PoolLimits, WaveShared
from wave_orchestrator.runtime.pool.loop import AgentPool
from wave_orchestrator.runtime.pool.watcher import AgentFolderWatcher
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.layout import StateLayout


class LoopRunaway(AssertionError):
    """The pool went on past every bound a test allows: a bug, never a wait."""


class FakeWatcher(AgentFolderWatcher):
    """The pool's file events in simulated time: a wait for one moves the clock to the next
    thing due (an agent's end, its output) instead of sleeping, and ends at the first event."""

    def __init__(self, clock: FakeClock, agents_dir: Path, max_turns: int) -> None:
        super().__init__(agents_dir)
        self.clock = clock
        self.max_turns = max_turns
        self.turns = 0  # waits the loop made: one per turn that found nothing to do at once

    def start(self) -> bool:
        return True

    def stop(self) -> None:
        return None

    def get(self, timeout: float) -> tuple[str, str] | None:
        self.turns += 1
        if self.turns > self.max_turns:
            raise LoopRunaway(f"the pool waited {self.turns} times without ending")
        if self.events.empty():
            until = self.clock.mono + max(0.0, timeout)
            self.clock.run_until(until, stop=lambda: not self.events.empty())
        try:
            return self.events.get_nowait()
        except queue.Empty:
            return None


LANE = "closure: {required_roles: []}\ndefaults: %s\n"


def plan_runs(
    root: Path,
    count: int,
    timeout_minutes: float = 1,
    depends_on: dict[str, list[str]] | None = None,
) -> list[AgentRun]:
    """``count`` agents ``A0``... of wave 1 of a lane under ``root``, planned and pending;
    ``depends_on``: the agents each waits for, by agent id."""
    defaults = {
        "executor": "local",
        "timeout_minutes": timeout_minutes,
        "max_retries_per_wave": 0,
        "launch_stagger_ms": 0,
    }
    command = {"local": {"command": "true"}}
    folder = root / "lanes" / "sim"
    (folder / "waves").mkdir(parents=True, exist_ok=True)
    (folder / "lane.yaml").write_text(LANE % json.dumps(defaults))
    rows, needs = [], depends_on or {}
    for i in range(count):
        agent: dict[str, Any] = {"id": f"A{i}", "prompt": "noop", "executor": command}
        if f"A{i}" in needs:
            agent["depends_on"] = needs[f"A{i}"]
        rows.append(json.dumps(agent))
    (folder / "waves" / "wave-1.yaml").write_text("agents:\n" + "".join(f"  - {r}\n" for r in rows))
    lane = load_lane(root, "sim")
    wave, planner = lane.wave(1), Planner(lane, StateLayout(lane.state_dir, "sim"))
    return [AgentRun(planner.plan(wave, a)) for a in wave.agents]


@dataclass
class Simulation:
    """A pool over fake agents, and what a test looks at afterwards."""

    pool: AgentPool
    clock: FakeClock
    placement: FakePlacement
    watcher: FakeWatcher
    events: EventLog

    def run(self) -> float:
        """Run the pool to its end; the simulated seconds it took."""
        began = self.clock.mono
        self.pool.run()
        return self.clock.mono - began

    def emitted(self, event: str) -> list[dict[str, Any]]:
        lines = self.events.path.read_text().splitlines() if self.events.path.exists() else []
        return [e for e in map(json.loads, lines) if e["event"] == event]


def make_pool(
    runs: Sequence[AgentRun],
    clock: FakeClock,
    scripts: dict[str, Script] | Script | None = None,
    *,
    stall_seconds: float = 0.0,
    max_running: int = 500,
    stagger_seconds: float = 0.0,
    max_turns: int = 100_000,
) -> Simulation:
    """An ``AgentPool`` over ``runs`` on a ``FakePlacement`` whose agents follow ``scripts``
    (by agent id, else one for all), with a watcher in ``clock``'s simulated time."""
    agents_dir = runs[0].launch.paths.dir.parent
    watcher = FakeWatcher(clock, agents_dir, max_turns)

    def script_for(session: str) -> Script:
        agent_id = session.split("-", 1)[1]
        if isinstance(scripts, Script):
            return scripts
        return (scripts or {}).get(agent_id, Script())

    placement = FakePlacement(clock, script_for)
    placement.file_event = lambda agent_id, name: watcher.events.put((agent_id, name))
    events = EventLog(agents_dir.parent / "events.jsonl")
    limits = PoolLimits(stagger_seconds, stall_seconds, max_running)
    ctx = PoolContext(placement, events, limits, shared=WaveShared(watcher=watcher))
    pool = AgentPool(list(runs), ctx)
    return Simulation(pool, clock, placement, watcher, events)
