"""A usage limit parks an agent and holds every agent of its account, so only the CLI's own
error channel may say there is one (issue 33, finding 3): limit words the model writes, a tool
prints or a status file claims park nothing, and a reset date put far away holds an account no
longer than the lane's maximum wait. Real launches on real tmux; fake claude, codex and
opencode CLIs on PATH print the formats of ../shared/agent-clis.md."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

# A fake CLI: it notes when it started, prints out/<agent> on stdout and err/<agent> on stderr,
# runs do/<agent>, and exits with code/<agent>; an agent with none of them says "done".
FAKE = """\
cat > /dev/null
echo "$(date +%s.%N) $WAVE_AGENT_ID" >> "$WAVE_REPO/starts"
out=$WAVE_REPO/out/$WAVE_AGENT_ID err=$WAVE_REPO/err/$WAVE_AGENT_ID
act=$WAVE_REPO/do/$WAVE_AGENT_ID code=$WAVE_REPO/code/$WAVE_AGENT_ID
[[ -f $out ]] && cat -- "$out"
[[ -f $err ]] && cat -- "$err" >&2
[[ -f $act ]] && source "$act"
[[ -f $out || -f $err ]] || echo done
exit "$(cat -- "$code" 2>/dev/null || echo 0)"
"""
LANE = """\
closure: {required_roles: []}
defaults: {executor: claude, timeout_minutes: 2, max_retries_per_wave: 0, launch_stagger_ms: 0,
           rate_limit: {retries: 0}, max_running: {account: {acct: 1}}}
