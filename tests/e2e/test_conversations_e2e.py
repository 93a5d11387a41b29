"""Conversations that survive a usage limit and a launcher's crash, end to end: fake claude,
codex and opencode CLIs on PATH take and print conversation ids as the real ones do (claude's
``--session-id``/``--resume``, codex's ``session id:`` banner and ``exec resume``, opencode's
``sessionID`` events and ``--session``), keep the conversations they started, and refuse one
they do not know with the real CLI's words."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest
from helpers import Repo, alive, wait_for

pytestmark = pytest.mark.e2e

# Each run appends its argv (one line, words joined by |) and its stdin to runs/<agent>.
# Conversations live in convs/<id>; a file in limit/<agent> makes the first run print it and
# fail; hold/<agent> makes a run wait until the file is gone.
FAKE = r"""
agent=$WAVE_AGENT_ID; mkdir -p "$WAVE_REPO/runs" "$WAVE_REPO/convs"
stdin=$(cat)
n=$(ls "$WAVE_REPO/runs" | grep -c "^$agent\.argv\." || true)
# stdin first, argv last, each whole (moved into place): a run counts once its argv is there
printf '%s' "$stdin" > "$WAVE_REPO/runs/.$agent.stdin.$n" \
  && mv "$WAVE_REPO/runs/.$agent.stdin.$n" "$WAVE_REPO/runs/$agent.stdin.$n"
(IFS='|'; echo "$*") > "$WAVE_REPO/runs/.$agent.argv.$n" \
  && mv "$WAVE_REPO/runs/.$agent.argv.$n" "$WAVE_REPO/runs/$agent.argv.$n"
cli=$(basename "$0"); id=""; resume=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --session-id) id=${args[$((i + 1))]} ;;
    --resume|--session) resume=${args[$((i + 1))]} ;;
    resume) resume=${args[$((i + 1))]} ;;
  esac
done
if [[ -n $id && -f "$WAVE_REPO/convs/$id" ]]; then  # as claude: an id once used is taken
  echo "Error: Session ID $id is already in use."; exit 1
fi
if [[ -n $resume ]]; then
  if [[ ! -f "$WAVE_REPO/convs/$resume" ]]; then
    case $cli in
      claude) echo "No conversation found with session ID: $resume" ;;
      codex) echo "Error: thread/resume: thread/resume failed: no rollout found for thread id $resume (code -32600)" >&2 ;;
      opencode) echo "Error: Session not found" >&2 ;;
    esac
    exit 1
  fi
  id=$resume
fi
if [[ -z $id ]]; then
  case $cli in
    codex) id=$(cat /proc/sys/kernel/random/uuid) ;;
    opencode) id="ses_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" ;;
  esac
fi
case $cli in
  codex) echo "session id: $id" >&2 ;;
  opencode) echo "{\"type\":\"step_start\",\"sessionID\":\"$id\",\"part\":{}}" ;;
esac
touch "$WAVE_REPO/convs/$id"
while [[ -f "$WAVE_REPO/hold/$agent" ]]; do sleep 0.1; done
if [[ $n == 0 && -f "$WAVE_REPO/ratelimit/$agent" ]]; then echo "429 Too Many Requests"; exit 1; fi
if [[ $n == 0 && -f "$WAVE_REPO/limit/$agent" ]]; then cat "$WAVE_REPO/limit/$agent"; exit 1; fi
echo done
"""
LANE = """\
closure: {required_roles: []}
defaults: {timeout_minutes: 3, max_retries_per_wave: 0, launch_stagger_ms: 0}
usage_limit: {margin_seconds: 1}
"""
AGENTS = """\
agents:
  - {id: K, prompt: the task of K, executor: {id: claude}}
  - {id: X, prompt: the task of X, executor: {id: codex}}
  - {id: O, prompt: the task of O, executor: {id: opencode, opencode: {format: json}}}
