"""A burst of sessions started off the loop (tmux placement), on it for Slurm."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

import pytest
from helpers import Repo, local_lane, wait_for

from wave_orchestrator.placement.base import AgentJob, Placement
from wave_orchestrator.placement.tmux import process_running
from wave_orchestrator.runtime.pool.bursts import Bursts


class Starter:
    """A placement whose start_many waits until released, and says on which thread it ran."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.release = threading.Event()
        self.threads: list[int] = []

    def start_many(self, jobs: Sequence[Any]) -> list[int | Exception | None]:
        self.threads.append(threading.get_ident())
        if self.kind == "local":
            assert self.release.wait(10)
        return [100 + i for i, _ in enumerate(jobs)]


def bursts(kind: str) -> tuple[Bursts[str], Starter]:
    starter = Starter(kind)
    return Bursts(cast(Placement, starter)), starter


JOBS = cast(list[AgentJob], ["job-a", "job-b"])


def test_a_tmux_burst_runs_off_the_loop_and_wakes_it_when_started() -> None:
    burst, starter = bursts("local")
    woken = threading.Event()
    burst.wake = woken.set
    burst.start(["a", "b"], partial(starter.start_many, JOBS))
    assert burst.busy and burst.take() is None  # tmux is still at it: the loop goes on
    assert starter.threads == [] or starter.threads[0] != threading.get_ident()
    starter.release.set()
    wait_for(woken.is_set, 10, what="the wake-up")
    assert burst.take() == (["a", "b"], [100, 101])
    assert not burst.busy and burst.take() is None  # taken once
    assert starter.threads[0] != threading.get_ident()
    burst.close()


def test_a_slurm_burst_or_one_with_nothing_else_running_starts_on_the_loop() -> None:
    for kind, meanwhile in (("slurm", True), ("local", False)):
        burst, starter = bursts(kind)
        starter.release.set()
        burst.start(["a", "b"], partial(starter.start_many, JOBS), meanwhile=meanwhile)
        assert starter.threads == [threading.get_ident()]
        assert burst.take() == (["a", "b"], [100, 101])
        burst.close()


def test_close_waits_for_a_burst_in_flight() -> None:
    burst, starter = bursts("local")
    burst.start(["a"], partial(starter.start_many, JOBS[:1]))
    threading.Timer(0.2, starter.release.set).start()
    burst.close()  # nothing starts after its pool ended
    assert starter.release.is_set() and len(starter.threads) == 1


def launch_here(repo: Repo, monkeypatch: pytest.MonkeyPatch, commands: list[str]) -> None:
    """A lane of these local agents (one wave) launched in this process, where its parts
    can be patched: real tmux sessions, wrappers and status files."""
    from wave_orchestrator.runtime.launch.launcher import Launcher, LaunchOptions, prepare_lane

    rows = "\n".join(
        f"  - {{id: A{i}, prompt: x, executor: {{local: {{command: {json.dumps(cmd)}}}}}}}"
        for i, cmd in enumerate(commands)
    )
    repo.lane("main", local_lane(), {1: f"agents:\n{rows}\n"})
    for key in ("WAVE_TMUX_SOCKET", "PATH"):
        monkeypatch.setenv(key, repo.env[key])
    opts = LaunchOptions(lane="main", no_dashboard=True, quiet=True)
    assert Launcher(prepare_lane(repo.root, opts), opts).run().code == 0


