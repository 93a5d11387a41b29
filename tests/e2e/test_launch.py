"""End to end: the real `wave` command, real tmux sessions, real run.sh wrappers, fake CLIs."""

from __future__ import annotations

import json
import os
import re
import time

import libtmux
import pytest
from helpers import Repo, parse_at, wait_for

pytestmark = pytest.mark.e2e

FAST_LANE = """
closure: {{required_roles: []}}
defaults:
  executor: local
  timeout_minutes: 1
  max_retries_per_wave: {retries}
  launch_stagger_ms: 0
  rate_limit: {{retries: 2, base_delay_seconds: 1, max_delay_seconds: 8, jitter_seconds: 0}}
"""

# Every fake records its argv (one per line) and its stdin, then says something and exits 0.
RECORDER = """
out="$WAVE_REPO/out"; mkdir -p "$out"
printf '%s\\n' "$0" "$@" > "$out/$WAVE_AGENT_ID.argv"
cat > "$out/$WAVE_AGENT_ID.stdin"
echo "fake $(basename "$0") done for $WAVE_AGENT_ID"
"""


def by_event(events: list[dict], name: str, agent: str | None = None) -> list[dict]:
    return [e for e in events if e["event"] == name and (agent is None or e.get("agent") == agent)]


def test_five_agents_with_different_executors_complete(tmux_repo: Repo) -> None:
    for cli in ("codex", "claude", "opencode"):
        tmux_repo.fake(cli, RECORDER)
    tmux_repo.fake("my-agent", RECORDER)
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        wave: 1
        agents:
          - {id: C1, prompt: codex task, executor: {id: codex, model: gpt-5-codex, reasoning: high}}
          - {id: K1, prompt: claude task, executor: {id: claude, model: sonnet, claude: {allowed_tools: [Bash, Edit]}}}
          - {id: O1, prompt: opencode task, executor: {id: opencode, model: prov/m1}}
          - {id: L1, prompt: local argv task, executor: {local: {command: [my-agent, --flag]}}}
          - {id: L2, prompt: local string task, executor: {local: {command: "my-agent from-bash"}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr

    ids = ["C1", "K1", "O1", "L1", "L2"]
    argv = {i: (tmux_repo.root / "out" / f"{i}.argv").read_text().splitlines()[1:] for i in ids}
    assert argv["C1"] == [
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "-m",
        "gpt-5-codex",
        "-c",
        "model_reasoning_effort=high",
        "-",
    ]
    # claude gets a new conversation id of its own, to be continued after a limit or a crash
    assert argv["K1"][:2] == ["-p", "--session-id"]
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", argv["K1"][2]
    )
    assert argv["K1"][3:] == [
        "--output-format",
        "text",
        "--model",
        "sonnet",
        "--allowedTools=Bash,Edit",
    ]
    assert argv["O1"] == ["run", "--format", "default", "--model", "prov/m1", "--title", "wave-O1"]
    assert argv["L1"] == ["--flag"]
    assert argv["L2"] == ["from-bash"]
    for i in ids:
        stdin = (tmux_repo.root / "out" / f"{i}.stdin").read_text()
        prompt = (tmux_repo.agent_dir("main", 1, i) / "prompt.md").read_text()
        assert stdin == prompt and "task" in stdin

    events = tmux_repo.events("main")
    finished = {e["agent"]: e for e in by_event(events, "agent_finished")}
    state = tmux_repo.run_state("main")
    assert state["waves"]["1"]["state"] == "completed"
    assert [h["to"] for h in state["history"]] == ["running", "completed"]
    for i in ids:
        status = tmux_repo.status("main", 1, i)
        assert status["code"] == 0 and status["tries"] == 1 and status["agent"] == i
        assert finished[i]["status"] == "success" and finished[i]["code"] == 0
        assert len(by_event(events, "agent_launched", i)) == 1
    assert by_event(events, "wave_completed")[0]["wave"] == 1
    assert events[-1]["event"] == "launcher_stopped" and events[-1]["code"] == 0
    # Sessions of a finished wave are killed unless --keep-sessions.
    assert not any(s.startswith("w1-") for s in _sessions(tmux_repo))
    assert not (tmux_repo.state("main") / "launcher.lock").exists()


def _sessions(repo: Repo) -> list[str]:
    server = libtmux.Server(socket_name=repo.env["WAVE_TMUX_SOCKET"])
    if not server.is_alive():
        return []
    result = server.cmd("list-sessions", "-F", "#{session_name}")
    return list(result.stdout) if result.returncode == 0 else []


def test_rate_limited_twice_then_succeeds(tmux_repo: Repo) -> None:
    tmux_repo.fake(
        "codex",
        """
        n_file="$WAVE_REPO/tries"; n=$(( $(cat "$n_file" 2>/dev/null || echo 0) + 1 )); echo $n > "$n_file"
        date +%s.%N >> "$WAVE_REPO/try-times"
        if (( n <= 2 )); then echo "ERROR: exceeded retry limit, last status: 429 Too Many Requests"; exit 1; fi
        echo "finally done"
    """,
    )
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: work, executor: {id: codex}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    status = tmux_repo.status("main", 1, "A1")
    assert (status["code"], status["tries"], status["rate_limited"]) == (0, 3, 2)
    log = (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()
    retry_lines = [ln for ln in log.splitlines() if ln.startswith("[wave] rate limited")]
    # min(base * 2^(try-1), max) + jitter (0 here): 1 s, then 2 s.
    assert retry_lines == [
        "[wave] rate limited: try 1/3, retrying in 1s",
        "[wave] rate limited: try 2/3, retrying in 2s",
    ]
    times = [float(t) for t in (tmux_repo.root / "try-times").read_text().split()]
    assert times[1] - times[0] >= 1.0 and times[2] - times[1] >= 2.0
    limited = by_event(tmux_repo.events("main"), "agent_rate_limited", "A1")
    assert [e["try"] for e in limited] == [1, 2]
    log_events = [
        json.loads(line)["event"] for line in (tmux_repo.state("main") / "launcher.log").open()
    ]
    assert "agent A1 rate-limited, try 2/3" in log_events


def test_plain_failure_is_not_retried_by_wrapper_but_relaunched_on_fallback(
    tmux_repo: Repo,
) -> None:
    tmux_repo.fake(
        "codex", 'echo "codex ran" >> "$WAVE_REPO/codex-runs"; echo "boom: compile error"; exit 3\n'
    )
    tmux_repo.fake(
        "claude", 'echo "claude ran attempt $WAVE_ATTEMPT" >> "$WAVE_REPO/claude-runs"; echo ok\n'
    )
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=1),
        {
            1: """
        agents:
          - {id: A1, prompt: work, executor: {id: codex, fallbacks: [claude]}}
          - {id: B1, prompt: fine, executor: {local: {command: ["true"]}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert (tmux_repo.root / "codex-runs").read_text().count("codex ran") == 1  # no wrapper retry
    assert (tmux_repo.root / "claude-runs").read_text() == "claude ran attempt 2\n"
    agent = tmux_repo.agent_dir("main", 1, "A1")
    first = json.loads((agent / "attempt-1.status.json").read_text())
    assert (first["code"], first["tries"], first["rate_limited"]) == (3, 1, 0)
    assert "boom: compile error" in (agent / "attempt-1.log").read_text()
    assert tmux_repo.status("main", 1, "A1")["attempt"] == 2
    events = tmux_repo.events("main")
    launched = by_event(events, "agent_launched", "A1")
    assert [(e["executor"], e["attempt"]) for e in launched] == [("codex", 1), ("claude", 2)]
    assert len(by_event(events, "agent_launched", "B1")) == 1  # succeeded agents are not relaunched
    assert by_event(events, "wave_retry")[0]["agents"] == ["A1"]


def test_failure_without_retries_left_exits_1_with_summary(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=1),
        {
            1: """
        agents:
          - {id: A1, prompt: work, executor: {local: {command: "echo broken; exit 5"}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    assert "wave 1 failed after 2 attempt(s)" in result.stderr
    assert (
        "  - A1: failed, exit 5, log: .wave/main/waves/wave-1/agents/A1/output.log" in result.stderr
    )
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "failed"
    assert by_event(tmux_repo.events("main"), "wave_failed")


def test_budget_overrun_is_killed_and_reported_timeout(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - id: A1
            prompt: never ends
            executor: {budget: {minutes: 0.05}, local: {command: "echo $$ > \\"$WAVE_REPO/pid\\"; exec sleep 60"}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    events = tmux_repo.events("main")
    launched = by_event(events, "agent_launched", "A1")[0]
    finished = by_event(events, "agent_finished", "A1")[0]
    assert finished["status"] == "timeout"
    late = parse_at(finished["at"]) - parse_at(launched["at"]) - 3.0
    assert -0.1 <= late <= 2.0, f"timeout reported {late:.2f}s after the deadline"
    pid = int((tmux_repo.root / "pid").read_text())
    wait_for(lambda: not _alive(pid), 15, what="the agent process to be gone")
    assert tmux_repo.status("main", 1, "A1")["outcome"] == "timeout"
    assert "A1: timeout (budget 3s)" in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_session_killed_from_outside_is_session_missing(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: wait, executor: {local: {command: "sleep 60"}}}
    """
        },
    )
    proc = tmux_repo.spawn("launch", "--lane", "main")
    try:
        wait_for(
            lambda: by_event(tmux_repo.events("main"), "agent_launched", "A1"), 20, what="launch"
        )
        killed_at = time.time()
        assert server.cmd("kill-session", "-t", "=w1-A1").returncode == 0
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    finished = by_event(tmux_repo.events("main"), "agent_finished", "A1")[0]
    assert finished["status"] == "session-missing"
    assert parse_at(finished["at"]) - killed_at <= 3.0


def test_hostile_prompt_reaches_cli_byte_for_byte(tmux_repo: Repo) -> None:
    hostile = "run $(touch PWNED) and `touch PWNED` \"quoted\" 'single' '\\'' ; touch PWNED\nline two: ünïcödé 日本 ✓\n"
    (tmux_repo.root / "prompt.txt").write_text(hostile, encoding="utf-8")
    tmux_repo.fake("codex", RECORDER)
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - id: A1
            prompt_file: prompt.txt
            executor: {id: codex, model: "m'; touch PWNED; echo '", env: {NOTE: "$(touch PWNED)"}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    received = (tmux_repo.root / "out" / "A1.stdin").read_bytes()
    assert hostile.encode() in received
    assert received == (tmux_repo.agent_dir("main", 1, "A1") / "prompt.md").read_bytes()
    argv = (tmux_repo.root / "out" / "A1.argv").read_text().splitlines()
    assert "m'; touch PWNED; echo '" in argv
    assert not list(tmux_repo.root.rglob("PWNED")) and not os.path.exists("PWNED")


def test_second_launch_exits_3_while_first_runs_and_stale_lock_is_taken_over(
    tmux_repo: Repo,
) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: wait, executor: {local: {command: "sleep 60"}}}
    """
        },
    )
    first = tmux_repo.spawn("launch", "--lane", "main")
    try:
        wait_for(
            lambda: by_event(tmux_repo.events("main"), "agent_launched", "A1"), 20, what="launch"
        )
        second = tmux_repo.wave("launch", "--lane", "main")
        assert second.returncode == 3
        assert f"another launcher is active on lane 'main' (pid {first.pid}" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=30)
    assert first.returncode == 143
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    assert not (tmux_repo.state("main") / "launcher.lock").exists()

    # A lock left by a dead launcher is taken over with a warning.
    dead = __import__("subprocess").Popen(["true"])
    dead.wait()
    lock = tmux_repo.state("main") / "launcher.lock"
    lock.write_text(
        json.dumps({"pid": dead.pid, "host": __import__("socket").gethostname(), "started_at": "x"})
    )
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: quick, executor: {local: {command: "true"}}}
    """
        },
    )
    third = tmux_repo.wave("launch", "--lane", "main")
    assert third.returncode == 0, third.stderr
    assert "took over a stale lock" in third.stderr


def test_dry_run_starts_no_tmux_server_and_writes_previews(repo: Repo) -> None:
    repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: task one, executor: {id: codex, env: {OPENAI_API_KEY: sk-secret, PLAIN: visible}}}
          - {id: A2, prompt: task two, executor: {id: claude, claude: {permission_mode: acceptEdits}}}
    """
        },
    )
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert not libtmux.Server(socket_name=repo.env["WAVE_TMUX_SOCKET"]).is_alive()
    base = repo.state("main") / "dry-run"
    preview = json.loads((base / "launch-preview.json").read_text())
    assert [p["agent"] for p in preview] == ["A1", "A2"]
    assert preview[0]["env"]["OPENAI_API_KEY"] == "***" and preview[0]["env"]["PLAIN"] == "visible"
    assert preview[0]["argv"][:2] == ["codex", "exec"] and preview[0]["session"] == "w1-A1"
    for agent in ("A1", "A2"):
        folder = base / "waves" / "wave-1" / "agents" / agent
        assert (folder / "prompt.md").is_file() and (folder / "run.sh").is_file()
        assert not (folder / "status.json").exists()
    # The CLIs are not installed here: the dry run still works and names them.
    out = json.loads(result.stdout)
    assert any("codex" in m for m in out["missing_executables"])
    assert "agent  role" in result.stderr  # the per-wave table
    assert not (repo.state("main") / "run-state.json").exists()


