"""run.sh, run by real bash without tmux: the rate-limit loop of SPEC 5 and the status file.

The limit-message tests replay output captured from the real CLIs (claude 2.1.197, opencode
1.18.33) against the local provider mock, kept in ``tests/fixtures/limits/``."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import processes_naming

from wave_orchestrator.agents.wrapper import (
    WRAPPER_TOOLS,
    WrapperSpec,
    render_run_script,
    wrapper_tools,
)
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
    assert re.fullmatch(
        r"the prompt\nfine\n\[wave\] run ended: exit 0 after \d+s, 1 try, model not named\n", log
    ), log  # the run's footer line: how it ended, in how long, on what model


def test_times_are_utc_with_milliseconds_whatever_the_time_zone_and_locale(
    tmp_path: Path,
) -> None:
    """`now` is bash builtins (EPOCHREALTIME, printf %()T): what `date -u` would print."""
    agent_dir = tmp_path / "agents" / "A1"
    agent_dir.mkdir(parents=True)
    script = write_wrapper(tmp_path, ["true"], {})
    env = {**os.environ, "TZ": "America/New_York", "LC_ALL": "C.UTF-8"}
    before = datetime.now(UTC)
    subprocess.run(["bash", str(script)], capture_output=True, env=env, timeout=30, check=True)
    after = datetime.now(UTC)
    status = json.loads((agent_dir / "status.json").read_text())
    for key in ("started_at", "finished_at"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", status[key]), status
        stamp = datetime.strptime(status[key], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert before - timedelta(seconds=0.01) <= stamp <= after, (before, stamp, after)


def test_an_agent_that_ends_well_costs_no_process_but_itself_its_shower_and_the_mv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every wrapper tool is a logging shim: on the fast path run.sh starts `tail` (the pane's
    shower) and `mv` (the status), nothing else (a fork each is a burst's cost)."""
    shims, calls = tmp_path / "shims", tmp_path / "calls"
    shims.mkdir()
    for name, real in wrapper_tools().items():
        shim = shims / name
        shim.write_text(f'#!/bin/sh\necho {name} >> {calls}\nexec {real} "$@"\n')
        shim.chmod(0o755)
    agent_dir = tmp_path / "agents" / "A1"
    agent_dir.mkdir(parents=True)
    # the launcher's PATH, where run.sh finds its tools when it is written
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    script = write_wrapper(tmp_path, ["true"], {})
    assert f"bin_mv={shims}/mv" in script.read_text()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads((agent_dir / "status.json").read_text())["code"] == 0
    assert sorted(calls.read_text().split()) == ["mv", "tail"]


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
    assert [ln for ln in log.splitlines() if ln.startswith("[wave] rate")] == [
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


def test_a_limit_quoted_before_the_try_s_last_lines_does_not_end_the_tries(
    tmp_path: Path,
) -> None:
    """The model quoted a usage limit while it worked; the try then met a real rate limit.
    Only the try's last 20 lines can end the tries on a usage limit (the launcher judges
    the rest from the CLI's own error channel): this try is retried."""
    code, status, log = run_wrapper(
        tmp_path,
        """
        if (( n == 1 )); then
          echo "the log said: You've hit your session limit · resets 9:40am (UTC)"
          for i in $(seq 20); do echo "working $i"; done
          echo "API Error: Request rejected (429) · slow down"; exit 1
        fi
        echo ok
    """,
    )
    assert code == 0 and (status["tries"], status["rate_limited"]) == (2, 1)
    assert "usage_limit" not in status and "[wave] rate limited: try 1/3" in log


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


# -- the wrapper's own tools do not come from the agent's PATH (issue 9, section 1) -----------


def test_agent_with_a_one_entry_path_succeeds(tmp_path: Path) -> None:
    # The agent's PATH holds only bash: run.sh must still time, match, back off and write its
    # status with its own tools (found when it was written), on a rate-limited try and a good one.
    only_bash = tmp_path / "only-bash"
    only_bash.mkdir()
    (only_bash / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    cli = tmp_path / "builtins-only-cli"
    cli.write_text(
        "#!/usr/bin/env bash\n"
        'n=0; [[ -f $TRY_FILE ]] && read -r n < "$TRY_FILE"; n=$(( n + 1 )); echo "$n" > "$TRY_FILE"\n'
        'if (( n == 1 )); then echo "429 Too Many Requests"; exit 1; fi\n'
        'read -r line; echo "got: $line"\n'
    )
    cli.chmod(0o755)
    env = {"PATH": str(only_bash), "TRY_FILE": str(tmp_path / "tries")}
    script = write_wrapper(tmp_path, [str(cli)], env)
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "command not found" not in proc.stderr
    status = json.loads((tmp_path / "agents/A1/status.json").read_text())
    assert (status["code"], status["tries"], status["rate_limited"]) == (0, 2, 1)
    assert status["started_at"].endswith("Z") and status["finished_at"].endswith("Z")
    log = (tmp_path / "agents/A1/output.log").read_text()
    assert "[wave] rate limited: try 1/3" in log and "got: the prompt" in log


def test_wrapper_tools_are_absolute_paths_from_the_launchers_path(tmp_path: Path) -> None:
    tools = wrapper_tools()
    assert set(tools) == set(WRAPPER_TOOLS)
    assert all(Path(path).is_absolute() and os.access(path, os.X_OK) for path in tools.values())
    script = write_wrapper(tmp_path, ["true"], {"PATH": "/nowhere"}).read_text()
    assert f"bin_sed={tools['sed']}" in script
    # A tool the launcher cannot find keeps its bare name, for the agent's PATH to resolve.
    assert wrapper_tools(str(tmp_path))["date"] == "date"


# -- the real CLIs' limit messages (issue 9, section 4) ---------------------------------------

LIMITS = Path(__file__).parents[1] / "fixtures" / "limits"


def run_captured(tmp_path: Path, fixture: str) -> tuple[dict[str, Any], str]:
    """A fake CLI whose first try prints ``fixture`` (output captured from a real CLI) and
    fails; a second try would succeed. Returns the status and the log."""
    _, status, log = run_wrapper(
        tmp_path,
        f"""
        if (( n == 1 )); then cat -- {shlex.quote(str(LIMITS / fixture))}; exit 1; fi
        echo recovered
    """,
    )
    return status, log


USAGE_LIMITS = [
    # opencode, openai-compatible provider (HTTP 429 with a usage-limit body), JSON and text
    ("opencode-openai-usage-limit.jsonl", "usage limit has been reached"),
    ("opencode-openai-usage-limit.ansi.log", "usage limit has been reached"),
    ("opencode-openai-quota.jsonl", "exceeded your current quota"),
    ("opencode-openai-quota.ansi.log", "exceeded your current quota"),
    # claude (HTTP 400), text and stream-json; the same message through opencode
    ("claude-credit-balance.log", "Credit balance is too low"),
    ("claude-credit-balance.stream.jsonl", "Credit balance is too low"),
    ("opencode-anthropic-credit-balance.jsonl", "credit balance is too low"),
    ("opencode-anthropic-credit-balance.ansi.log", "credit balance is too low"),
]


@pytest.mark.parametrize(("fixture", "detail"), USAGE_LIMITS)
def test_usage_limits_end_the_tries_at_once(tmp_path: Path, fixture: str, detail: str) -> None:
    status, log = run_captured(tmp_path, fixture)
    assert status["code"] == 1 and status["usage_limit"] is True
    assert (status["tries"], status["rate_limited"]) == (1, 0)
    assert status["detail"] == f"usage limit, {detail}"  # no reset time named: what matched
    assert "[wave] rate limited" not in log


TRANSIENT = [
    "opencode-anthropic-overloaded.jsonl",  # "message":"Overloaded","statusCode":529
    "opencode-anthropic-overloaded.ansi.log",  # \e[91m\e[1mError: \e[0mOverloaded
    "opencode-first-start-race.ansi.log",  # Failed query: CREATE TABLE ... on a fresh HOME
    "claude-api-retry.stream.jsonl",  # 10 api_retry lines, then Request rejected (429)
    "claude-overloaded.stream.jsonl",  # api_retry lines, then 529 Overloaded
    "codex-stream-error-429.log",  # stream error: last status: 429, no reason phrase
]


@pytest.mark.parametrize("fixture", TRANSIENT)
def test_transient_errors_are_retried(tmp_path: Path, fixture: str) -> None:
    status, log = run_captured(tmp_path, fixture)
    assert (status["code"], status["tries"], status["rate_limited"]) == (0, 2, 1)
    assert "usage_limit" not in status
    assert "[wave] rate limited: try 1/3" in log
    assert re.search(
        r"recovered\n\[wave\] run ended: exit 0 after \d+s, 2 tries, model not named\n$", log
    )


def test_patterns_match_the_output_with_ansi_sequences_removed(tmp_path: Path) -> None:
    policy = RateLimitPolicy(
        retries=1,
        base_delay_seconds=0.01,
        max_delay_seconds=0.01,
        jitter_seconds=0,
        patterns=("^Error: slow down$",),
        usage_limit_patterns=("^out of credits: reset later$",),
    )
    # colour, bold, a window title (OSC), and a charset switch around and inside the words
    body = r"""
        if (( n == 1 )); then printf '\e]0;agent\a\e[91m\e[1mError: \e[0mslow\e[2m down\e(B\n'; exit 1; fi
        printf '\e[33mout of \e[1mcredits\e[0m: reset later\n'; exit 1
    """
    code, status, _ = run_wrapper(tmp_path, body, policy)
    assert code == 1 and (status["tries"], status["rate_limited"]) == (2, 1)
    assert (
        status["usage_limit"] is True
        and status["detail"] == "usage limit, out of credits: reset later"
    )


# -- under Slurm (issue 13): no pane, and a TERM writes a status ----------------------------


@pytest.mark.parametrize(
    ("limit", "outcome", "detail"),
    [
        ("3", "timeout", "Slurm time limit (0 min) reached"),  # TERM at its time limit
        ("600", "cancelled", "Slurm job cancelled (scancel)"),  # TERM long before it
    ],
)
def test_under_slurm_a_term_writes_timeout_or_cancelled_and_ends_the_group(
    tmp_path: Path, limit: str, outcome: str, detail: str
) -> None:
    import os
    import signal
    import time

    agent_dir = tmp_path / "agents" / "A1"
    write_wrapper(
        tmp_path, ["bash", "-c", "echo $$ > cli.pid; (sleep 60 & echo $! > kid.pid; wait)"], {}
    )
    env = {**os.environ, "WAVE_PLACEMENT": "slurm", "WAVE_TIME_LIMIT_SECONDS": limit}
    proc = subprocess.Popen(
        ["bash", str(agent_dir / "run.sh")], env=env, stdout=subprocess.PIPE, start_new_session=True
    )
    kid_file = tmp_path / "kid.pid"
    deadline = time.monotonic() + 10
    while not kid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    assert proc.stdout is not None and proc.stdout.read() == b""  # output.log is its stdout
    status = json.loads((agent_dir / "status.json").read_text())
    assert (status["outcome"], status["detail"], status["code"]) == (outcome, detail, 143)
    assert (agent_dir / "slurm-node").exists()
    kid = int(kid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{kid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (
        not Path(f"/proc/{kid}").exists() or Path(f"/proc/{kid}/stat").read_text().split()[2] == "Z"
    )  # what the CLI started went with it


def test_under_slurm_a_status_already_written_is_kept(tmp_path: Path) -> None:
    """The launcher's own verdict (a budget timeout) is not overwritten by the TERM it sends."""
    import os
    import signal
    import time

    agent_dir = tmp_path / "agents" / "A1"
    write_wrapper(tmp_path, ["bash", "-c", "echo $$ > cli.pid; exec sleep 60"], {})
    env = {**os.environ, "WAVE_PLACEMENT": "slurm", "WAVE_TIME_LIMIT_SECONDS": "600"}
    proc = subprocess.Popen(["bash", str(agent_dir / "run.sh")], env=env, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "cli.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    (agent_dir / "status.json").write_text('{"code": -1, "outcome": "timeout"}\n')
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    assert json.loads((agent_dir / "status.json").read_text())["outcome"] == "timeout"


@pytest.mark.parametrize("ending", ["finishes", "term"])
def test_with_placement_tmux_the_job_runs_its_agent_in_a_tmux_of_its_own(
    tmp_path: Path, ending: str
) -> None:
    """placement.tmux, without a cluster: run.sh as a batch script starts a tmux server as
    its child, runs itself in its session (the output shows in the pane), passes on the
    agent's exit code or a TERM, and leaves no server behind."""
    import signal
    import time

    agent_dir = tmp_path / "agents" / "A1"
    body = "echo hello-in-pane; while [ ! -e release ]; do sleep 0.1; done; exit 3"
    write_wrapper(tmp_path, ["bash", "-c", body], {})
    job = f"t{os.getpid()}{ending}"
    sock = f"wave-{job}"
    env = {
        **os.environ,
        **{"WAVE_PLACEMENT": "slurm", "WAVE_SLURM_TMUX": "1", "WAVE_SESSION": "w1-A1"},
        **{"SLURM_JOB_ID": job, "WAVE_TIME_LIMIT_SECONDS": "600"},
    }
    proc = subprocess.Popen(["bash", str(agent_dir / "run.sh")], env=env, start_new_session=True)
    try:
        capture = ["tmux", "-L", sock, "capture-pane", "-p", "-t", "=w1-A1:"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            shown = subprocess.run(capture, capture_output=True, text=True).stdout
            if "hello-in-pane" in shown:
                break
            time.sleep(0.05)
        assert "hello-in-pane" in shown
        assert processes_naming(sock)  # the job's own server
        if ending == "finishes":
            (tmp_path / "release").touch()
            assert proc.wait(timeout=15) == 3
            assert json.loads((agent_dir / "status.json").read_text())["code"] == 3
        else:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=15) == 143
            status = json.loads((agent_dir / "status.json").read_text())
            assert (status["outcome"], status["code"]) == ("cancelled", 143)
        assert not processes_naming(sock)  # ended before the batch script returned
    finally:
        proc.kill()
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def test_with_placement_tmux_a_node_without_tmux_fails_the_agent_with_a_reason(
    tmp_path: Path,
) -> None:
    agent_dir = tmp_path / "agents" / "A1"
    write_wrapper(tmp_path, ["bash", "-c", "echo ran > ran"], {})
    bare = tmp_path / "bare-bin"  # bash, and no tmux
    bare.mkdir()
    (bare / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    env = {
        "PATH": str(bare),
        **{"WAVE_PLACEMENT": "slurm", "WAVE_SLURM_TMUX": "1", "SLURMD_NODENAME": "node7"},
    }
    done = subprocess.run(
        ["bash", str(agent_dir / "run.sh")], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 127, done.stderr
    status = json.loads((agent_dir / "status.json").read_text())
    assert (status["outcome"], status["detail"]) == ("failed", "tmux not found on node node7")
    assert "placement.tmux needs tmux 3.2 or later" in done.stdout
    assert not (tmp_path / "ran").exists()
