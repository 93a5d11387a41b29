"""A `wave_orchestrator/` package an agent plants in the repository root never runs: every place
wave starts itself (the launcher's dashboard session, `launch --detach`, the console's keys, the
agents' `wave` shim) runs this install's code with the working folder off ``sys.path``."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, local_agent, local_lane, wait_for

from wave_orchestrator.cli.dashboard_fleet import CommandFleet
from wave_orchestrator.runtime.agent.programs import ensure_agent_bin
from wave_orchestrator.self_command import wave_argv
from wave_orchestrator.state.layout import StateLayout

pytestmark = pytest.mark.e2e


def plant(repo: Path, marker: Path) -> None:
    """What an agent of an `isolation: shared` lane can write: a package named like wave's,
    which records how it was started (``-m <module>``) and then stands in for wave."""
    package = repo / "wave_orchestrator"
    package.mkdir()
    body = f"""
        import sys
        with open({str(marker)!r}, "a") as fh:
            fh.write(" ".join(sys.argv) + "\\n")
        raise SystemExit(0)
    """
    (package / "__init__.py").write_text(textwrap.dedent(body))
    (package / "__main__.py").write_text("")


def lane(repo: Repo, seconds: float) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A1", f"sleep {seconds}")})


def test_the_argv_keeps_the_working_folder_off_sys_path(tmp_path: Path) -> None:
    marker = tmp_path / "planted-ran"
    plant(tmp_path, marker)
    done = subprocess.run(
        [*wave_argv("--version")], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    assert not marker.exists()


def test_the_dashboard_session_runs_wave_not_the_planted_package(
    tmux_repo: Repo, tmp_path: Path
) -> None:
    marker = tmp_path / "planted-ran"
    lane(tmux_repo, seconds=30)
    plant(tmux_repo.root, marker)
    proc = tmux_repo.spawn("launch", "--lane", "main")
    try:
        server = libtmux.Server(socket_name=tmux_repo.env["WAVE_TMUX_SOCKET"])

        def dashboard_shown() -> bool:
            if marker.exists():
                return True
            shown = server.cmd("capture-pane", "-p", "-t", "=dashboard:")
            return "lane main" in "\n".join(shown.stdout)

        wait_for(dashboard_shown, 30, what="the dashboard session's first screen")
        assert not marker.exists(), marker.read_text()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_launch_detach_runs_wave_not_the_planted_package(tmux_repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "planted-ran"
    lane(tmux_repo, seconds=2)  # still running when --detach looks for its launcher
    plant(tmux_repo.root, marker)
    started = tmux_repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    wait_for(
        lambda: tmux_repo.wave_state("main", 1) == "completed",
        60,
        what="the detached launch to complete wave 1",
    )
    assert not marker.exists(), marker.read_text()


def test_the_consoles_keys_run_wave_not_the_planted_package(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "planted-ran"
    lane(repo, seconds=0)
    plant(repo.root, marker)
    layout = StateLayout(repo.state("main"), "main", repo=repo.root)
    done = CommandFleet(repo.root, "main", layout).command(["status", "--json"])
    assert done.code == 0, done.text
    assert json.loads(done.text)["lane"] == "main"
    assert not marker.exists(), marker.read_text()


def test_the_agents_wave_shim_runs_wave_not_the_planted_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without installed console scripts, agents get a shim that starts this interpreter: it
    runs in the agent's working folder, which the agent writes."""
    monkeypatch.setattr(
        "wave_orchestrator.runtime.agent.programs.scripts_dir", lambda: tmp_path / "no-scripts"
    )
    marker = tmp_path / "planted-ran"
    work = tmp_path / "work"
    work.mkdir()
    plant(work, marker)
    ensure_agent_bin(tmp_path / "bin")
    done = subprocess.run(
        [str(tmp_path / "bin" / "wave"), "--version"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    assert not marker.exists(), marker.read_text()


def test_no_module_but_self_command_builds_a_python_argv() -> None:
    """One helper builds how wave starts itself: a new caller that wrote ``python -m`` by hand
    would put the working folder back on ``sys.path``."""
    package = Path(__file__).resolve().parents[2] / "wave_orchestrator"
    by_hand = re.compile(r"sys\.executable\)?\s*,\s*[\"']-m[\"']|sys\.executable\)?\}? -m ")
    found = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "self_command.py" and by_hand.search(path.read_text())
    ]
    assert found == []
