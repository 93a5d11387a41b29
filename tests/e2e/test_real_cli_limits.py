"""End to end, with fakes shaped like the real CLIs (issue 9): an agent whose PATH holds only
bash, claude's own retry loop shown as rate-limited without tripping the stall clock, and
opencode's first start done by one agent before the others."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from helpers import Repo, local_lane, parse_at, wait_for

pytestmark = pytest.mark.e2e


def events(repo: Repo, name: str) -> list[dict[str, Any]]:
    return [e for e in repo.events("main") if e["event"] == name]


def test_agent_with_a_one_entry_path_succeeds(tmux_repo: Repo) -> None:
    only_bash = tmux_repo.root / "only-bash"
    only_bash.mkdir()
    (only_bash / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    tmux_repo.lane(
        "main",
        local_lane(stall=0, rate_retries=0),
        {
            1: f"""
        agents:
          - id: A1
            prompt: builtins only
            executor:
              env: {{PATH: {only_bash}}}
              local: {{command: 'read -r line; echo "PATH=$PATH read: $line"'}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    status = tmux_repo.status("main", 1, "A1")
    assert status["code"] == 0 and status["finished_at"].endswith("Z")
    log = (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()
    private_bin = tmux_repo.state("main") / "bin"  # wave's own commands stay reachable
    assert f"PATH={private_bin}:{only_bash} read: " in log
    assert events(tmux_repo, "agent_finished")[0]["status"] == "success"


# claude -p --output-format stream-json while the provider answers 429: an init event, then
# one api_retry line per retry (each announcing a long wait), then, here, a success once the
# test has looked. It stays silent for longer than the stall window after its last retry line.
CLAUDE_RETRYING = r"""
say() { printf '%s\n' "$1"; }
say '{"type":"system","subtype":"init","model":"claude-sonnet-5","session_id":"s1"}'
for n in 1 2; do
  say '{"type":"system","subtype":"api_retry","attempt":'$n',"max_retries":10,"retry_delay_ms":60000.5,"error_status":429,"error":"rate_limit","session_id":"s1"}'
done
start=$SECONDS
until [[ -e "$WAVE_REPO/go" ]] && (( SECONDS - start >= 5 )); do
  (( SECONDS - start > 40 )) && exit 9
  sleep 0.1
done
say '{"type":"assistant","message":{"model":"claude-sonnet-5","content":[{"type":"text","text":"done"}]}}'
say '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.01,"usage":{"input_tokens":5,"output_tokens":1},"modelUsage":{"claude-sonnet-5":{"inputTokens":5,"outputTokens":1,"costUSD":0.01}}}'
"""


def test_claude_retrying_on_its_own_shows_as_rate_limited_and_is_not_a_stall(
    tmux_repo: Repo,
) -> None:
    tmux_repo.fake("claude", CLAUDE_RETRYING)
    tmux_repo.lane(
        "main",
        local_lane(stall=0.05, rate_retries=0),  # 3 s of silence would stop it
        {
            1: """
        agents:
          - {id: K1, prompt: work, executor: {id: claude, model: sonnet, claude: {output_format: stream-json}}}
    """
        },
    )
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        snapshot = tmux_repo.state("main") / "waves/wave-1/dashboard.json"

        def retrying() -> dict[str, Any] | None:
            try:
                row = json.loads(snapshot.read_text())["agents"][0]
            except (OSError, ValueError, LookupError):
                return None
            return row if row.get("state_note") == "CLI retrying 2/10" else None

        row = wait_for(retrying, 15, what="K1 shown as CLI retrying 2/10")
        assert row["state"] == "rate-limited"
        status = tmux_repo.wave("status", "--lane", "main")
        assert "rate-limited (CLI retrying 2/10)" in status.stdout, status.stdout
        tmux_repo.env.update(COLUMNS="160", LINES="40")
        frame = tmux_repo.wave("dashboard", "--lane", "main", "--once")
        assert "rate-limited (CLI retrying 2/10)" in frame.stdout, frame.stdout
        (tmux_repo.root / "go").touch()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    finished = events(tmux_repo, "agent_finished")[0]
    assert finished["status"] == "success"  # not "stalled": the CLI said it would wait 60 s
    limited = events(tmux_repo, "agent_rate_limited")
    assert [(e["by"], e["retry"], e["max_retries"]) for e in limited] == [
        ("cli", 1, 10),
        ("cli", 2, 10),
    ]
    final = json.loads(snapshot.read_text())["agents"][0]
    assert final["state"] == "completed" and final["state_note"] is None


# opencode's first start on a fresh HOME creates its database; a second opencode started
# meanwhile fails with `Failed query: CREATE TABLE ...`. This fake takes 1.5 s to create it.
OPENCODE_FIRST_START = r"""
db="$WAVE_REPO/opencode.db"
echo "$WAVE_AGENT_ID $(date +%s.%N)" >> "$WAVE_REPO/opencode-starts"
if [[ ! -e $db ]]; then
  if [[ -e $db.creating ]]; then
    printf '\e[91m\e[1mError: \e[0mUnexpected error\n\nFailed query: \n  CREATE TABLE `workspace` (\n  );\nparams: \n'
    exit 1
  fi
  touch "$db.creating"; sleep 1.5; touch "$db"
fi
echo '{"type":"step_start","part":{"type":"step-start"}}'
echo "$WAVE_AGENT_ID $(date +%s.%N)" >> "$WAVE_REPO/opencode-ready"
sleep 0.5
echo '{"type":"text","part":{"type":"text","text":"done"}}'
"""


def test_the_first_opencode_agent_starts_alone(tmux_repo: Repo) -> None:
    tmux_repo.fake("opencode", OPENCODE_FIRST_START)
    tmux_repo.lane(
        "main",
        local_lane(stall=0, rate_retries=0),
        {
            1: """
        agents:
          - {id: O1, prompt: a, executor: {id: opencode}}
          - {id: O2, prompt: b, executor: {id: opencode}}
          - {id: L1, prompt: c, executor: {local: {command: "echo local"}}}
          - {id: O3, prompt: d, executor: {id: opencode}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    launched = {e["agent"]: parse_at(e["at"]) for e in events(tmux_repo, "agent_launched")}
    ready = dict(
        (agent, float(at))
        for agent, at in (
            line.split() for line in (tmux_repo.root / "opencode-ready").read_text().splitlines()
        )
    )
    # O2 and O3 start once O1 has printed its first output (its database exists by then) ...
    assert launched["O2"] >= ready["O1"] and launched["O3"] >= ready["O1"]
    # ... and a local agent between them is not held back.
    assert launched["L1"] < ready["O1"]
    assert {e["agent"]: e["status"] for e in events(tmux_repo, "agent_finished")} == {
        "O1": "success",
        "O2": "success",
        "L1": "success",
        "O3": "success",
    }