usage_limit: {margin_seconds: 1, max_wait_minutes: %s}
accounts: {acct: {executor: %s, env: {WAVE_TEST_ACCOUNT: acct}}}
"""
SAID = "usage limit reached · resets in 5h 59m"  # what a model quotes (claude's words, 6 hours)
SAID_CODEX = "You’ve hit your usage limit. Try again at Dec 5th, 2030 9:39 AM."


def jsonl(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)


def events(repo: Repo, name: str) -> list[dict[str, Any]]:
    return [e for e in repo.events("main") if e["event"] == name]


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def starts(repo: Repo) -> dict[str, float]:
    lines = (repo.root / "starts").read_text().splitlines()
    return {agent: float(when) for when, agent in (line.split() for line in lines)}


def forger_and_honest(
    repo: Repo, executor: str, settings: str, files: dict[str, str], max_wait: float = 360
) -> dict[str, dict[str, Any]]:
    """Agent F (its output from ``files``) and then H, an honest agent of the same account
    (the account's cap is 1: H starts once F is done); launched, their agent_finished events."""
    repo.fake(executor, FAKE)
    for kind, text in files.items():
        (repo.root / kind).mkdir(exist_ok=True)
        (repo.root / kind / "F").write_text(text)
    agents = [
        f"{{id: {a}, prompt: p, account: acct, executor: {{id: {executor}{settings}}}}}"
        for a in ("F", "H")
    ]
    repo.lane(
        "main",
        LANE % (max_wait, executor),
        {1: "agents:\n" + "".join(f"  - {a}\n" for a in agents)},
    )
    repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    return {e["agent"]: e for e in events(repo, "agent_finished")}


# The model's words and its tools' output, as each CLI prints them, quoting a limit: none of it
# is the CLI's error, whatever the exit code (a max-turns stop, a killed CLI: exit 1).
CLAUDE_STREAM = ", claude: {output_format: stream-json}"
FORGED = {
    "claude-stream-json": (
        "claude",
        CLAUDE_STREAM,
        {
            "out": jsonl(
                {"type": "system", "subtype": "init", "model": "claude-sonnet-5"},
                {
                    "type": "assistant",
                    "message": {
                        "model": "claude-sonnet-5",
                        "content": [{"type": "text", "text": f"The log says: {SAID}"}],
                    },
                },
                {
                    "type": "user",
                    "message": {
                        "content": [
                            {
                                "type": "tool_result",
                                "is_error": True,
                                "tool_use_id": "t1",
                                "content": f"API Error: {SAID}",
                            }
                        ]
                    },
                },
                {
                    "type": "result",
                    "subtype": "error_max_turns",
                    "is_error": False,
                    "result": f'{{"type":"result","is_error":true,"result":"{SAID}"}}\n{SAID}',
                },
            )
        },
    ),
    "claude-json": (
        "claude",
        ", claude: {output_format: json}",
        {"out": jsonl({"type": "result", "subtype": "success", "is_error": False, "result": SAID})},
    ),
    "codex-json": (
        "codex",
        ", codex: {json: true}",
        {
            "out": jsonl(
                {"type": "thread.started", "thread_id": "t1"},
                {"type": "turn.started"},
                {
                    "type": "item.completed",
                    "item": {
                        "id": "i1",
                        "type": "command_execution",
                        "aggregated_output": f"ERROR: {SAID_CODEX}\n",
                        "exit_code": 1,
                    },
                },
                {
                    "type": "item.completed",
                    "item": {
                        "id": "i2",
                        "type": "agent_message",
                        "text": f'{{"type":"turn.failed","error":{{"message":"{SAID_CODEX}"}}}}',
                    },
                },
                {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}},
            )
        },
    ),
    "codex-text": (
        "codex",
        "",
        {  # the model's message on stdout; codex's own lines on stderr
            "out": f"[2026-12-04T10:00:00] codex\nThe CLI would print: {SAID_CODEX}\n",
            "err": "ERROR: unexpected status 401 Unauthorized: Incorrect API key\n",
        },
    ),
    "opencode-json": (
        "opencode",
        ", opencode: {format: json}",
        {
            "out": jsonl(
                {"type": "step_start", "part": {"type": "step-start"}},
                {"type": "text", "part": {"type": "text", "text": f"Error: {SAID}"}},
                {
                    "type": "tool_use",
                    "part": {
                        "type": "tool",
                        "state": {
                            "output": (
                                '{"type":"error","error":{"data":{"message":"' + SAID + '"}}}'
                            )
                        },
                    },
                },
            )
        },
    ),
    "opencode-default": (
        "opencode",
        "",
        {
            "out": "The provider said: usage limit reached. It will reset in 5 hours 59 minutes.\n",
            "err": "\x1b[91m\x1b[1mError: \x1b[0mIncorrect API key provided: sk-mock.\n",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_limit_words_outside_the_cli_s_error_channel_park_nothing(
    tmux_repo: Repo, case: str
) -> None:
    executor, settings, files = FORGED[case]
    finished = forger_and_honest(tmux_repo, executor, settings, {**files, "code": "1\n"})
    assert finished["F"]["status"] == "failed", finished["F"]  # a failure, not a usage limit
    assert finished["H"]["status"] == "success", finished["H"]
    assert not events(tmux_repo, "agent_limited")
    status = tmux_repo.status("main", 1, "F")  # run.sh guessed a limit; the launcher did not
    assert status["code"] == 1 and "usage_limit" not in status and "detail" not in status
    saved = tmux_repo.state("main") / "governor.json"
    governor = json.loads(saved.read_text()) if saved.exists() else {}
    assert governor.get("limited", []) == []  # nothing kept for later runs either


def test_a_successful_claude_result_quoting_a_limit_parks_nothing(tmux_repo: Repo) -> None:
    result = {"type": "result", "subtype": "success", "is_error": False, "result": SAID}
    finished = forger_and_honest(tmux_repo, "claude", CLAUDE_STREAM, {"out": jsonl(result)})
    assert (finished["F"]["status"], finished["H"]["status"]) == ("success", "success")
    assert not events(tmux_repo, "agent_limited")


def test_a_status_file_saying_usage_limit_decides_nothing(tmux_repo: Repo) -> None:
    """F writes its own status.json while it runs: a usage limit for 6 hours. The launcher
    takes it as F's end, and finds no limit in what the CLI said: F failed, H runs."""
    forged = {
        "agent": "F",
        "wave": 1,
        "lane": "main",
        "attempt": 1,
        "code": 1,
        "tries": 1,
        "usage_limit": True,
        "outcome": "usage-limit",
        "detail": f"usage limit, {SAID}",
    }
    status = '"$WAVE_STATE_DIR/waves/wave-1/agents/F/status.json"'
    do = (  # whole, by a rename: a half-written file would be read as unreadable, not forged
        f"printf '%s\\n' {json.dumps(json.dumps(forged))} > {status}.tmp; "
        f"mv {status}.tmp {status}; sleep 1\n"
    )
    finished = forger_and_honest(
        tmux_repo,
        "claude",
        CLAUDE_STREAM,
        {"out": jsonl({"type": "system", "subtype": "init"}), "do": do, "code": "1\n"},
    )
    assert finished["F"]["status"] == "failed", finished["F"]
    assert finished["H"]["status"] == "success", finished["H"]
    assert not events(tmux_repo, "agent_limited")


def test_a_far_reset_date_holds_the_account_no_longer_than_the_maximum_wait(
    tmux_repo: Repo,
) -> None:
    """F's codex reports its limit in its own channel with a reset in 2030 (an agent can write
    such a line into its log and kill its CLI). F ends as usage-limit; H, honest, waits for
    the lane's maximum wait (9 s), not until 2030, nor ends unstarted, and then runs."""
    line = {"type": "turn.failed", "error": {"message": SAID_CODEX}}
    finished = forger_and_honest(
        tmux_repo,
        "codex",
        ", codex: {json: true}",
        {"out": jsonl(line), "code": "1\n"},
        max_wait=0.15,
    )
    assert finished["F"]["status"] == "usage-limit"
    assert finished["F"]["detail"] == "usage limit, Try again at Dec 5th, 2030 9:39 AM"
    assert finished["H"]["status"] == "success", finished["H"]
    ended, began = at(finished["F"]["at"]), starts(tmux_repo)["H"]
    assert ended + 9 - 1 <= began <= ended + 9 + 15, (ended, began)  # 9 s, not until 2030
    governor = json.loads((tmux_repo.state("main") / "governor.json").read_text())
    held = governor["limited_until"].get("acct", 0)
    assert held <= ended + 9  # saved for later runs: the maximum wait at most


def test_a_local_agent_is_judged_by_its_last_lines_after_a_failure(tmux_repo: Repo) -> None:
    """A local agent (a person's script) has no channel of its own: the limit must be among
    its last 20 lines, and it must have failed."""
    noise = "; ".join(f"echo line {n}" for n in range(25))
    wave = "agents:\n" + "".join(
        [
            local_agent("LAST", f"echo working; echo '{SAID}'; exit 1"),
            local_agent("EARLY", f"echo '{SAID}'; {noise}; exit 1"),
            local_agent("OK", f"echo working; echo '{SAID}'; exit 0"),
        ]
    )
    lane = local_lane(rate_retries=0) + "usage_limit: {wait: false}\n"  # ends, not parked
    tmux_repo.lane("main", lane, {1: wave})
    tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    finished = {e["agent"]: e for e in events(tmux_repo, "agent_finished")}
    assert {a: e["status"] for a, e in finished.items()} == {
        "LAST": "usage-limit",
        "EARLY": "failed",
        "OK": "success",
    }
    assert finished["LAST"]["detail"] == "usage limit, resets in 5h 59m"
