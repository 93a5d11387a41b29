"""The fleet governor end to end (issue 25): agents parked on a usage limit and launched again
after its reset, accounts that wait together, caps per executor, the spend limit, and a
launcher killed while an agent is parked. Fake claude, codex and opencode CLIs on PATH print
the real limit texts of ../shared/agent-clis.md."""

from __future__ import annotations

import json
import math
import os
import signal
import time
from datetime import UTC, datetime, timedelta

import pytest
from helpers import Repo, alive, wait_for

pytestmark = pytest.mark.e2e

# A fake CLI: its first run prints the text in limit/<agent> (if there is one) and fails; any
# other run succeeds. A cost file makes it print claude's JSON result with that cost.
FAKE = """\
cat > /dev/null
mkdir -p "$WAVE_REPO/runs"
n=$(cat "$WAVE_REPO/runs/$WAVE_AGENT_ID" 2>/dev/null || echo 0)
echo $((n + 1)) > "$WAVE_REPO/runs/$WAVE_AGENT_ID"
echo "$(date +%s.%N) $WAVE_AGENT_ID" >> "$WAVE_REPO/starts"
if [[ $n == 0 && -f "$WAVE_REPO/limit/$WAVE_AGENT_ID" ]]; then
  cat "$WAVE_REPO/limit/$WAVE_AGENT_ID"; exit 1
fi
if [[ -f "$WAVE_REPO/cost/$WAVE_AGENT_ID" ]]; then
  printf '{"type":"result","subtype":"success","is_error":false,"result":"done",'
  printf '"total_cost_usd":%s,"usage":{"input_tokens":10,"output_tokens":5}}\\n' \
    "$(cat "$WAVE_REPO/cost/$WAVE_AGENT_ID")"
else
  echo done
fi
"""
# A local agent that ends once the launcher has parked someone (events.jsonl says so).
AFTER_PARKED = (
    'for i in $(seq 600); do grep -q agent_limited "$WAVE_STATE_DIR/events.jsonl" && exit 0; '
    "sleep 0.1; done; exit 1"
)
LANE = """\
closure: {{required_roles: []}}
defaults: {{executor: claude, timeout_minutes: 3, max_retries_per_wave: {retries},
           launch_stagger_ms: 0{caps}}}
usage_limit: {{margin_seconds: 1}}
accounts:
  c1: {{executor: claude, env: {{CLAUDE_CONFIG_DIR: /tmp/wave-test-c1}}}}
  c2: {{executor: claude, env: {{CLAUDE_CONFIG_DIR: /tmp/wave-test-c2}}}}
{extra}"""


def setup(repo: Repo, agents: list[str], retries: int = 0, caps: str = "", extra: str = "") -> None:
    for name in ("claude", "codex", "opencode"):
        repo.fake(name, FAKE)
    for folder in ("limit", "cost"):
        (repo.root / folder).mkdir(exist_ok=True)
    lane = LANE.format(retries=retries, caps=caps, extra=extra)
    repo.lane("main", lane, {1: "agents:\n" + "".join(f"  - {a}\n" for a in agents)})


def say(repo: Repo, agent: str, text: str) -> None:
    (repo.root / "limit").mkdir(exist_ok=True)
    (repo.root / "limit" / agent).write_text(text + "\n")


def events(repo: Repo, name: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == name]


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def starts(repo: Repo) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for line in (repo.root / "starts").read_text().splitlines():
        when, agent = line.split()
        out.setdefault(agent, []).append(float(when))
    return out


def minute_to_name(now: datetime) -> datetime:
    """A minute to name as the reset, whose end (when the limit is over) is 15 to 75 s away."""
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1 if now.second >= 45 else 0)


def twelve_hour(when: datetime) -> str:
    return f"{(when.hour % 12) or 12}:{when.minute:02d}"


