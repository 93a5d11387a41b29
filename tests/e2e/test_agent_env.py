"""End to end: an agent runs with the user's environment, not wave's (issue 9, section 1).

Its `python3` and `pip` are the user's, only `wave` and `wave-demo-agent` come from wave (through
the lane's private bin folder), and a relative `local.command` is found from the repository root
whichever folder `wave launch` is started in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers import Repo, local_lane

pytestmark = pytest.mark.e2e

LANE = local_lane()

PROBE = (
    'out="$WAVE_REPO/out"; mkdir -p "$out"; '
    'command -v python3 > "$out/python3"; command -v pip > "$out/pip"; '
    'command -v wave > "$out/wave"; command -v wave-demo-agent > "$out/demo"; '
    'printf %s "$PATH" > "$out/path"; wave lanes > "$out/wave-lanes" 2>&1; echo "lanes=$?" >> "$out/wave-lanes"'
)


def user_path(repo: Repo) -> str:
    """A user's PATH: their own bin first, system folders, and not wave's virtualenv."""
    scripts = sysconfig.get_path("scripts")
    system = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != scripts]
    return os.pathsep.join([str(repo.bin), *system])


def test_agent_runs_the_users_python_and_pip_and_only_wave_of_ours(tmux_repo: Repo) -> None:
    tmux_repo.env["PATH"] = user_path(tmux_repo)
    tmux_repo.fake("python3", "echo user python3\n")
    tmux_repo.fake("pip", "echo user pip\n")
    tmux_repo.lane(
        "main",
        LANE,
        {
            1: f"wave: 1\nagents:\n  - id: A1\n    prompt: probe\n    executor: {{local: {{command: {PROBE!r}}}}}\n"
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr

    out = tmux_repo.root / "out"
    private_bin = tmux_repo.state("main") / "bin"
    assert (out / "python3").read_text().strip() == str(tmux_repo.bin / "python3")
    assert (out / "pip").read_text().strip() == str(tmux_repo.bin / "pip")
    assert (out / "wave").read_text().strip() == str(private_bin / "wave")
    assert (out / "demo").read_text().strip() == str(private_bin / "wave-demo-agent")
    entries = (out / "path").read_text().split(os.pathsep)
    assert entries[0] == str(private_bin)
    assert sysconfig.get_path("scripts") not in entries
    assert sorted(p.name for p in private_bin.iterdir()) == ["wave", "wave-demo-agent"]
    lanes = (out / "wave-lanes").read_text()
    assert "main" in lanes and lanes.rstrip().endswith("lanes=0"), lanes


def test_agent_env_path_replaces_the_users_but_keeps_wave(tmux_repo: Repo) -> None:
    only = tmux_repo.root / "only"
    only.mkdir()
    (only / "bash").symlink_to("/bin/bash")
    tmux_repo.lane(
        "main",
        LANE,
        {
            1: f"""
        wave: 1
        agents:
          - id: A1
            prompt: probe
            executor:
              env: {{PATH: {only}}}
              local: {{command: 'printf %s "$PATH" > "$WAVE_REPO/path"'}}
    """
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    path = (tmux_repo.root / "path").read_text()
    assert path == f"{tmux_repo.state('main') / 'bin'}{os.pathsep}{only}"
    assert tmux_repo.status("main", 1, "A1")["code"] == 0


def relative_command_lane(repo: Repo) -> None:
    script = repo.root / "agents" / "hello.sh"
    script.parent.mkdir()
    script.write_text('#!/usr/bin/env bash\necho "hello from $PWD" > "$WAVE_REPO/hello"\n')
    script.chmod(0o755)
    repo.lane(
        "main",
        LANE,
        {
            1: "wave: 1\nagents:\n  - {id: A1, prompt: hi, executor: {local: {command: [agents/hello.sh]}}}\n"
        },
    )


def run_wave(repo: Repo, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wave_orchestrator", "launch", "--lane", "main", *args],
        cwd=cwd,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_relative_local_command_from_a_subdirectory(tmux_repo: Repo) -> None:
    relative_command_lane(tmux_repo)
    sub = tmux_repo.root / "sub" / "dir"
    sub.mkdir(parents=True)
    result = run_wave(tmux_repo, sub)
    assert result.returncode == 0, result.stderr
    assert (tmux_repo.root / "hello").read_text() == f"hello from {tmux_repo.root}\n"


def test_relative_local_command_with_repo_from_elsewhere(tmux_repo: Repo, tmp_path: Path) -> None:
    relative_command_lane(tmux_repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_wave(tmux_repo, elsewhere, "--repo", str(tmux_repo.root))
    assert result.returncode == 0, result.stderr
    assert (tmux_repo.root / "hello").read_text() == f"hello from {tmux_repo.root}\n"


def test_missing_relative_command_names_the_repository(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main",
        LANE,
        {
            1: "wave: 1\nagents:\n  - {id: A1, prompt: hi, executor: {local: {command: [agents/nope.sh]}}}\n"
        },
    )
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode != 0
    assert f"`agents/nope.sh`, not found in {tmux_repo.root}" in result.stderr
