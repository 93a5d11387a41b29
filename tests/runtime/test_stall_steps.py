"""lane.yaml's ``stall``: a silent agent nudged, then a person asked, on a fake clock; a
workspace whose files change is not silent; each step taken once, each said."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from fakes.clock import FakeClock, clock_installed
from fakes.pool import plan_runs

from wave_orchestrator.definitions.stall_policy import StallPolicy
from wave_orchestrator.runtime.pool.stall_steps import StallSteps, spoken
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.lifecycle import AgentState


class StoppedSessions:
    """The reaper's ``start``, noted: the sessions it was asked to end."""

    def __init__(self) -> None:
        self.stopped: list[str] = []

    def start(self, session: str, pid: int | None, now: float) -> None:
        self.stopped.append(session)


class Steps:
    """One running local agent of a lane with ``stall`` set, and what the steps said."""

    def __init__(self, tmp_path: Path, nudge: float, ask: float) -> None:
        self.clock = FakeClock()
        [self.run] = plan_runs(tmp_path, 1)
        lane = self.run.launch.lane._replace(stall=StallPolicy(nudge, ask))
        self.run.launch = replace(self.run.launch, lane=lane)
        self.events = EventLog(tmp_path / "events.jsonl")
        self.told: list[dict[str, Any]] = []
        self.reaper = StoppedSessions()
        self.stopped = self.reaper.stopped
        self.steps = StallSteps(self.events, self.reaper, self.told.append)  # type: ignore[arg-type]
        self.start()

    def start(self) -> None:
        with clock_installed(self.clock):
            self.run.to(AgentState.LAUNCHING)
            self.run.launched_wall = self.clock.time()
            self.run.begin(self.clock.mono)

    def at(self, seconds: float) -> bool:
        """The pool's poll ``seconds`` after the agent's start: a step taken?"""
        assert self.run.launched_wall is not None
        with clock_installed(self.clock):
            return self.steps.check(self.run, self.run.launched_wall + seconds)

    def said(self, event: str) -> list[dict[str, Any]]:
        lines = self.events.path.read_text().splitlines() if self.events.path.exists() else []
        return [e for e in map(json.loads, lines) if e["event"] == event]


def test_a_silent_agent_is_nudged_once_then_a_person_is_asked(tmp_path: Path) -> None:
    s = Steps(tmp_path, nudge=10, ask=20)
    assert not s.at(299) and not s.at(300)  # half-way: its workspace looked at, no step
    assert not s.at(599)
    assert s.at(600)  # ten minutes of silence: stopped, pending again for its next try
    assert s.stopped == [s.run.launch.session] and s.run.state is AgentState.PENDING
    [nudged] = s.said("agent_nudged")
    assert nudged["silent_minutes"] == 10
    # a local agent has no conversation: its next try starts afresh, and says why
    assert s.run.fresh_because == "local has no conversation to continue"
    assert s.told[0]["kind"] == "stalled" and "nudged" in s.told[0]["reason"]
    s.start()  # the next try: the person is asked after twenty silent minutes of it
    assert not s.at(600) and not s.at(1199)
    assert s.at(1200)
    [silent] = s.said("agent_silent")
    assert silent["silent_minutes"] == 20 and s.run.state is AgentState.RUNNING
    assert "after a nudge" in s.told[1]["reason"] and "--continue" in s.told[1]["reason"]
    assert not s.at(5000)  # each step once: the budget is what ends it now
    assert len(s.stopped) == 1


def test_with_no_nudge_a_person_is_asked_and_nothing_is_stopped(tmp_path: Path) -> None:
    s = Steps(tmp_path, nudge=0, ask=5)
    assert not s.at(150) and s.at(300)
    assert s.stopped == [] and s.run.state is AgentState.RUNNING
    assert "after a nudge" not in s.told[0]["reason"]


def test_steps_are_off_until_set(tmp_path: Path) -> None:
    s = Steps(tmp_path, nudge=0, ask=0)
    assert not any(s.at(t) for t in (60, 6000, 600000))
    assert not s.said("agent_nudged") and not s.told


def test_an_agent_whose_files_change_is_not_silent(tmp_path: Path) -> None:
    s = Steps(tmp_path, nudge=10, ask=0)
    repo = s.run.launch.cwd
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "work.py").write_text("one\n")
    assert not s.at(300)  # half-way: the workspace as it is
    (repo / "work.py").write_text("one\ntwo, and longer\n")  # it works without a word
    assert not s.at(600)  # not nudged: its silence starts again now
    assert s.run.resumed_wall == s.run.launched_wall + 600  # type: ignore[operator]
    assert not s.at(900)  # half-way of the new silence
    assert s.at(1200) and s.stopped == [s.run.launch.session]  # ten minutes with no change: nudged


def test_an_agent_that_waits_on_a_person_is_not_nudged(tmp_path: Path) -> None:
    s = Steps(tmp_path, nudge=1, ask=0)
    with clock_installed(s.clock):
        s.run.wait_on_person(s.clock.mono)
    assert not s.at(30) and not s.at(600)


def test_silence_is_said_as_a_person_says_it() -> None:
    assert [spoken(s) for s in (3, 59.9, 60, 61, 1200)] == [
        "3 seconds",
        "59 seconds",
        "1 minute",
        "1 minute",
        "20 minutes",
    ]
