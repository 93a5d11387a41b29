"""The command line: exit codes, `wave init`, and the commands that are not built yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo

from wave_orchestrator.cli import main

NO_CLOSURE = "closure: {required_roles: []}\n"


def test_init_scaffolds_a_lane_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/")
    assert main(["init", "--repo", str(tmp_path)]) == 0
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n.wave/\n"
    assert main(["validate", "--repo", str(tmp_path), "--lane", "main"]) == 0
    assert "lane main: valid, 1 wave(s)" in capsys.readouterr().out
    assert main(["init", "--repo", str(tmp_path)]) == 2  # never overwrites
    assert (tmp_path / ".gitignore").read_text().count(".wave/") == 1


def test_lane_is_required_only_with_several_lanes(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.lane("one", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    assert main(["validate", "--repo", str(repo.root)]) == 0
    repo.lane("two", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    assert main(["validate", "--repo", str(repo.root)]) == 2
    assert "--lane is required" in capsys.readouterr().err
    assert main(["validate", "--repo", str(repo.root), "--lane", "nope"]) == 2
    assert main(["validate", "--repo", str(repo.root), "--lane", "Bad.Name"]) == 2


def test_validate_json(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x, executor: {id: claude}}]"})
    assert main(["validate", "--repo", str(repo.root), "--lane", "main", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and out["waves"][0]["executors"] == {"claude": 1}


def test_status_before_any_run(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    assert main(["status", "--repo", str(repo.root), "--lane", "main", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["waves"] == [] and data["launcher"] == {"alive": False}


def test_bad_override_is_a_usage_error(repo: Repo) -> None:
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--timeout-minutes", "0")
    assert result.returncode == 2 and "--timeout-minutes must be > 0" in result.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "wave"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "launch" in out.stdout


def test_unknown_flags_of_built_commands_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["lanes", "--bogus"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.parametrize("executor", ["codex", "claude", "opencode", "local"])
def test_init_lane_validates_for_every_executor(tmp_path: Path, executor: str) -> None:
    assert main(["init", "--repo", str(tmp_path), "--executor", executor]) == 0
    assert main(["validate", "--repo", str(tmp_path), "--lane", "main"]) == 0


def test_attach_to_an_ended_session_says_why(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.lane("main", NO_CLOSURE, {1: "agents: [{id: A1, prompt: x}]"})
    (repo.state("main") / "waves" / "wave-1" / "agents" / "A1").mkdir(parents=True)
    monkey = pytest.MonkeyPatch()
    monkey.setenv("WAVE_TMUX_SOCKET", repo.env["WAVE_TMUX_SOCKET"])
    try:
        assert main(["attach", "--repo", str(repo.root), "--lane", "main", "A1"]) == 2
    finally:
        monkey.undo()
    assert "agent sessions end with their wave" in capsys.readouterr().err
