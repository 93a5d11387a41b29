"""What an agent is doing, end to end: a fake `claude` on PATH prints stream-json events as the
real one does (an init, a Bash tool call, then, once let go, its answer and its result), in a
real tmux session; `wave status --json` and `wave status` show its tool, turns and tokens
while it runs, its result does not end it, and its summary keeps the totals."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from helpers import Repo, wait_for

pytestmark = pytest.mark.e2e

# Its events, as claude -p --output-format stream-json --verbose prints them; it holds on
# hold/<agent> after its tool call, and on after/<agent> after its result (still running).
FAKE = r"""
agent=$WAVE_AGENT_ID; id=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [[ ${args[$i]} == --session-id ]] && id=${args[$((i + 1))]}
done
cat > /dev/null
say() { printf '%s\n' "$1"; }
say '{"type":"system","subtype":"init","session_id":"'"$id"'","tools":["Bash","Edit"]}'
say '{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Let me run the tests."}],"usage":{"input_tokens":3000,"output_tokens":20}},"parent_tool_use_id":null,"session_id":"'"$id"'"}'
say '{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"pytest -q"}}],"usage":{"input_tokens":3000,"output_tokens":40}},"parent_tool_use_id":null,"session_id":"'"$id"'"}'
while [[ -f "$WAVE_REPO/hold/$agent" ]]; do sleep 0.1; done
say '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"3 passed"}]},"parent_tool_use_id":null,"session_id":"'"$id"'"}'
say '{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"All 3 tests pass.\u001b[31m"}],"usage":{"input_tokens":3100,"output_tokens":12}},"parent_tool_use_id":null,"session_id":"'"$id"'"}'
say '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"total_cost_usd":0.4213,"usage":{"input_tokens":6100,"output_tokens":72},"session_id":"'"$id"'"}'
while [[ -f "$WAVE_REPO/after/$agent" ]]; do sleep 0.1; done
"""
LANE = """\
closure: {required_roles: []}
defaults: {timeout_minutes: 3, max_retries_per_wave: 0, launch_stagger_ms: 0}
"""
AGENTS = """\
agents:
  - {id: K, prompt: run the tests, executor: {id: claude, claude: {output_format: stream-json}}}
  - {id: T, prompt: the same in text, executor: {id: claude}}
"""


def agent_row(repo: Repo, agent: str) -> dict[str, Any] | None:
    done = repo.wave("status", "--lane", "main", "--json")
    waves = json.loads(done.stdout)["waves"] if done.stdout else []
    rows = [a for w in waves for a in w["agents"] if a["id"] == agent]
    return rows[0] if rows else None


def streaming(repo: Repo, agent: str, activity: str) -> dict[str, Any] | None:
    """Its row once its stream says ``activity``; else None."""
    row = agent_row(repo, agent)
    stream = row.get("stream") if row else None
    return row if stream and stream["activity"] == activity else None


def test_wave_status_shows_what_a_streaming_agent_does_while_it_runs(tmux_repo: Repo) -> None:
    tmux_repo.fake("claude", FAKE)
    for folder in ("hold", "after"):
        (tmux_repo.root / folder).mkdir()
        for agent in ("K", "T"):
            (tmux_repo.root / folder / agent).write_text("")
    tmux_repo.lane("main", LANE, {1: AGENTS})
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        row = wait_for(
            lambda: streaming(tmux_repo, "K", "tool"), 30, 0.2, "K's stream to show its tool"
        )
        assert row["state"] == "running"
        stream = row["stream"]
        assert (stream["tool"], stream["turns"], stream["tool_calls"]) == ("Bash", 1, 1)
        assert (stream["input_tokens"], stream["output_tokens"]) == (3000, 40)
        assert stream["last_line"] == "Let me run the tests."
        assert stream["conversation"] == row["conversation"]  # the id wave gave it
        text = agent_row(tmux_repo, "T")
        assert text is not None and text["stream"] is None  # claude's text output: no stream
        shown = tmux_repo.wave("status", "--lane", "main").stdout
        assert "tool: Bash · 1 turn · 1 tool · 3.0k tok" in shown, shown
        assert "last said: Let me run the tests." in shown

        for agent in ("K", "T"):
            (tmux_repo.root / "hold" / agent).unlink()
        row = wait_for(
            lambda: streaming(tmux_repo, "K", "idle"), 30, 0.2, "K's stream to show its result"
        )
        assert row["state"] == "running"  # its result is not its end: its process runs on
        stream = row["stream"]
        assert (stream["turns"], stream["cost_usd"]) == (2, 0.4213)
        assert stream["last_line"] == "All 3 tests pass."  # the escape never shown
        shown = tmux_repo.wave("status", "--lane", "main").stdout
        assert re.search(r"idle · 2 turns · 1 tool · 6\.2k tok · \$0\.42", shown), shown
    finally:
        for agent in ("K", "T"):
            for folder in ("hold", "after"):
                (tmux_repo.root / folder / agent).unlink(missing_ok=True)
        _, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, err
    row = agent_row(tmux_repo, "K")
    assert row is not None and row["state"] == "completed"
    assert "tool:" not in tmux_repo.wave("status", "--lane", "main").stdout  # it ended
    summary = json.loads((tmux_repo.agent_dir("main", 1, "K") / "summary.json").read_text())
    assert summary["stream"]["cost_usd"] == 0.4213 and summary["stream"]["tool_calls"] == 1
    text_summary = json.loads((tmux_repo.agent_dir("main", 1, "T") / "summary.json").read_text())
    assert text_summary["stream"] is None
