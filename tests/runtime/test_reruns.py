"""`wave rerun` requests to a running launcher (runtime.reruns): what it answers, and request
files an agent could plant (a FIFO, a link, a huge file, a bad name) ignored, never blocking."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from wave_orchestrator.runtime.pool import reruns
from wave_orchestrator.state import reruns as rerun_files
from wave_orchestrator.state.layout import AgentPaths
from wave_orchestrator.state.lifecycle import AgentState


def pending(tmp_path: Path, agent: str) -> Any:
    """A run not started yet (its dependencies still run): a request for it is refused."""
    paths = AgentPaths(tmp_path / "wave-1" / "agents" / agent)
    return SimpleNamespace(
        id=agent,
        launch=SimpleNamespace(paths=paths),
        settling=None,
        preparing=None,
        state=AgentState.PENDING,
        launched_wall=None,
    )


def test_the_launcher_answers_each_request_and_the_asker_reads_its_own(tmp_path: Path) -> None:
    run = pending(tmp_path, "A")
    rid = rerun_files.ask(run.launch.paths, "flaky")
    assert rerun_files.answer(run.launch.paths, rid) is None  # not answered yet
    other = rerun_files.ask(run.launch.paths.sibling("Z"), "no such agent running")
    assert reruns.take([run], None, None) is False  # type: ignore[arg-type]
    said = rerun_files.answer(run.launch.paths, rid)
    assert said is not None and said["taken"] is False
    assert "A has not started yet" in said["detail"]
    unknown = rerun_files.answer(run.launch.paths.sibling("Z"), other)
    assert unknown is not None and "Z is not in what the launcher runs now" in unknown["detail"]
    assert not run.launch.paths.rerun_request.exists()  # taken once
    assert rerun_files.answer(run.launch.paths, "another-id") is None


def test_planted_requests_are_dropped_unread_and_nothing_blocks(tmp_path: Path) -> None:
    run = pending(tmp_path, "A")
    folder = run.launch.paths.rerun_request.parent
    folder.mkdir(parents=True)
    os.mkfifo(folder / "A.json")  # a FIFO would block a plain open
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"id": "x"}))
    (folder / "B.json").symlink_to(secret)
    (folder / "C.json").write_text(json.dumps({"id": "y", "reason": "z" * 20_000}))
    (folder / "bad name.json").write_text(json.dumps({"id": "z"}))
    (folder / "D.json").write_text("[1, 2]")
    with capture_logs() as logged:
        assert reruns.take([run], None, None) is False  # type: ignore[arg-type]
    assert len([line for line in logged if line["log_level"] == "warning"]) == 5
    assert sorted(p.name for p in folder.iterdir()) == []  # dropped, none answered
    assert secret.exists()  # the link's target is not touched


def test_an_agent_being_started_is_not_renewed_under_its_burst(tmp_path: Path) -> None:
    """Renewal is a checked move of the state machine: a run being launched (its burst may be
    starting it right now) is refused, with words saying when to ask."""
    run = pending(tmp_path, "A")
    run.state, run.launched_wall = AgentState.LAUNCHING, 1.0
    rid = rerun_files.ask(run.launch.paths, "flaky")
    assert reruns.take([run], None, None) is False  # type: ignore[arg-type]
    said = rerun_files.answer(run.launch.paths, rid)
    assert said is not None and said["taken"] is False
    assert "A is being started: ask again once it runs" in said["detail"]
    assert run.state is AgentState.LAUNCHING


def test_renew_is_the_checked_way_back_to_pending(repo: Any) -> None:
    from wave_orchestrator.definitions.loading.lane_loader import load_lane
    from wave_orchestrator.runtime.agent.plan import plan_agent
    from wave_orchestrator.runtime.agent.run import AgentRun
    from wave_orchestrator.state.layout import StateLayout
    from wave_orchestrator.state.lifecycle import IllegalTransition

    agent = "agents:\n  - {id: A1, prompt: x, executor: {local: {command: 'true'}}}\n"
    repo.lane("main", "closure: {required_roles: []}\n", {1: agent})
    lane = load_lane(repo.root, "main")
    wave = lane.wave(1)
    launch = plan_agent(lane, StateLayout(lane.state_dir, "main"), wave, wave.agent("A1"))
    run = AgentRun(launch)
    run.to(AgentState.LAUNCHING)
    with pytest.raises(IllegalTransition):
        run.renew()
    assert run.state is AgentState.LAUNCHING
    run.to(AgentState.RUNNING)
    run.reruns, run.pid = 1, 4242
    run.renew()
    assert (run.state, run.pid, run.reruns) == (AgentState.PENDING, None, 1)
