"""run.sh, run by real bash without tmux: the rate-limit loop of SPEC 5 and the status file."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from wave_orchestrator.agents.wrapper import WrapperSpec, render_run_script
from wave_orchestrator.definitions.model import RateLimitPolicy

FAST = RateLimitPolicy(retries=2, base_delay_seconds=0.01, max_delay_seconds=0.02, jitter_seconds=0)


def write_wrapper(
    tmp_path: Path, argv: list[str], env: dict[str, str], policy: RateLimitPolicy = FAST
) -> Path:
    """Render run.sh for agent A1 of wave 1 with ``argv`` as its CLI; returns the script."""
    agent_dir = tmp_path / "agents" / "A1"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "prompt.md").write_text("the prompt\n")
    spec = WrapperSpec(
        lane="main",
        wave=1,
        agent="A1",
        attempt=1,
        repo=str(tmp_path),
        agent_dir=str(agent_dir),
        prompt_file=str(agent_dir / "prompt.md"),
        prompt_sha256="ab" * 32,
        argv=argv,
        env=env,
        rate_limit=policy,
    )
    script = agent_dir / "run.sh"
    script.write_text(render_run_script(spec))
    return script


def run_wrapper(
    tmp_path: Path,
    agent_body: str,
    policy: RateLimitPolicy = FAST,
    env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], str]:
    """Write a fake CLI that counts its tries in $TRY_FILE, render run.sh for it, run it."""
    agent_dir = tmp_path / "agents" / "A1"
    agent_dir.mkdir(parents=True)
    cli = tmp_path / "fake-cli"
    cli.write_text(
        '#!/usr/bin/env bash\nn=$(( $(cat "$TRY_FILE" 2>/dev/null || echo 0) + 1 ))\n'
        'echo $n > "$TRY_FILE"\n' + textwrap.dedent(agent_body)
    )
    cli.chmod(0o755)
    script = write_wrapper(
        tmp_path, [str(cli)], {"TRY_FILE": str(tmp_path / "tries"), **(env or {})}, policy
    )
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
    status = json.loads((agent_dir / "status.json").read_text())
    return proc.returncode, status, (agent_dir / "output.log").read_text()


def test_success_first_try(tmp_path: Path) -> None:
    code, status, log = run_wrapper(tmp_path, "cat; echo fine\n")
    assert code == 0
    assert (status["code"], status["tries"], status["rate_limited"]) == (0, 1, 0)
    assert status["agent"] == "A1" and status["lane"] == "main" and status["wave"] == 1
    assert status["prompt_sha256"] == "ab" * 32
    assert status["started_at"].endswith("Z") and status["finished_at"] >= status["started_at"]
    assert log == "the prompt\nfine\n"


def test_only_this_tries_output_is_matched(tmp_path: Path) -> None:
    # Try 1 is rate limited; try 2 fails for another reason and must not be retried, even
    # though the log still holds try 1's 429.
    code, status, log = run_wrapper(
        tmp_path,
        """
        if (( n == 1 )); then echo "429 Too Many Requests"; exit 1; fi
        echo "syntax error in your code"; exit 4
    """,
    )
    assert code == 4
    assert (status["code"], status["tries"], status["rate_limited"]) == (4, 2, 1)
    assert log.count("[wave] rate limited") == 1


def test_rate_limited_on_every_try_stops_after_the_last(tmp_path: Path) -> None:
    code, status, log = run_wrapper(
        tmp_path, 'echo "API Error: Request rejected (429) · slow down"; exit 1\n'
    )
    assert code == 1
    assert (status["tries"], status["rate_limited"]) == (3, 3)
    assert [ln for ln in log.splitlines() if ln.startswith("[wave]")] == [
        "[wave] rate limited: try 1/3, retrying in 0.010s",
        "[wave] rate limited: try 2/3, retrying in 0.020s",  # capped at max_delay_seconds
    ]


def test_backoff_formula_with_jitter_stays_in_range(tmp_path: Path) -> None:
    policy = RateLimitPolicy(
        retries=1, base_delay_seconds=0.01, max_delay_seconds=1, jitter_seconds=0
    )
    _, _, log = run_wrapper(tmp_path, 'echo "rate limit reached"; exit 1\n', policy)
    assert "[wave] rate limited: try 1/2, retrying in 0.010s" in log


def test_codex_usage_limit_ends_tries_with_reset_time(tmp_path: Path) -> None:
    code, status, _ = run_wrapper(
        tmp_path,
        """
        echo "ERROR: You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro) or try again at 9:39 AM."
        exit 1
    """,
    )
    assert code == 1
    assert status["tries"] == 1 and status["usage_limit"] is True
    assert "try again at 9:39 AM" in status["detail"]


def test_claude_usage_limit_detail(tmp_path: Path) -> None:
    _, status, _ = run_wrapper(
        tmp_path, 'echo "You\'ve hit your session limit · resets 9:40am (UTC)"; exit 1\n'
    )
    assert status["usage_limit"] is True and status["detail"] == "usage limit, resets 9:40am (UTC)"


def test_pattern_found_after_more_than_64k_of_output(tmp_path: Path) -> None:
    code, status, _ = run_wrapper(
        tmp_path,
        """
        if (( n == 1 )); then head -c 300000 /dev/zero | tr '\\0' 'x'; echo; echo "429 Too Many Requests"; exit 1; fi
        echo ok
    """,
    )
    assert code == 0 and (status["tries"], status["rate_limited"]) == (2, 1)


def test_hostile_patterns_and_env_cannot_change_the_script(tmp_path: Path) -> None:
    policy = RateLimitPolicy(
        retries=1,
        base_delay_seconds=0.01,
        max_delay_seconds=0.01,
        jitter_seconds=0,
        patterns=("x'; touch PWNED; echo '", "$(touch PWNED)", "`touch PWNED`"),
    )
    code, status, _ = run_wrapper(
        tmp_path,
        'printf %s "$HOSTILE" > "$TRY_FILE.env"; echo plain failure; exit 2\n',
        policy,
        env={"HOSTILE": "$(touch PWNED) `touch PWNED` ' \" \\"},
    )
    assert code == 2 and status["tries"] == 1
    assert not list(tmp_path.rglob("PWNED"))
    assert (tmp_path / "tries.env").read_text() == "$(touch PWNED) `touch PWNED` ' \" \\"


def test_status_file_is_written_by_rename(tmp_path: Path) -> None:
    run_wrapper(tmp_path, "exit 0\n")
    leftovers = [p.name for p in (tmp_path / "agents/A1").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_background_process_left_by_the_agent_does_not_hold_the_try_open(tmp_path: Path) -> None:
    # A dev server started by the agent keeps the output open; the try ends when the CLI does.
    code, status, log = run_wrapper(tmp_path, "(sleep 30 &); echo started a server; exit 0\n")
    assert code == 0 and status["tries"] == 1
    assert "started a server" in log


def test_sigterm_stops_the_cli_and_writes_no_status(tmp_path: Path) -> None:
    import signal
    import time

    agent_dir = tmp_path / "agents" / "A1"
    write_wrapper(tmp_path, ["bash", "-c", "echo $$ > cli.pid; exec sleep 60"], {})
    proc = subprocess.Popen(["bash", str(agent_dir / "run.sh")], stdout=subprocess.DEVNULL)
    pid_file = tmp_path / "cli.pid"
    deadline = time.monotonic() + 10
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    assert not (agent_dir / "status.json").exists()
    cli = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{cli}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (
        not Path(f"/proc/{cli}").exists() or Path(f"/proc/{cli}/stat").read_text().split()[2] == "Z"
    )
