"""Fault class 5: untrusted JSON state. status.json (the agent can write it), launch.json,
run-state.json, dashboard.json, backoff.json, the lock and metrics records are checked field
by field: an odd value gives a clear message or a recovered state, never a traceback, and
never leaves a session behind."""

from __future__ import annotations

import json
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, local_lane, wait_for

from wave_orchestrator.metrics.report import read_records
from wave_orchestrator.runtime.wave.resume import read_leftover
from wave_orchestrator.state.jsonl import append_jsonl
from wave_orchestrator.state.layout import AgentPaths
from wave_orchestrator.state.lock import read_lock
from wave_orchestrator.state.run_state import RunState
from wave_orchestrator.state.status import StatusUnreadable, read_status
from wave_orchestrator.state.untrusted import read_backoff, read_snapshot

HOSTILE_STATUS = [
    '{"code": 0, "outcome": "running"}',  # not a final state: the agent would never end
    '{"code": 0, "outcome": ["completed"]}',
    '{"code": 1e400}',
    '{"code": NaN}',
    '{"code": 0, "tries": "x"}',
    '{"code": 0, "rate_limited": -3}',
    '{"code": 0, "attempt": 0}',
    '{"code": 0, "attempt": "2"}',
    '{"code": 0, "detail": {"a": 1}}',
    '{"code": 0, "usage_limit": "yes"}',
    '{"code": 1, "usage_limit": true, "limited_until": "tomorrow"}',
    '{"code": 1, "usage_limit": true, "limited_until": 1e15}',
    '{"code": 1, "usage_limit": true, "limited_until": 1e12}',  # the year 33658: no clock shows it
    '{"code": 1, "usage_limit": true, "limited_until": 0}',
    '{"code": 99999999999999999999}',
    "[" * 100_000 + "]" * 100_000,  # deeper than the parser's recursion
]


@pytest.mark.parametrize("body", HOSTILE_STATUS, ids=range(len(HOSTILE_STATUS)))
def test_hostile_status_is_unreadable_with_a_reason(tmp_path: Path, body: str) -> None:
    path = tmp_path / "status.json"
    path.write_text(body)
    with pytest.raises(StatusUnreadable, match=r"status\.json: "):
        read_status(path)


def test_status_attempt_is_kept_and_a_folder_status_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text('{"code": 0, "attempt": 3, "outcome": "completed"}')
    status = read_status(path)
    assert status is not None and status.attempt == 3
    path.unlink()
    path.mkdir()
    with pytest.raises(StatusUnreadable, match="folder"):
        read_status(path)


def test_leftover_ignores_an_unknown_executor_and_an_attempt_from_the_future(
    tmp_path: Path,
) -> None:
    paths = AgentPaths(tmp_path)
    paths.launch_record.write_text(
        json.dumps({"attempt": "x", "executor": "rm -rf /", "launched_at": 1e300})
    )
    left = read_leftover(paths, current_attempt=2)
    assert (left.attempt, left.executor, left.launched_at, left.status) == (2, None, None, None)
    paths.launch_record.write_text(json.dumps({"attempt": 1, "executor": "nonesuch"}))
    paths.status.write_text('{"code": 0, "attempt": 7}')  # an attempt that never ran
    left = read_leftover(paths, current_attempt=2)
    assert left.attempt == 2 and left.executor is None


def test_run_state_with_odd_values_is_recovered(tmp_path: Path) -> None:
    path = tmp_path / "run-state.json"
    path.write_text(
        json.dumps(
            {
                "waves": {
                    "1": {"state": "completed", "attempts": "x", "reason": 5},
                    "2": {"state": "exploded", "attempts": 2},
                    "3": [1],
                    "x": {"state": "running"},
                },
                "history": "none",
            }
        )
    )
    state = RunState(path, "main")
    assert state.data["waves"] == {
        "1": {"state": "completed", "attempts": 0},
        "2": {"state": "pending", "attempts": 2},
    }
    assert state.data["history"] == [] and state.problem is None
    path.write_text('{"waves": {"1": {"attempts": 1e400}}}')
    state = RunState(path, "main")
    assert state.data["waves"] == {} and state.problem and "unreadable" in state.problem


def test_lock_backoff_snapshot_and_metrics_fields_are_typed(tmp_path: Path) -> None:
    lock = tmp_path / "launcher.lock"
    lock.write_text(json.dumps({"pid": -1, "host": ["h"], "argv": "x", "started_at": "t"}))
    assert read_lock(lock) == {"started_at": "t"}  # pid -1 would signal every process
    backoff = tmp_path / "backoff.json"
    backoff.write_text(json.dumps({"try": "x", "tries": 3, "until_ms": "soon"}))
    info = read_backoff(backoff)
    assert info is not None and (info.try_number, info.tries, info.until) == (0, 3, None)
    snap = tmp_path / "dashboard.json"
    snap.write_text(
        json.dumps(
            {
                "wave": "one",
                "agents": [
                    {"id": {"a": 1}},
                    {"id": "A1", "tries": "x", "elapsed_ms": [1], "state": 5, "exit_code": 1},
                ],
                "events": [{"event": ["x"], "at": 1}, 3],
            }
        )
    )
    frame = read_snapshot(snap)
    assert frame is not None and frame["wave"] is None
    assert frame["agents"] == [
        {"id": "A1", "state": None, "tries": None, "elapsed_ms": None, "exit_code": 1}
    ]
    assert frame["events"] == [{"event": None, "at": None}]
    metrics = tmp_path / "metrics.jsonl"
    append_jsonl(metrics, {"status": "success", "duration_ms": 5, "started_at": "a"})
    with metrics.open("a") as fh:
        fh.write(
            '{"status": "success", "duration_ms": NaN}\n{"status": "x", "duration_ms": 1e999}\n'
        )
        fh.write('{"status": "success", "duration_ms": 1%s}\n' % ("0" * 400))  # beyond a float
    assert [r["duration_ms"] for r in read_records([metrics])] == [5]


