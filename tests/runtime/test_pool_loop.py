"""The pool's decisions (launch, cap, budget, stall, finish) on a fake placement in simulated
time: no tmux, no process, each test decided in milliseconds however many minutes it spans."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.clock import FakeClock, clock_installed
from fakes.placement import Script
from fakes.pool import make_pool, plan_runs
from structlog.testing import capture_logs

from wave_orchestrator.placement.reaper import KILL_GRACE_SECONDS
from wave_orchestrator.runtime.pool.loop import LIVENESS_SECONDS, POLL_SECONDS
from wave_orchestrator.state.lifecycle import AgentState


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with clock_installed(FakeClock()) as fake:
        yield fake


def since(began: float, moments: list[tuple[float, str]]) -> list[float]:
    return [at - began for at, _ in moments]


def test_a_launch_starts_every_ready_agent_and_takes_in_each_end_at_its_status(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 3)
    scripts = {"A0": Script(5.25), "A1": Script(7.5, code=3), "A2": Script(9.75)}
    sim = make_pool(runs, clock, scripts)
    began = clock.mono
    assert sim.run() == 9.75  # the last end, noticed at once: no timer to wait for
    assert sim.placement.starts == [(began, "w1-A0"), (began, "w1-A1"), (began, "w1-A2")]
    assert [r.state for r in runs] == [
        AgentState.COMPLETED,
        AgentState.FAILED,
        AgentState.COMPLETED,
    ]
    assert runs[1].code == 3
    # noticed at the moment the status file appeared (its file event), not a poll later
    assert [r.duration_ms for r in runs] == [5250, 7500, 9750]
    pids = {a.job.session: a.pid for a in sim.placement.agents.values()}
    assert [r.pid for r in runs] == [pids["w1-A0"], pids["w1-A1"], pids["w1-A2"]]
    assert json.loads(runs[0].launch.paths.launch_record.read_text())["attempt"] == 1
    assert [e["agent"] for e in sim.emitted("agent_launched")] == ["A0", "A1", "A2"]
    finished = {e["agent"]: e["status"] for e in sim.emitted("agent_finished")}
    assert finished == {"A0": "success", "A1": "failed", "A2": "success"}
    assert sim.placement.signals == []  # each ended on its own: nothing to stop


def test_an_end_whose_file_event_is_lost_is_found_by_polling(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 1)
    # its wrapper runs on a while after its status: only a poll can find the file meanwhile
    sim = make_pool(runs, clock, Script(runs_for=5.25, file_event=False, lingers_for=3))
    sim.run()
    assert runs[0].state is AgentState.COMPLETED
    assert 5250 < runs[0].duration_ms <= 5250 + POLL_SECONDS * 1000


def test_a_wrapper_gone_without_a_status_fails_at_the_next_liveness_check(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 1)
    sim = make_pool(runs, clock, Script(runs_for=5, code=0, writes_status=False))
    sim.run()
    assert runs[0].state is AgentState.FAILED
    assert runs[0].detail == "wrapper exited 0 without writing a status file"
    assert 5000 < runs[0].duration_ms <= 5000 + LIVENESS_SECONDS * 1000
    assert sim.placement.signals == []  # nothing left of it to stop


def test_the_cap_starts_an_agent_only_once_a_place_is_free(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 5)
    sim = make_pool(runs, clock, Script(runs_for=10), max_running=2)
    began = clock.mono
    assert sim.run() == 30.0
    assert sim.placement.most_running == 2
    # each pair starts the moment the pair before it ended
    assert since(began, sim.placement.starts) == [0.0, 0.0, 10.0, 10.0, 20.0]
    assert all(r.state is AgentState.COMPLETED for r in runs)


def test_an_agent_over_its_budget_is_stopped_at_its_end_and_the_others_run_on(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 2, timeout_minutes=1)
    sim = make_pool(runs, clock, {"A0": Script(runs_for=None), "A1": Script(runs_for=30)})
    began = clock.mono
    with capture_logs() as logs:
        sim.run()
    hung, done = runs
    assert hung.state is AgentState.TIMEOUT and hung.detail == "budget 1m"
    assert [(at - began, sig) for at, sig in sim.placement.kills("w1-A0")] == [
        (60.0, signal.SIGTERM)
    ]
    assert done.state is AgentState.COMPLETED and sim.placement.kills("w1-A1") == []
    said = json.loads(hung.launch.paths.status.read_text())
    assert said["outcome"] == "timeout"
    line = next(x for x in logs if x["event"] == "agent finished" and x["agent"] == "A0")
    assert (line["log_level"], line["status"]) == ("warning", "timeout")


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 1, timeout_minutes=1)
    sim = make_pool(runs, clock, Script(runs_for=None, ignores_term=True))
    began = clock.mono
    assert sim.run() == 60.0 + KILL_GRACE_SECONDS  # the pool waits for its group to end
    kills = [(at - began, sig) for at, sig in sim.placement.kills("w1-A0")]
    assert kills == [(60.0, signal.SIGTERM), (60.0 + KILL_GRACE_SECONDS, signal.SIGKILL)]
    assert sim.placement.removed == ["w1-A0"]  # a stopped agent's session goes too
    assert runs[0].state is AgentState.TIMEOUT


def test_a_silent_agent_is_stopped_as_stalled_and_one_that_prints_is_not(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 2, timeout_minutes=5)
    scripts = {"A0": Script(runs_for=None), "A1": Script(runs_for=50, output_every=5)}
    sim = make_pool(runs, clock, scripts, stall_seconds=20)
    began = clock.mono
    sim.run()
    silent, printing = runs
    assert silent.state is AgentState.STALLED and silent.detail == "no output for 20s"
    [(at, sig)] = sim.placement.kills("w1-A0")
    assert sig == signal.SIGTERM and 20.0 <= at - began < 20.0 + POLL_SECONDS
    assert printing.state is AgentState.COMPLETED and sim.placement.kills("w1-A1") == []
    assert printing.duration_ms == 50_000  # well past the stall time, kept alive by output


def test_a_dependent_starts_when_its_dependency_succeeded_and_never_after_a_failure(
    tmp_path: Path, clock: FakeClock
) -> None:
    runs = plan_runs(tmp_path, 3, depends_on={"A1": ["A0"], "A2": ["A1"]})
    sim = make_pool(runs, clock, {"A0": Script(5), "A1": Script(3, code=1)})
    began = clock.mono
    sim.run()
    assert [(at - began, s) for at, s in sim.placement.starts] == [(0.0, "w1-A0"), (5.0, "w1-A1")]
    assert [r.state for r in runs] == [AgentState.COMPLETED, AgentState.FAILED, AgentState.FAILED]
    assert runs[2].detail == "not started: dependency A1 did not succeed"
    assert runs[2].launched_wall is None


def test_a_stop_while_a_parked_agents_work_is_committed_ends_it_once(tmp_path: Path) -> None:
    """The launcher stops with a parked agent under worktree isolation: its end begins a
    commit off the loop; the stop, asked again on the next turn, leaves it to the commit,
    whose return ends it once (it used to be ended twice, which raised)."""
    import time
    from concurrent.futures import Future

    from wave_orchestrator.runtime.pool.liveness import cancelled

    runs = plan_runs(tmp_path, 1)
    run = runs[0]
    run.state = AgentState.LIMITED  # as --resume adopts a parked agent, before the pool
    run.launched_wall = time.time()
    sim = make_pool(runs, FakeClock())
    commit: Future[str] = Future()

    class Worktrees:
        enabled = True

        def needs_prepare(self, agent: object) -> bool:
            return False

        def prepare(self, agent: object) -> str:
            return ""

        def settle(self, run: object) -> str:
            return commit.result(10)

    sim.pool.workspace = Worktrees()
    sim.pool._apply_all(cancelled(sim.pool.runs))  # the commit begins
    assert run.settling is not None and run.state is AgentState.LIMITED
    sim.pool._apply_all(cancelled(sim.pool.runs))  # the next turn: still stopping
    commit.set_result("")
    run.settling.result(10)
    sim.pool._collect_git()
    assert run.state is AgentState.CANCELLED
    assert [e["status"] for e in sim.emitted("agent_finished")] == ["cancelled"]