def test_missing_executable_stops_live_launch_before_any_session(repo: Repo) -> None:
    repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: task, executor: {id: opencode, opencode: {command: no-such-opencode}}}
    """
        },
    )
    result = repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    assert "agent w1/A1: executor opencode needs `no-such-opencode`" in result.stderr
    assert not libtmux.Server(socket_name=repo.env["WAVE_TMUX_SOCKET"]).is_alive()
    assert not (repo.state("main") / "events.jsonl").exists()


def test_dead_launcher_with_live_sessions_is_refused(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: quick, executor: {local: {command: "true"}}}
    """
        },
    )
    server.new_session("w1-A1")  # an agent of a launcher that was killed with -9
    dead = __import__("subprocess").Popen(["true"])
    dead.wait()
    lock = tmux_repo.state("main") / "launcher.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": dead.pid, "host": __import__("socket").gethostname()}))
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 3
    assert f"launcher pid {dead.pid} died and left 1 agent session(s)" in result.stderr
    assert "--resume" in result.stderr
    assert not (tmux_repo.state("main") / "events.jsonl").exists()  # nothing started
    assert not lock.exists() or json.loads(lock.read_text())["pid"] == dead.pid


def test_wrapper_killed_by_a_signal_reports_the_panes_exit_status(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: die, executor: {local: {command: "kill -9 $PPID; sleep 5"}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--json")
    assert result.returncode == 1
    finished = by_event(tmux_repo.events("main"), "agent_finished", "A1")[0]
    assert finished["status"] == "failed" and finished["code"] == 137
    assert "without writing a status file" in finished["detail"]
    doc = json.loads(result.stdout)  # --json still prints a document when the wave fails
    assert doc["code"] == 1 and doc["waves"][0]["failures"][0]["agent"] == "A1"


def test_agents_can_run_wave_against_their_own_lane(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: look, executor: {local: {command: "wave status --json > \\"$WAVE_REPO/seen.json\\""}}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    seen = json.loads((tmux_repo.root / "seen.json").read_text())
    assert seen["lane"] == "main" and seen["launcher"]["alive"] is True
    assert seen["state_dir"] == str(tmux_repo.state("main"))
    assert seen["waves"][0]["state"] == "running"


def test_finished_attempts_are_recorded_as_metrics_with_tokens_and_cost(tmux_repo: Repo) -> None:
    result_line = json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "total_cost_usd": 0.25,
            "usage": {
                "input_tokens": 100,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 20,
                "output_tokens": 30,
            },
        }
    )
    tmux_repo.fake("claude", f"cat > /dev/null; echo '{result_line}'\n")
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: K1, prompt: a, executor: {id: claude, model: anthropic/claude-sonnet-5, reasoning: high,
             claude: {output_format: stream-json}}}
          - {id: K2, prompt: b, executor: {id: claude, model: claude-sonnet-5, reasoning: high,
             claude: {output_format: json}}}
          - {id: L1, prompt: c, executor: {local: {command: "exit 1"}}}
    """
        },
    )
    assert tmux_repo.wave("launch", "--lane", "main").returncode == 1
    records = [
        json.loads(line)
        for line in (tmux_repo.state("main") / "metrics.jsonl").read_text().splitlines()
    ]
    by_agent = {r["agent"]: r for r in records}
    assert set(by_agent) == {"K1", "K2", "L1"}
    assert by_agent["K1"]["cost_usd"] == 0.25 and by_agent["K1"]["input_tokens"] == 120
    assert by_agent["K1"]["output_tokens"] == 30 and by_agent["K1"]["status"] == "success"
    assert by_agent["L1"]["status"] == "failed" and "cost_usd" not in by_agent["L1"]
    report = json.loads(tmux_repo.wave("metrics", "--lane", "main", "--json").stdout)
    sonnet = next(g for g in report["groups"] if g["model"] == "claude-sonnet-5")
    assert (sonnet["runs"], sonnet["successes"], sonnet["total_cost"]) == (2, 2, 0.5)


def test_agents_get_this_launchers_environment_not_the_tmux_servers(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: env, executor: {local: {command: "echo \\"$FOO\\" >> \\"$WAVE_REPO/foo\\""}}}
    """
        },
    )
    tmux_repo.env["FOO"] = "old"
    assert tmux_repo.wave("launch", "--lane", "main", "--keep-sessions").returncode == 0
    assert _sessions(tmux_repo)  # the tmux server, started with FOO=old, is still running
    tmux_repo.env["FOO"] = "new"  # not part of A1's definition: --fresh, or A1 is reused
    assert tmux_repo.wave("launch", "--lane", "main", "--fresh").returncode == 0
    assert (tmux_repo.root / "foo").read_text() == "old\nnew\n"
    env_file = tmux_repo.state("main") / "agent-env.sh"
    assert env_file.stat().st_mode & 0o077 == 0  # owner-only: it holds the launcher's secrets


def test_a_finished_agents_pane_still_shows_its_last_output(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {
            1: """
        agents:
          - {id: A1, prompt: talk, executor: {local: {command: "seq 1 200; echo FINAL-LINE"}}}
    """
        },
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--keep-sessions").returncode == 0

    def shown() -> bool:  # the pane catches up within the wrapper's polling interval
        return "FINAL-LINE" in "\n".join(server.cmd("capture-pane", "-p", "-t", "=w1-A1:").stdout)

    wait_for(shown, 5, what="the pane to show the last line")
    assert "FINAL-LINE" in (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()


def test_stop_says_it_removed_the_sessions_kept_for_inspection(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        FAST_LANE.format(retries=0),
        {1: "agents:\n  - {id: A1, prompt: p, executor: {local: {command: 'true'}}}\n"},
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--keep-sessions").returncode == 0
    assert "w1-A1" in _sessions(tmux_repo)
    stop = tmux_repo.wave("stop", "--lane", "main")
    assert stop.returncode == 0, stop.stderr
    assert "no launcher is running on lane main" in stop.stdout
    assert "removed 1 ended agent session(s) kept for inspection (--keep-sessions): w1-A1" in (
        stop.stdout
    )
    assert "w1-A1" not in _sessions(tmux_repo)