def test_limited_agents_wait_for_their_reset_and_run_again_without_a_retry(
    tmux_repo: Repo,
) -> None:
    claude_reset = minute_to_name(datetime.now(UTC))  # over at its minute's end
    local_reset = minute_to_name(datetime.now().astimezone())
    ampm = "am" if claude_reset.hour < 12 else "pm"
    say(
        tmux_repo,
        "A1",
        f"You've hit your session limit · resets {twelve_hour(claude_reset)}{ampm} (UTC)",
    )
    # codex's text mode: each ERROR: line twice; opencode's: a coloured Error: line
    codex_said = (
        "ERROR: You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
        "visit https://chatgpt.com/settings/usage to purchase more credits or try again at "
        f"{twelve_hour(local_reset)} {'AM' if local_reset.hour < 12 else 'PM'}."
    )
    say(tmux_repo, "X", f"{codex_said}\n{codex_said}")
    say(
        tmux_repo,
        "O",
        "\x1b[91m\x1b[1mError: \x1b[0mGo usage limit reached. It will reset in "
        "0 hours 1 minutes. To continue using this model now, enable usage from your available "
        "balance - https://opencode.ai/workspace/ws/go",
    )
    after = json.dumps(AFTER_PARKED)
    setup(
        tmux_repo,
        [
            "{id: A1, prompt: p, account: c1}",
            f"{{id: B, prompt: p, executor: {{id: local, local: {{command: {after}}}}}}}",
            "{id: A2, prompt: p, account: c1, depends_on: [B]}",
            "{id: C, prompt: p, account: c2, depends_on: [B]}",
            "{id: X, prompt: p, executor: {id: codex}}",
            "{id: O, prompt: p, executor: {id: opencode}}",
        ],
    )
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    wait_for(lambda: len(events(tmux_repo, "agent_limited")) == 3, 30, what="three parked")

    def shown() -> dict:
        got = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        return {a["id"]: a for a in got["waves"][0]["agents"]}

    wait_for(lambda: shown()["A1"]["state"] == "limited", 10, what="status to show it")
    rows = shown()
    assert "limited until" in tmux_repo.wave("status", "--lane", "main").stdout
    assert at(rows["A1"]["limited_until"]) == claude_reset.timestamp() + 60 + 1
    _, err = proc.communicate(timeout=150)
    assert proc.returncode == 0, err

    limited = {e["agent"]: e for e in events(tmux_repo, "agent_limited")}
    assert set(limited) == {"A1", "X", "O"}
    assert limited["A1"]["account"] == "c1" and limited["X"]["account"].startswith("codex:")
    # the named minute's end + the margin
    assert at(limited["A1"]["until"]) == claude_reset.timestamp() + 60 + 1
    assert at(limited["X"]["until"]) == local_reset.timestamp() + 60 + 1
    began = starts(tmux_repo)
    for agent in ("A1", "X", "O"):  # launched again, and not before its reset
        assert len(began[agent]) == 2, began
        assert began[agent][1] >= at(limited[agent]["until"]), agent
    # A2 shares A1's account: it waited for the reset; C's account is another: it did not.
    assert began["A2"][0] >= at(limited["A1"]["until"])
    assert began["C"][0] < at(limited["A1"]["until"])
    wave = tmux_repo.run_state("main")["waves"]["1"]
    assert wave["state"] == "completed" and wave["attempts"] == 1  # no wave retry used
    assert not events(tmux_repo, "wave_retry")
    kept = tmux_repo.agent_dir("main", 1, "A1") / "attempt-1.limited1.log"
    assert "resets" in kept.read_text()  # the parked try's output is kept


