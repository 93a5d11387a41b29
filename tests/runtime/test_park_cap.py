"""``usage_limit.max_parks``: an agent limited again at every reset is parked that many times,
then not again (its end names the count), on a fake clock with the real governor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.clock import FakeClock, clock_installed
from fakes.pool import plan_runs

from wave_orchestrator.definitions.model import Governance, UsageLimitPolicy
from wave_orchestrator.governor.governor import Governor
from wave_orchestrator.runtime.pool.governor_side import GovernorSide
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.lifecycle import AgentState
from wave_orchestrator.state.status import StatusFile

WORDS = "You've hit your usage limit, resets in 10m"


def limited() -> StatusFile:
    raw = {"code": 1, "usage_limit": True, "detail": WORDS, "attempt": 1}
    return StatusFile(1, 1, 0, None, None, WORDS, True, None, raw, 1)


class Side:
    """A pool's governor side over one local agent, with what it said and told."""

    def __init__(self, tmp_path: Path, max_parks: int) -> None:
        self.clock = FakeClock()
        policy = UsageLimitPolicy(max_parks=max_parks, margin_seconds=0)
        self.gov = Governor(Governance(usage_limit=policy), now=self.clock.time)
        [self.run] = plan_runs(tmp_path, 1)
        self.events = EventLog(tmp_path / "events.jsonl")
        self.told: list[dict[str, Any]] = []
        self.side = GovernorSide(self.gov, self.events, self.told.append)

    def start(self) -> None:
        self.run.to(AgentState.LAUNCHING)
        self.run.begin(self.clock.mono)

    def limit(self) -> bool:
        """The running agent ends on a usage limit: parked (True) or not."""
        with clock_installed(self.clock):
            return self.side.park(self.run, limited())

    def reset(self) -> None:
        """Its reset comes: pending again."""
        self.clock.run_until(self.clock.mono + 601)
        with clock_installed(self.clock):
            changed, _ = self.side.turn([self.run])
        assert changed and self.run.state is AgentState.PENDING

    def said(self, event: str) -> list[dict[str, Any]]:
        lines = self.events.path.read_text().splitlines()
        return [e for e in map(json.loads, lines) if e["event"] == event]


def test_an_agent_limited_at_every_reset_is_parked_max_parks_times_then_ends(
    tmp_path: Path,
) -> None:
    s = Side(tmp_path, max_parks=2)
    for n in (1, 2):
        s.start()
        assert s.limit() and s.run.state is AgentState.LIMITED
        # its status file keeps the count, for a launcher that resumes after this one died
        assert json.loads(s.run.launch.paths.status.read_text())["parks"] == n
        s.reset()
    s.start()
    assert not s.limit()  # the third limit: not parked again
    assert s.run.state is AgentState.RUNNING and s.side.parks(s.run) == 2
    assert len(s.said("agent_limited")) == 2
    [spent] = s.said("agent_parks_spent")
    assert (spent["agent"], spent["parks"], spent["max_parks"]) == ("A0", 2, 2)
    assert spent["account"] == "local"
    detail = s.side.end_detail(s.run, WORDS)
    assert detail == f"usage limit again after 2 parks (max_parks: 2): {WORDS}"
    assert s.side.end_detail(s.run, WORDS) == WORDS  # said once, for the one end
    kinds = [(d["kind"], d.get("until") is None) for d in s.told]
    assert kinds == [("usage-limit", False)] * 2 + [("usage-limit", True)]
    assert s.told[-1]["reason"] == detail and s.told[-1]["parks"] == 2
    # its account still waits for the reset: the lane's other agents of it wait with it
    assert s.gov.waiting("local") is not None


def test_an_agent_limited_fewer_times_than_max_parks_is_parked_each_time(
    tmp_path: Path,
) -> None:
    s = Side(tmp_path, max_parks=3)
    for _ in range(3):
        s.start()
        assert s.limit()
        s.reset()
    assert not s.said("agent_parks_spent")
    assert s.side.end_detail(s.run, WORDS) == WORDS  # an end of another kind: its own words


def test_a_step_to_the_fallback_executor_is_no_park(tmp_path: Path) -> None:
    """``fall_back`` parks the run for a moment to keep its try's files: that is not a wait for
    a reset, and does not use up ``max_parks``."""
    s = Side(tmp_path, max_parks=1)
    s.start()
    with clock_installed(s.clock):
        assert s.side.fall_back(s.run, lambda run: run.launch)
    assert s.run.parked == 1 and s.side.parks(s.run) == 0
    s.start()
    assert s.limit()  # its one park
    s.reset()
    s.start()
    assert not s.limit() and s.side.parks(s.run) == 1
    with clock_installed(s.clock):  # a fallback after all: its end, if any, is its own
        assert s.side.fall_back(s.run, lambda run: run.launch)
    assert s.side.end_detail(s.run, "other words") == "other words"