@pytest.mark.e2e
def test_the_loop_sleeps_while_a_burst_is_in_flight(
    tmux_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While tmux starts a burst on the worker thread, the loop waits for news (a finish, the
    burst's wake-up); it used to turn without pause, taking the CPU the burst needs."""
    from wave_orchestrator.placement.local import LocalPlacement
    from wave_orchestrator.runtime.pool import loop as agent_pool

    turns, during = [0], []
    collect = agent_pool.AgentPool._collect_git  # called once per turn of the loop

    def counted(self: agent_pool.AgentPool) -> None:
        turns[0] += 1
        collect(self)

    start_many = LocalPlacement.start_many

    def slow(self: LocalPlacement, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        if threading.current_thread() is threading.main_thread():
            return start_many(self, jobs)  # the first burst: nothing runs yet, on the loop
        before = turns[0]
        time.sleep(0.5)  # tmux at work on a burst
        handles = start_many(self, jobs)
        during.append(turns[0] - before)
        return handles

    monkeypatch.setattr(agent_pool.AgentPool, "_collect_git", counted)
    monkeypatch.setattr(LocalPlacement, "start_many", slow)
    # three bursts of 4: while the second is started, 4 wait
    launch_here(tmux_repo, monkeypatch, ["sleep 2"] * 12)
    assert during, "no burst ran on the worker thread"
    assert max(during) < 20, f"the loop turned {during} times during a 0.5 s burst"


@pytest.mark.e2e
def test_an_agent_that_ends_before_tmux_answers_for_its_burst_is_finished_at_once(
    tmux_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its status proves its session started: it is launched and finished on that file's
    event, not once the burst returns; what it left running is still ended, by its pane's
    pid once tmux gives it."""
    from wave_orchestrator.placement.local import LocalPlacement
    from wave_orchestrator.runtime.pool import loop as agent_pool

    start_many = LocalPlacement.start_many
    answered: list[float] = []

    def slow(self: LocalPlacement, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        handles = start_many(self, jobs)
        if threading.current_thread() is not threading.main_thread():
            time.sleep(1.5)  # tmux slow to answer: the agents have long ended
            answered.append(time.time())
        return handles

    on_file = agent_pool.AgentPool._on_file

    def twice(self: agent_pool.AgentPool, agent_id: str, name: str) -> None:
        on_file(self, agent_id, name)
        on_file(self, agent_id, name)  # a file's event seen twice changes nothing

    monkeypatch.setattr(LocalPlacement, "start_many", slow)
    monkeypatch.setattr(agent_pool.AgentPool, "_on_file", twice)
    sleeper = 'setsid sleep 300 & echo $! > "$WAVE_REPO/$WAVE_AGENT_ID.pid"'
    launch_here(tmux_repo, monkeypatch, ["sleep 3"] * 4 + [sleeper] * 4)
    assert len(answered) == 1, "the second burst was not started on the worker thread"
    events = [json.loads(x) for x in (tmux_repo.root / ".wave/main/events.jsonl").open()]
    for agent in ("A4", "A5", "A6", "A7"):
        mine = [e for e in events if e.get("agent") == agent]
        kinds = [e["event"] for e in mine]
        assert kinds.count("agent_launched") == kinds.count("agent_finished") == 1, kinds
        assert kinds.index("agent_launched") < kinds.index("agent_finished"), kinds
        finished = next(e for e in mine if e["event"] == "agent_finished")
        at = datetime.strptime(finished["at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert at.timestamp() < answered[0], f"{agent} finished only after tmux answered"
        pid = int((tmux_repo.root / f"{agent}.pid").read_text())
        wait_for(lambda p=pid: not process_running(p), 15, what=f"{agent}'s setsid sleep ended")


@pytest.mark.e2e
def test_a_burst_s_files_are_written_off_the_loop_while_other_agents_run(
    tmux_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prompt, wrapper and launch record of a burst cost the loop 25-45 ms on a busy machine:
    written on the burst thread, with the session start, once other agents run."""
    from wave_orchestrator.runtime.pool import launching as agent_run

    materialize, where = agent_run.materialize, {}

    def noted(launch: Any) -> None:
        where[launch.agent.id] = threading.current_thread() is threading.main_thread()
        materialize(launch)

    monkeypatch.setattr(agent_run, "materialize", noted)
    launch_here(tmux_repo, monkeypatch, ["sleep 1"] * 8)
    # the first burst has nothing else running: on the loop; the second, off it
    assert where == {f"A{i}": i < 4 for i in range(8)}, where