def test_json_nested_too_deep_in_agent_output_is_text_not_a_crash() -> None:
    from wave_orchestrator.agents.usage import read_usage
    from wave_orchestrator.closure.transcript import output_lines
    from wave_orchestrator.runtime.wave.snapshot import last_line

    deep = "[" * 100_000 + "]" * 100_000
    assert last_line(deep + "\n").startswith("[[[")
    assert list(output_lines(deep + "\n"))
    for executor, settings in (("claude", {"output_format": "json"}), ("codex", {"json": True})):
        assert read_usage(executor, settings, deep + "\n").input_tokens is None


# -- the commands, end to end ---------------------------------------------------------------
def hostile_state(repo: Repo) -> None:
    state = repo.state("main")
    agent = repo.agent_dir("main", 1, "A1")
    agent.mkdir(parents=True)
    (state / "run-state.json").write_text(
        json.dumps({"waves": {"1": {"state": "running", "attempts": "x"}}, "history": {}})
    )
    (state / "waves/wave-1/dashboard.json").write_text(
        json.dumps({"agents": [{"id": {"x": 1}}, {"id": "A1", "state": "running", "tries": []}]})
    )
    (agent / "status.json").write_text('{"code": 0, "outcome": "running"}')
    (agent / "launch.json").write_text('{"executor": "nonesuch", "attempt": [1]}')
    (state / "launcher.lock").write_text('{"pid": "me"}')


def test_every_reading_command_survives_hostile_state(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n  - {id: A1, prompt: x}\n"})
    hostile_state(repo)
    for command in (
        ("status", "--lane", "main"),
        ("status", "--lane", "main", "--json"),
        ("dashboard", "--lane", "main", "--once"),
        ("metrics",),
        ("logs", "A1", "--lane", "main"),
    ):
        result = repo.wave(*command, timeout=30)
        assert "Traceback" not in result.stderr, (command, result.stderr)
        assert result.returncode in (0, 2), (command, result.stderr)
    data = json.loads(repo.wave("status", "--lane", "main", "--json").stdout)
    assert data["launcher"] == {"alive": False}
    assert [a["state"] for a in data["waves"][0]["agents"]] == ["status-unreadable"]
    assert data["waves"][0]["attempts"] == 0


@pytest.mark.e2e
def test_resume_over_hostile_state_relaunches_and_leaves_no_session(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane(
        "main",
        local_lane(),
        {1: "agents:\n  - {id: A1, prompt: x, executor: {local: {command: 'echo done'}}}\n"},
    )
    hostile_state(tmux_repo)
    result = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard", timeout=90)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert tmux_repo.status("main", 1, "A1")["code"] == 0  # relaunched, not adopted as running
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"
    wait_for(lambda: not server.sessions, 10, what="every session gone")


@pytest.mark.e2e
def test_agent_writing_a_running_status_is_failed_not_waited_on(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    """The agent can write its own status.json: "running" there must not make the launcher
    wait on (or crash over) an agent that claims to run forever."""
    command = (
        "d=$WAVE_STATE_DIR/waves/wave-$WAVE_NUMBER/agents/$WAVE_AGENT_ID; "
        'printf \'{"code": 0, "outcome": "running"}\' > $d/.s && mv $d/.s $d/status.json; '
        "sleep 30"
    )
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: f"agents:\n  - {{id: A1, prompt: x, executor: {{local: {{command: {json.dumps(command)}}}}}}}\n"
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "status-unreadable" in result.stderr and "not a final state" in result.stderr
    wait_for(lambda: not server.sessions, 15, what="the agent's session stopped")


@pytest.mark.e2e
def test_a_launcher_that_meets_an_unexpected_error_stops_its_agents(
    tmux_repo: Repo, server: libtmux.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a state file makes go wrong inside the launcher, it does not leave agents
    running with nobody watching them (a `kill -9` is what `--resume` is for)."""
    from wave_orchestrator.runtime.launch.launcher import Launcher, LaunchOptions, prepare_lane
    from wave_orchestrator.runtime.pool import loop as agent_pool

    command = json.dumps('echo $$ > "$WAVE_REPO/agent.pid"; exec sleep 300')
    tmux_repo.lane(
        "main",
        local_lane(),
        {1: f"agents:\n  - {{id: A1, prompt: x, executor: {{local: {{command: {command}}}}}}}\n"},
    )
    for key in ("WAVE_TMUX_SOCKET", "PATH"):
        monkeypatch.setenv(key, tmux_repo.env[key])
    pid_file = tmux_repo.root / "agent.pid"
    original = agent_pool.AgentPool._check_deadlines

    def explode(self: agent_pool.AgentPool, now: float) -> None:
        original(self, now)
        if pid_file.exists():
            raise RuntimeError("boom")

    monkeypatch.setattr(agent_pool.AgentPool, "_check_deadlines", explode)
    opts = LaunchOptions(lane="main", no_dashboard=True, quiet=True)
    with pytest.raises(RuntimeError, match="boom"):
        Launcher(prepare_lane(tmux_repo.root, opts), opts).run()
    pid = int(pid_file.read_text())
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 15, what="the agent stopped")
    wait_for(lambda: not server.sessions, 15, what="no session left")
