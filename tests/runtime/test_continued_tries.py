"""Which try continues its conversation: the one after a usage-limit park on the same
executor (told only why it stopped); not one on a fallback executor, nor one of a CLI that
kept no session; a new try that does not continue gets a new conversation."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from fakes.pool import plan_runs

from wave_orchestrator.agents.executors import ExecutorCommand
from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.state.lifecycle import AgentState

ID = "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"
ARGV = {
    "claude": ("claude", "-p", "--output-format", "text"),
    "codex": ("codex", "exec", "--skip-git-repo-check", "-"),
}


def running(tmp_path: Path, executor: str, argv: tuple[str, ...] | None = None) -> AgentRun:
    [run] = plan_runs(tmp_path, 1)
    command = ExecutorCommand(executor, argv or ARGV[executor], {})
    given = ID if executor == "claude" else ""
    run.launch = replace(run.launch, executor=executor, command=command, conversation=given)
    run.said_conversation = "" if given else ID
    run.to(AgentState.LAUNCHING)
    run.launched_wall = time.time()
    run.begin(time.monotonic())
    return run


def test_after_a_park_the_same_cli_continues_told_only_why(tmp_path: Path) -> None:
    for executor in ("claude", "codex"):
        run = running(tmp_path / executor, executor)
        run.park(time.time() + 60)
        run.unpark()
        assert run.state is AgentState.PENDING and run.launch.continues == ID
        assert run.launch.continuation.startswith("The previous run stopped: usage limit until")
        argv = run.launch.argv
        assert (
            (argv[2:4] == ["--resume", ID])
            if executor == "claude"
            else argv[-3:]
            == [
                "resume",
                ID,
                "-",
            ]
        )
        assert run.fresh_because is None


def test_a_fallback_executor_starts_afresh(tmp_path: Path) -> None:
    run = running(tmp_path, "claude")
    run.park(time.time())  # the step to the fallback (governor_side.fall_back)
    run.launch = replace(
        run.launch, executor="codex", command=ExecutorCommand("codex", ARGV["codex"], {})
    )
    run.unpark()
    assert run.launch.continues == "" and "resume" not in run.launch.argv
    assert run.fresh_because == "it runs on codex now, not claude"


def test_a_cli_that_kept_no_session_starts_afresh_and_says_why(tmp_path: Path) -> None:
    run = running(tmp_path, "codex", ("codex", "exec", "--ephemeral", "-"))
    run.park(time.time() + 60)
    run.unpark()
    assert run.launch.continues == "" and run.fresh_because is not None
    assert "ephemeral" in run.fresh_because


def test_a_renewed_claude_try_gets_a_new_conversation(tmp_path: Path) -> None:
    """`wave rerun` (no --continue) renews: claude refuses an id already used."""
    run = running(tmp_path, "claude")
    run.renew()
    assert run.launch.conversation not in ("", ID) and run.launch.continues == ""
    assert run.launch.argv[2:4] == ["--session-id", run.launch.conversation]


def test_an_agent_adopted_by_resume_keeps_the_conversation_its_process_has(
    tmp_path: Path,
) -> None:
    """A dead launcher's claude agent still running: adopted with the id in its launch.json
    (not a new one), so a later park, nudge or `rerun --continue` resumes what it did."""
    from wave_orchestrator.definitions.loading.lane_loader import load_lane
    from wave_orchestrator.placement.base import PaneInfo
    from wave_orchestrator.runtime.agent.plan import Planner
    from wave_orchestrator.runtime.wave.resume import adopt_leftover
    from wave_orchestrator.state.events import EventLog
    from wave_orchestrator.state.layout import StateLayout

    folder = tmp_path / "lanes" / "sim"
    (folder / "waves").mkdir(parents=True)
    (folder / "lane.yaml").write_text("closure: {required_roles: []}\n")
    (folder / "waves" / "wave-1.yaml").write_text(
        "agents:\n  - {id: K, prompt: go, executor: {id: claude}}\n"
    )
    lane = load_lane(tmp_path, "sim")
    layout = StateLayout(lane.state_dir, "sim")
    planner, wave = Planner(lane, layout), lane.wave(1)
    paths = layout.agent(1, "K")
    paths.dir.mkdir(parents=True)
    record = {"attempt": 1, "executor": "claude", "session": "w1-K", "conversation": ID}
    paths.launch_record.write_text(json.dumps({**record, "launched_at": time.time() - 9}))
    panes = {"w1-K": PaneInfo("w1-K", dead=False, dead_status=None, pid=4242)}
    events = EventLog(layout.events)
    run = adopt_leftover(planner, events, wave, wave.agents[0], 1, ["claude"], panes)
    assert run is not None and run.state is AgentState.RUNNING
    assert run.conversation == ID
    run.park(time.time() + 60)
    run.unpark()
    assert run.launch.argv[2:4] == ["--resume", ID]


def test_a_try_that_cannot_continue_is_still_told_why_and_the_person_s_words(
    tmp_path: Path,
) -> None:
    """`wave rerun --continue "…"` of an agent whose CLI cannot continue: it starts afresh,
    and its prompt's "why you are running again" carries the reason and the words."""
    from wave_orchestrator.runtime.agent.continuation import continue_or_restart
    from wave_orchestrator.runtime.agent.materialize import materialize

    run = running(tmp_path, "codex", ("codex", "exec", "--ephemeral", "-"))
    launch, why = continue_or_restart(run.launch, ID, "a person asked", "use the v2 API")
    assert why is not None and launch.continues == "" and not launch.continuation
    materialize(launch)
    prompt = launch.paths.prompt.read_text()
    assert "## why you are running again" in prompt and "use the v2 API" in prompt
    assert "The previous run stopped: a person asked." in prompt


def test_the_refused_try_s_processes_hold_the_fresh_try_until_they_end(tmp_path: Path) -> None:
    """A continuation the CLI refused starts afresh in the same attempt: not before what the
    refused try left running has ended (its wrapper still writes; a renewal forgets its pid)."""
    from fakes.clock import FakeClock, clock_installed
    from fakes.pool import make_pool

    run = running(tmp_path, "claude")
    run.launch = run.launch.continued(ID, "go on")
    run.pid = 4242
    paths = run.launch.paths
    paths.dir.mkdir(parents=True, exist_ok=True)
    paths.output_log.write_text(f"No conversation found with session ID: {ID}\n")
    status = {"code": 1, "tries": 1, "rate_limited": 0, "attempt": run.launch.attempt}
    paths.status.write_text(json.dumps(status))
    clock = FakeClock()
    with clock_installed(clock):
        pool = make_pool([run], clock).pool
        assert pool._check_status(run)
        assert run.state is AgentState.PENDING and run.launch.continues == ""
        assert pool.reaper.holds(run.launch.session)