"""
WORDS = "Fast limit reached and temporarily disabled · resets in 2s"
LIMITS = {
    "K": WORDS,
    "X": f"ERROR: {WORDS}",
    "O": json.dumps({"type": "error", "error": {"name": "APIError", "data": {"message": WORDS}}}),
}
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def setup(repo: Repo, agents: str = AGENTS) -> None:
    for name in ("claude", "codex", "opencode"):
        repo.fake(name, FAKE)
    for folder in ("limit", "hold"):
        (repo.root / folder).mkdir(exist_ok=True)
    repo.lane("main", LANE, {1: agents})


def runs(repo: Repo, agent: str) -> list[tuple[list[str], str]]:
    """Each run of ``agent``: its argv and what it read on stdin (the fake CLI moves its argv
    into place last: a run whose argv is there is whole)."""
    folder, out = repo.root / "runs", []
    n = 0
    while (folder / f"{agent}.argv.{n}").exists():
        argv = (folder / f"{agent}.argv.{n}").read_text().rstrip("\n").split("|")
        out.append((argv, (folder / f"{agent}.stdin.{n}").read_text()))
        n += 1
    return out


def events(repo: Repo, name: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == name]


def held_launch(repo: Repo, step: Callable[[], None]) -> None:
    """`wave launch` with K held: ``step`` (which waits for what it needs), then K let go;
    the launch must succeed (what the launcher said, when it did not)."""
    proc = repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        step()
        (repo.root / "hold" / "K").unlink()
        _, said = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, said


def second_run(repo: Repo, what: str) -> Callable[[], None]:
    """A step of ``held_launch`` that waits until K has run twice."""
    return lambda: wait_for(lambda: len(runs(repo, "K")) == 2, 60, what=what)


def launch_record(repo: Repo, agent: str) -> dict:
    return json.loads((repo.agent_dir("main", 1, agent) / "launch.json").read_text())


def after(argv: list[str], word: str) -> str:
    return argv[argv.index(word) + 1]


def test_each_cli_continues_its_conversation_after_a_usage_limit(tmux_repo: Repo) -> None:
    setup(tmux_repo)
    for agent, words in LIMITS.items():  # each in its CLI's own error channel
        (tmux_repo.root / "limit" / agent).write_text(words + "\n")
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert len(events(tmux_repo, "agent_limited")) == 3
    (k1, k1_in), (k2, k2_in) = runs(tmux_repo, "K")
    given = after(k1, "--session-id")
    assert re.fullmatch(UUID, given) and "the task of K" in k1_in
    assert after(k2, "--resume") == given and "--session-id" not in k2
    (x1, _), (x2, x2_in) = runs(tmux_repo, "X")
    said = (tmux_repo.root / "convs").iterdir()
    codex_id = next(p.name for p in said if re.fullmatch(UUID, p.name) and p.name != given)
    assert "resume" not in x1
    assert x2[-3:] == ["resume", codex_id, "-"], x2  # `codex exec [options] resume <id> -`
    (o1, _), (o2, o2_in) = runs(tmux_repo, "O")
    opencode_id = after(o2, "--session")
    assert opencode_id.startswith("ses_") and "--session" not in o1
    for text in (k2_in, x2_in, o2_in):  # told why it stopped, not its whole task again
        assert text.startswith("The previous run stopped: usage limit until"), text
        assert "the task of" not in text
    assert launch_record(tmux_repo, "K")["continues"] == given
    assert launch_record(tmux_repo, "X")["conversation"] == codex_id
    assert launch_record(tmux_repo, "O")["conversation"] == opencode_id


def test_a_continuation_the_cli_refuses_starts_afresh_and_says_why(tmux_repo: Repo) -> None:
    setup(tmux_repo, "agents:\n  - {id: K, prompt: the task of K, executor: {id: claude}}\n")
    (tmux_repo.root / "limit" / "K").write_text(WORDS + "\n")
    (tmux_repo.root / "hold" / "K").touch()
    convs = tmux_repo.root / "convs"

    def lose_it() -> None:
        wait_for(lambda: convs.is_dir() and any(convs.iterdir()), 30, what="K's conversation")
        for conversation in convs.iterdir():
            conversation.unlink()  # the CLI lost it: `--resume` will be refused

    held_launch(tmux_repo, lose_it)
    (first, _), (second, _), (third, third_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == after(first, "--session-id")
    fresh = after(third, "--session-id")
    assert fresh != after(first, "--session-id") and "--resume" not in third
    assert "the task of K" in third_in  # started afresh: its whole task again
    assert "The previous run stopped: usage limit until" in third_in  # and why
    [restarted] = events(tmux_repo, "agent_restarted")
    assert restarted["conversation"] == after(first, "--session-id")
    assert "No conversation found" in restarted["reason"]
    record = launch_record(tmux_repo, "K")
    assert "would not continue" in record["fresh_because"]


def test_an_agent_whose_session_died_with_the_launcher_continues_on_resume(
    tmux_repo: Repo, server: Any
) -> None:
    setup(tmux_repo, "agents:\n  - {id: K, prompt: the task of K, executor: {id: claude}}\n")
    (tmux_repo.root / "hold" / "K").touch()
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    pid = int(json.loads((tmux_repo.state("main") / "launcher.lock").read_text())["pid"])
    wait_for(lambda: len(runs(tmux_repo, "K")) == 1, 30, what="K's first run")
    given = after(runs(tmux_repo, "K")[0][0], "--session-id")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher to die")
    assert server.cmd("kill-session", "-t", "=w1-K").returncode == 0
    (tmux_repo.root / "hold" / "K").unlink()
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard")
    assert resumed.returncode == 0, resumed.stderr
    (_, _), (second, second_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == given
    assert second_in.startswith("The previous run stopped: the launcher stopped while it ran")
    assert tmux_repo.status("main", 1, "K")["code"] == 0


ONE_CLAUDE = "agents:\n  - {id: K, prompt: the task of K, executor: {id: claude}}\n"


def test_wave_rerun_continue_goes_on_in_the_running_conversation(tmux_repo: Repo) -> None:
    setup(tmux_repo, ONE_CLAUDE)
    (tmux_repo.root / "hold" / "K").touch()

    def ask() -> None:
        wait_for(lambda: len(runs(tmux_repo, "K")) == 1, 30, what="K's first run")
        asked = tmux_repo.wave("rerun", "K", "--continue", "use the v2 API")
        assert asked.returncode == 0, asked.stderr
        assert "continuing its conversation" in asked.stdout
        wait_for(lambda: len(runs(tmux_repo, "K")) == 2, 30, what="K's continued run")

    held_launch(tmux_repo, ask)
    (first, _), (second, second_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == after(first, "--session-id")
    assert "`wave rerun --continue`" in second_in and second_in.endswith("use the v2 API")
    assert "the task of K" not in second_in
    [rerun] = events(tmux_repo, "agent_rerun")
    assert rerun["continue"] is True


def test_wave_rerun_continue_after_the_wave_ended(tmux_repo: Repo) -> None:
    setup(tmux_repo, ONE_CLAUDE)
    assert tmux_repo.wave("launch", "--lane", "main", "--no-dashboard").returncode == 0
    again = tmux_repo.wave("rerun", "K", "--continue", "and add a test", "--yes")
    assert again.returncode == 0, again.stderr
    (first, _), (second, second_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == after(first, "--session-id")
    assert second_in.endswith("A person adds:\nand add a test")
    assert launch_record(tmux_repo, "K")["continues"] == after(first, "--session-id")


def overrun_then_retry(repo: Repo, on_timeout: str) -> list[tuple[list[str], str]]:
    """K's first run overruns its 3 s budget (it is held); the wave retry's run is let go.
    Each run of K, with ``defaults.on_timeout`` set as given ("" leaves it out)."""
    repo.fake("claude", FAKE)
    (repo.root / "hold").mkdir()
    (repo.root / "hold" / "K").touch()
    key = f", on_timeout: {on_timeout}" if on_timeout else ""
    lane = LANE.replace("max_retries_per_wave: 0", f"max_retries_per_wave: 1{key}")
    repo.lane("main", lane.replace("timeout_minutes: 3", "timeout_minutes: 0.05"), {1: ONE_CLAUDE})
    held_launch(repo, second_run(repo, "K's retry"))
    return runs(repo, "K")


def test_on_timeout_continue_carries_the_conversation_into_the_retry(tmux_repo: Repo) -> None:
    (first, _), (second, second_in) = overrun_then_retry(tmux_repo, "continue")
    assert after(second, "--resume") == after(first, "--session-id")
    assert second_in.startswith("The previous run stopped: timeout")
    [ended] = [e for e in events(tmux_repo, "agent_finished") if e["attempt"] == 1]
    assert ended["status"] == "timeout"


def test_on_timeout_restart_is_the_default(tmux_repo: Repo) -> None:
    (first, _), (second, second_in) = overrun_then_retry(tmux_repo, "")
    assert "--resume" not in second
    assert after(second, "--session-id") != after(first, "--session-id")
    assert "the task of K" in second_in


def test_a_silent_agent_is_nudged_and_continues_its_conversation(tmux_repo: Repo) -> None:
    tmux_repo.fake("claude", FAKE)
    (tmux_repo.root / "hold").mkdir()
    (tmux_repo.root / "hold" / "K").touch()  # it says nothing and changes nothing
    tmux_repo.lane("main", LANE + "stall: {nudge_minutes: 0.05}\n", {1: ONE_CLAUDE})
    held_launch(tmux_repo, second_run(tmux_repo, "K nudged"))
    (first, _), (second, second_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == after(first, "--session-id")
    assert second_in.startswith("The previous run stopped: you have been silent for ")
    assert "Report your progress now, or finish and print your markers." in second_in
    [nudged] = events(tmux_repo, "agent_nudged")
    assert nudged["agent"] == "K"


def test_a_rate_limited_claude_try_goes_on_in_its_conversation(tmux_repo: Repo) -> None:
    """run.sh's own retry after a rate limit: claude refuses the id it was given once used,
    so the second try resumes it, told only to go on."""
    tmux_repo.fake("claude", FAKE)
    (tmux_repo.root / "ratelimit").mkdir()
    (tmux_repo.root / "ratelimit" / "K").touch()
    quick = (
        "rate_limit: {retries: 2, base_delay_seconds: 0, max_delay_seconds: 0, jitter_seconds: 0}"
    )
    lane = LANE.replace("launch_stagger_ms: 0}", f"launch_stagger_ms: 0, {quick}}}")
    tmux_repo.lane("main", lane, {1: ONE_CLAUDE})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    (first, first_in), (second, second_in) = runs(tmux_repo, "K")
    assert after(second, "--resume") == after(first, "--session-id")
    assert "the task of K" in first_in and "the task of K" not in second_in
    assert second_in.startswith("Your last request was turned away by a rate limit")
    assert tmux_repo.status("main", 1, "K")["tries"] == 2
