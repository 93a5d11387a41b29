"""Completion, debug-info, default lanes, `wave init --demo` and its permissions, the desk's
unknown agent (issue 14). The running-launcher views (`ps`, `logs -f`) are in tests/e2e."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo

from wave_orchestrator.cli import main

NO_CLOSURE = "closure: {required_roles: []}\nexecutors: {local: {command: [my-agent]}}\n"
ROOT = Path(__file__).resolve().parents[2]


def wave(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wave_orchestrator", *args],
        cwd=repo.root,
        env={**repo.env, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def two_lanes(repo: Repo) -> None:
    repo.lane("alpha", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}, {id: B2, prompt: y}]"})
    repo.lane("beta", NO_CLOSURE, {1: "agents: [{id: Z9, prompt: z}]"})


def complete(repo: Repo, line: str, tmp_path: Path) -> list[str]:
    """What the shell would be offered for ``line`` (argcomplete's protocol, as bash runs it)."""
    out = tmp_path / "completions"
    wave(
        repo,
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE="1",
        _ARGCOMPLETE_IFS="\n",
        _ARGCOMPLETE_STDOUT_FILENAME=str(out),
    )
    return [w.strip() for w in out.read_text().split("\n")] if out.exists() else []


@pytest.mark.parametrize(
    "shell,marker", [("bash", "complete "), ("zsh", "#compdef wave"), ("fish", "complete ")]
)
def test_completion_prints_a_script_for_each_shell(repo: Repo, shell: str, marker: str) -> None:
    done = wave(repo, "completion", shell)
    assert done.returncode == 0 and marker in done.stdout and "wave" in done.stdout


def test_completion_of_commands_lanes_and_agent_ids(repo: Repo, tmp_path: Path) -> None:
    two_lanes(repo)
    assert {"status", "stop"} <= set(complete(repo, "wave st", tmp_path))
    assert set(complete(repo, "wave launch --lane ", tmp_path)) == {"alpha", "beta"}
    assert set(complete(repo, "wave logs --lane alpha ", tmp_path)) >= {"A1", "B2"}
    assert "Z9" not in complete(repo, "wave logs --lane alpha ", tmp_path)
    assert complete(repo, "wave attach --lane beta Z", tmp_path) == ["Z9"]


def test_debug_info_names_versions_repository_and_lanes(repo: Repo) -> None:
    two_lanes(repo)
    done = wave(repo, "debug-info", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["wave"] and info["python"] and info["tmux"].startswith("tmux ")
    assert info["libraries"]["watchdog"] and set(info["agent_clis"]) == {
        "codex",
        "claude",
        "opencode",
    }
    assert info["repository"] == str(repo.root)
    assert [lane["lane"] for lane in info["lanes"]] == ["alpha", "beta"]
    assert all(lane["socket"] and lane["state_dir"] for lane in info["lanes"])
    ledgers = [Path(lane["ledger"]) for lane in info["lanes"]]  # outside the repository
    state_home = Path(os.environ["XDG_STATE_HOME"])
    assert [p.name for p in ledgers] == ["alpha.jsonl", "beta.jsonl"]
    assert all(p.is_relative_to(state_home) and not p.is_relative_to(repo.root) for p in ledgers)
    text = wave(repo, "debug-info").stdout
    assert "tmux" in text and "lane           alpha" in text
    assert f"alpha: ledger {ledgers[0]}" in text


def test_wave_lane_is_honoured_by_every_command(repo: Repo) -> None:
    two_lanes(repo)
    assert wave(repo, "validate").returncode == 2  # two lanes, no default
    for args in (["validate"], ["status", "--json"], ["launch", "--dry-run"], ["metrics"]):
        done = wave(repo, *args, WAVE_LANE="beta")
        assert done.returncode == 0, (args, done.stderr)
    assert '"lane": "beta"' in wave(repo, "status", "--json", WAVE_LANE="beta").stdout
    bad = wave(repo, "status", WAVE_LANE="gamma")
    assert bad.returncode == 2 and "no lane 'gamma' ($WAVE_LANE)" in bad.stderr
    # --lane still wins over the environment
    assert '"lane": "alpha"' in wave(repo, "status", "--lane", "alpha", "--json").stdout


def test_default_lane_in_lanes_wave_yaml(repo: Repo) -> None:
    two_lanes(repo)
    (repo.root / "lanes" / "wave.yaml").write_text("default_lane: alpha\n")
    done = wave(repo, "validate")
    assert done.returncode == 0 and "lane alpha: valid" in done.stdout
    assert "lane beta: valid" in wave(repo, "validate", WAVE_LANE="beta").stdout
    (repo.root / "lanes" / "wave.yaml").write_text("default_lane: nope\n")
    bad = wave(repo, "validate")
    assert bad.returncode == 2 and "default_lane in lanes/wave.yaml" in bad.stderr


def test_init_demo_copies_the_bundled_demo_lane(tmp_path: Path) -> None:
    assert main(["init", "--demo", "--repo", str(tmp_path)]) == 0
    copied = tmp_path / "lanes" / "demo"
    for rel in ("lane.yaml", "waves/wave-1.yaml", "waves/wave-2.yaml"):
        assert (copied / rel).read_text() == (ROOT / "lanes" / "demo" / rel).read_text()
    assert main(["validate", "--repo", str(tmp_path), "--lane", "demo"]) == 0
    assert main(["init", "--demo", "--repo", str(tmp_path)]) == 2  # never overwrites


def test_the_packaged_demo_lane_is_the_checkouts() -> None:
    packaged = ROOT / "wave_orchestrator" / "definitions" / "repository" / "demo_lane"
    files = sorted(p.relative_to(packaged) for p in packaged.rglob("*.yaml"))
    assert files == sorted(
        p.relative_to(ROOT / "lanes" / "demo") for p in (ROOT / "lanes" / "demo").rglob("*.yaml")
    )
    for rel in files:
        assert (packaged / rel).read_text() == (ROOT / "lanes" / "demo" / rel).read_text()


@pytest.mark.parametrize(
    "executor,setting", [("claude", "permission_mode: acceptEdits"), ("opencode", "auto: true")]
)
def test_init_lets_unattended_agents_edit_files(
    tmp_path: Path, executor: str, setting: str
) -> None:
    assert main(["init", "--repo", str(tmp_path), "--executor", executor]) == 0
    text = (tmp_path / "lanes" / "main" / "lane.yaml").read_text()
    assert setting in text
    comment = text[: text.index(setting)].rsplit("executors:", 1)[1]
    assert "without asking" in comment  # says what it allows
    assert main(["validate", "--repo", str(tmp_path), "--lane", "main"]) == 0


def test_desk_refuses_an_agent_that_is_not_in_the_wave(repo: Repo) -> None:
    repo.lane("main", NO_CLOSURE + "shared_files: true\n", {1: "agents: [{id: A1, prompt: x}]"})
    done = wave(repo, "desk", "claim", "f.txt", "--agent", "ghost", "--wave", "1")
    assert done.returncode == 2
    assert "no agent 'ghost' in wave 1 of lane 'main' (agents: A1)" in done.stderr
    assert wave(repo, "desk", "claim", "f.txt", "--agent", "A1", "--wave", "1").returncode == 0


def test_the_registry_is_under_xdg_state_home() -> None:
    from wave_orchestrator.state.registry import registry_dir

    assert registry_dir() == Path(os.environ["XDG_STATE_HOME"]) / "wave" / "launchers"


def _no_tmux_path(tmp_path: Path) -> str:
    """A PATH with the tools wave's checks use, and no tmux."""
    import shutil

    folder = tmp_path / "no-tmux-bin"
    folder.mkdir()
    for tool in ("grep", "sh", "bash", "env", "git", "cat", "true"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return str(folder)


def test_without_tmux_read_only_commands_work_and_launch_says_what_to_install(
    repo: Repo, tmp_path: Path
) -> None:
    repo.lane(
        "main", NO_CLOSURE + "defaults: {executor: local}\n", {1: "agents: [{id: A1, prompt: x}]"}
    )
    path = _no_tmux_path(tmp_path)
    for args in (["validate"], ["launch", "--dry-run"], ["status"], ["lanes"]):
        done = wave(repo, *args, PATH=path)
        assert done.returncode == 0, (args, done.stderr)
    (repo.root / "bin-agent").mkdir()
    agent = repo.root / "bin-agent" / "my-agent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    for args in (["launch", "--no-dashboard"], ["attach", "--dashboard"], ["stop"]):
        done = wave(repo, *args, PATH=f"{path}:{agent.parent}")
        assert done.returncode == 1, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("wave: tmux is not installed"), lines
        assert "apt-get install tmux" in lines[0] and "Traceback" not in done.stderr


def test_attach_without_a_terminal_says_so(tmux_repo: Repo, server: Any) -> None:
    repo = tmux_repo
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    (repo.root / ".wave" / "main" / "waves" / "wave-1" / "agents" / "A1").mkdir(parents=True)
    server.new_session("w1-A1", window_command="sleep 30")
    done = wave(repo, "attach", "A1")
    assert done.returncode == 2
    assert "wave attach needs a terminal" in done.stderr and "tmux -L" in done.stderr


def test_dashboard_of_a_wave_that_does_not_exist(repo: Repo) -> None:
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    done = wave(repo, "dashboard", "--wave", "7", "--once")
    assert done.returncode == 2 and "lane 'main' has no wave 7 (waves: 1)" in done.stderr
