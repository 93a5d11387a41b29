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

from wave_orchestrator.agents.executors import ExecutorCommand
from wave_orchestrator.definitions.stall_policy import StallPolicy
from wave_orchestrator.runtime.pool.stall_steps import StallSteps, spoken
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.lifecycle import AgentState

ID = "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"


class StoppedSessions:
    """The reaper's ``start``, noted: the sessions it was asked to end."""

    def __init__(self) -> None:
        self.stopped: list[str] = []

    def start(self, session: str, pid: int | None, now: float) -> None:
        self.stopped.append(session)


class Steps:
    """One running local agent of a lane with ``stall`` set, and what the steps said."""

    def __init__(self, tmp_path: Path, nudge: float, ask: float, claude: bool = True) -> None:
        self.clock = FakeClock()
        [self.run] = plan_runs(tmp_path, 1)
        lane = self.run.launch.lane._replace(stall=StallPolicy(nudge, ask))
        self.run.launch = replace(self.run.launch, lane=lane)
        if claude:  # a CLI whose conversation a nudged try goes on with
            command = ExecutorCommand("claude", ("claude", "-p", "--output-format", "text"), {})
            self.run.launch = replace(
                self.run.launch, executor="claude", command=command, conversation=ID
            )
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
        """The pool's polls ``seconds`` after the agent's start (its workspace looked at off
        the loop meanwhile): a step taken?"""
        assert self.run.launched_wall is not None
        now = self.run.launched_wall + seconds
        with clock_installed(self.clock):
            for _ in range(2):  # the look asked for at the step's time, then the step
                if self.steps.check(self.run, now):
                    return True
                looks = self.steps._looks.get(self.run, [])
                assert all(look.done.wait(15) for look in looks)
        return False

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
    assert s.run.launch.continues == ID  # its next try goes on with its conversation
    assert s.run.launch.continuation.startswith("The previous run stopped: you have been silent")
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


def test_an_agent_that_cannot_go_on_with_its_conversation_is_not_nudged(tmp_path: Path) -> None:
    """A nudge would start a local agent over, its work thrown away: the person is asked."""
    s = Steps(tmp_path, nudge=10, ask=20, claude=False)
    assert not s.at(600) and not s.at(1199)
    assert s.at(1200) and s.stopped == [] and s.run.state is AgentState.RUNNING
    assert s.said("agent_silent") and not s.said("agent_nudged")