def test_a_reset_too_far_away_ends_the_agent_and_holds_its_account_no_longer_than_max_wait(
    tmux_repo: Repo,
) -> None:
    """7 hours is past max_wait_minutes (here 9 s): A1 ends as usage-limit; its account's
    other agents wait for the maximum wait, not the 7 hours, nor end unstarted, then run."""
    say(tmux_repo, "A1", "Fast limit reached and temporarily disabled · resets in 7h")
    setup(
        tmux_repo,
        [
            "{id: A1, prompt: p, account: c1}",
            "{id: A3, prompt: p, account: c1}",  # waits for A1 (the cap), then for the hold
            "{id: C, prompt: p, account: c2}",
        ],
        retries=1,
        caps=", max_running: {account: {c1: 1}}",
    )
    lane = tmux_repo.root / "lanes/main/lane.yaml"
    lane.write_text(
        lane.read_text().replace("margin_seconds: 1", "margin_seconds: 1, max_wait_minutes: 0.15")
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 4, done.stderr  # blocked: no fallback, nothing safe to retry
    finished = {e["agent"]: e for e in events(tmux_repo, "agent_finished")}
    assert finished["A1"]["status"] == "usage-limit" and "resets in 7h" in finished["A1"]["detail"]
    assert (finished["A3"]["status"], finished["C"]["status"]) == ("success", "success")
    ended = at(finished["A1"]["at"])
    began = starts(tmux_repo)
    assert began["C"][0] < ended + 9 - 1  # another account: not held
    assert ended + 9 - 1 <= began["A3"][0] <= ended + 9 + 15, (ended, began)  # 9 s, not 7 h
    assert not events(tmux_repo, "agent_limited") and not events(tmux_repo, "wave_retry")


def test_no_more_than_the_cap_of_codex_agents_run_at_once(tmux_repo: Repo) -> None:
    ids = [f"K{i}" for i in range(20)]
    setup(
        tmux_repo,
        [f"{{id: {i}, prompt: p, executor: {{id: codex}}}}" for i in ids],
        caps=", max_running: {codex: 3}",
    )
    # Each codex run records when it began and ended: the most that overlap is exact (a scan
    # of running processes is not: it can see one that ended and its successor in one pass).
    tmux_repo.fake(
        "codex",
        "cat > /dev/null; b=$(date +%s.%N); sleep 0.4\n"
        'echo "$b $(date +%s.%N)" >> "$WAVE_REPO/spans"; echo done\n',
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=120)
    assert done.returncode == 0, done.stderr
    spans = [
        tuple(map(float, ln.split())) for ln in (tmux_repo.root / "spans").read_text().splitlines()
    ]
    assert len(spans) == 20
    edges = sorted(
        [(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1])
    )
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert most == 3  # the cap, reached and never passed
    finished = [e for e in events(tmux_repo, "agent_finished") if e["status"] == "success"]
    assert len(finished) == 20


def test_the_spend_limit_stops_new_agents_and_blocks_the_wave(tmux_repo: Repo) -> None:
    ids = ["S1", "S2", "S3", "S4"]
    setup(
        tmux_repo,
        [f"{{id: {i}, prompt: p}}" for i in ids],
        retries=2,
        caps=", max_running: {claude: 1}",
        extra="executors: {claude: {output_format: json}}\nspend_limit_usd: 1\n"
        "notify: {command: [sh, -c, 'cat >> told.jsonl; echo >> told.jsonl']}\n",
    )
    for agent in ids:
        (tmux_repo.root / "cost" / agent).write_text("0.45")
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 4, done.stderr
    assert "spend limit $1.00 reached ($1.35 spent)" in done.stderr
    assert (tmux_repo.root / "runs" / "S4").exists() is False  # never started
    warned = events(tmux_repo, "spend_warning")
    assert len(warned) == 1 and "$0.90 of $1.00" in warned[0]["message"]
    assert not events(tmux_repo, "wave_retry")
    status = tmux_repo.wave("status", "--lane", "main")
    assert "spend: $1.35 of $1.00" in status.stdout, status.stdout
    told = [json.loads(x) for x in (tmux_repo.root / "told.jsonl").read_text().split("\n") if x]
    kinds = [t["kind"] for t in told]  # a person hears it
    assert kinds == ["spend-warning", "spend-limit", "wave-blocked"]
    assert told[1]["message"] == "spend limit $1.00 reached ($1.35 spent)"
    assert told[2]["reason"] == "spend limit $1.00 reached ($1.35 spent)"


def test_kill_9_while_parked_then_resume_keeps_the_reset_and_launches_nothing_twice(
    tmux_repo: Repo,
) -> None:
    say(tmux_repo, "A1", "Fast limit reached and temporarily disabled · resets in 8s")
    setup(tmux_repo, ["{id: A1, prompt: p, account: c1}", "{id: A2, prompt: p, account: c2}"])
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    pid = int(json.loads((tmux_repo.state("main") / "launcher.lock").read_text())["pid"])
    wait_for(lambda: events(tmux_repo, "agent_limited"), 30, what="A1 parked")
    until = at(events(tmux_repo, "agent_limited")[0]["until"])
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher to die")
    status = tmux_repo.wave("status", "--lane", "main")
    assert "limited until" in status.stdout, status.stdout
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard")
    assert resumed.returncode == 0, resumed.stderr
    began = starts(tmux_repo)
    assert len(began["A1"]) == 2 and len(began["A2"]) == 1, began
    assert began["A1"][1] >= until  # the reset time was kept across the crash
    assert math.isclose(until - began["A1"][0], 9, abs_tol=3)


def test_a_rate_limit_one_agent_meets_is_waited_out_by_its_account_s_other_agents(
    tmux_repo: Repo,
) -> None:
    say(
        tmux_repo,
        "R1",
        "API Error: Request rejected (429) · This request would exceed the "
        "rate limit for your organization of 50,000 input tokens per minute.",
    )
    setup(
        tmux_repo,
        [
            "{id: R1, prompt: p, account: c1}",
            "{id: R3, prompt: p, account: c2}",
            "{id: R2, prompt: p, account: c1}",
        ],
        extra="",
    )
    lane = tmux_repo.root / "lanes/main/lane.yaml"
    lane.write_text(
        lane.read_text().replace(
            "launch_stagger_ms: 0",
            "launch_stagger_ms: 1500,\n           rate_limit: {retries: 1, base_delay_seconds: 8, "
            "max_delay_seconds: 8, jitter_seconds: 0}",
        )
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 0, done.stderr
    shared = list((tmux_repo.state("main") / "accounts").iterdir())
    assert len(shared) == 1  # c1's: R1 met the limit; c2 never did
    until = int(shared[0].read_text()) / 1000
    began = starts(tmux_repo)
    assert began["R2"][0] >= until  # launched during R1's backoff, it waited for its end
    assert began["R3"][0] < until  # another account's agent did not
    said = (tmux_repo.agent_dir("main", 1, "R2") / "output.log").read_text()
    assert "[wave] account c1 is backing off: waiting" in said
    assert "backing off" not in (tmux_repo.agent_dir("main", 1, "R3") / "output.log").read_text()
    # R2 waited on its account, but met no limit itself: its wait is said as such, not as a
    # limited try of its own, and its status counts none
    limited = [e for e in tmux_repo.events("main") if e["event"] == "agent_rate_limited"]
    assert {(e["agent"], e.get("account_wait")) for e in limited} == {("R1", None), ("R2", "c1")}
    assert all("try" not in e for e in limited if e["agent"] == "R2")
    assert tmux_repo.status("main", 1, "R2")["rate_limited"] == 0
    log = (tmux_repo.state("main") / "launcher.log").read_text()
    assert "agent R2 waits out account c1's backoff" in log
    assert "agent R2 rate-limited" not in log


def test_wave_stop_ends_a_wait_for_a_reset_at_once(tmux_repo: Repo) -> None:
    say(tmux_repo, "A1", "You've hit your session limit · resets in 3 hours")
    setup(tmux_repo, ["{id: A1, prompt: p, account: c1}"])
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    wait_for(lambda: events(tmux_repo, "agent_limited"), 30, what="A1 parked")
    t0 = time.monotonic()
    stopped = tmux_repo.wave("stop", "--lane", "main")
    assert stopped.returncode == 0, stopped.stderr
    assert time.monotonic() - t0 < 15  # not the 3 hours
    finished = events(tmux_repo, "agent_finished")
    assert [(e["agent"], e["status"]) for e in finished] == [("A1", "cancelled")]
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    status = tmux_repo.wave("status", "--lane", "main")
    assert "limited until" not in status.stdout  # the wait is over, not left behind


def test_a_limit_with_no_reset_near_runs_the_fallback_now_without_a_wave_retry(
    tmux_repo: Repo,
) -> None:
    say(tmux_repo, "F", "You've hit your weekly limit · resets in 4 days")
    setup(
        tmux_repo,
        [
            "{id: F, prompt: p, account: c1, executor: {fallbacks: [codex]}}",
            # waits for F (the cap), then its account is out of quota: it starts on codex at once
            "{id: G, prompt: p, account: c1, executor: {fallbacks: [codex]}}",
        ],
        caps=", max_running: {account: {c1: 1}}",
    )
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 0, done.stderr
    fell = {e["agent"]: e for e in events(tmux_repo, "agent_fallback")}
    assert {a: (e["previous"], e["executor"]) for a, e in fell.items()} == {
        "F": ("claude", "codex"),
        "G": ("claude", "codex"),
    }
    finished = {e["agent"]: e for e in events(tmux_repo, "agent_finished")}
    assert {a: (e["status"], e["executor"]) for a, e in finished.items()} == {
        "F": ("success", "codex"),
        "G": ("success", "codex"),
    }
    began = starts(tmux_repo)
    assert (len(began["F"]), len(began["G"])) == (2, 1)  # G never ran on claude
    assert tmux_repo.run_state("main")["waves"]["1"]["attempts"] == 1
    assert not events(tmux_repo, "wave_retry")


def jsonl(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events)


def test_a_limit_in_each_cli_s_own_error_channel_parks_its_agent_and_holds_its_account(
    tmux_repo: Repo,
) -> None:
    """claude's is_error result (json, stream-json with the assistant event's error), codex's
    turn.failed, opencode's error event: each a failed try's last words, as the CLIs print
    them. Each agent is parked until the reset named, and K3 waits with K1's account."""
    utc = datetime.now(UTC) + timedelta(hours=2)
    local = datetime.now().astimezone() + timedelta(hours=2)
    ampm = "am" if utc.hour < 12 else "pm"
    session = f"You've hit your session limit · resets {twelve_hour(utc)}{ampm} (UTC)"
    fast = "Fast limit reached and temporarily disabled · resets in 2h 30m"
    codex = (
        "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) or "
        f"try again at {twelve_hour(local)} {'AM' if local.hour < 12 else 'PM'}."
    )
    opencode = (
        "Go usage limit reached. It will reset in 2 hours 10 minutes. To continue using "
        "this model now, enable usage from your available balance"
    )
    say(
        tmux_repo,
        "K1",
        jsonl(
            {"type": "system", "subtype": "init", "model": "claude-sonnet-5"},
            {
                "type": "assistant",
                "message": {"model": "<synthetic>", "content": [{"type": "text", "text": fast}]},
                "error": "rate_limit",
            },
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": 429,
                "result": fast,
                "total_cost_usd": 0,
            },
        ),
    )
    say(
        tmux_repo,
        "K2",
        jsonl(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": session,
                "total_cost_usd": 0,
            }
        ),
    )
    say(
        tmux_repo,
        "X1",
        jsonl(
            {"type": "thread.started", "thread_id": "t1"},
            {"type": "turn.started"},
            {"type": "error", "message": codex},
            {"type": "turn.failed", "error": {"message": codex}},
        ),
    )
    say(
        tmux_repo,
        "O1",
        jsonl(
            {
                "type": "error",
                "sessionID": "ses_1",
                "error": {"name": "APIError", "data": {"message": opencode, "statusCode": 429}},
            }
        ),
    )
    setup(
        tmux_repo,
        [
            "{id: K1, prompt: p, account: c1, executor: {claude: {output_format: stream-json}}}",
            "{id: K2, prompt: p, account: c2, executor: {claude: {output_format: json}}}",
            "{id: X1, prompt: p, executor: {id: codex, codex: {json: true}}}",
            "{id: O1, prompt: p, executor: {id: opencode, opencode: {format: json}}}",
            "{id: K3, prompt: p, account: c1}",  # waits for K1 (the cap), then for its reset
        ],
        caps=", max_running: {account: {c1: 1}}",
    )
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    try:
        wait_for(lambda: len(events(tmux_repo, "agent_limited")) == 4, 30, what="four parked")
        wait_for(
            lambda: "waiting for c1" in tmux_repo.wave("status", "--lane", "main").stdout,
            20,
            what="K3 to wait with K1's account",
        )
    finally:
        stopped = tmux_repo.wave("stop", "--lane", "main")
    assert stopped.returncode == 0, stopped.stderr
    limited = {e["agent"]: e for e in events(tmux_repo, "agent_limited")}
    said = {agent: at(e["at"]) for agent, e in limited.items()}
    until = {agent: at(e["until"]) for agent, e in limited.items()}
    assert abs(until["K1"] - (said["K1"] + 9000 + 1)) < 5
    assert until["K2"] == utc.replace(second=0, microsecond=0).timestamp() + 60 + 1
    assert until["X1"] == local.replace(second=0, microsecond=0).timestamp() + 60 + 1
    assert abs(until["O1"] - (said["O1"] + 7800 + 1)) < 5
    assert limited["K1"]["detail"] == "usage limit, resets in 2h 30m"
    assert "K3" not in starts(tmux_repo)  # held with c1, never started
