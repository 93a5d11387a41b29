"""Fault class 2: tmux expands ``#(...)`` and ``#{...}`` in some arguments (``new-session -c``
and ``-s``). A repository path or an environment value holding them must reach the agent as
written, and never run a command (issue 10)."""

from __future__ import annotations

import os
from pathlib import Path

import libtmux
import pytest
from helpers import Repo, local_lane, wait_for

from wave_orchestrator.placement.tmux import TmuxServer, literal

pytestmark = pytest.mark.e2e

# Each payload would run `touch "$WAVE_FMT_MARK"` if tmux expanded it (the tmux server inherits
# WAVE_FMT_MARK from whoever started it); `#{pane_pid}` would be replaced by a number.
PAYLOAD = "#(touch $WAVE_FMT_MARK)#{pane_pid}##x#{?pane_dead,a,b}"


def test_literal_doubles_every_hash() -> None:
    assert literal("a#(b)#{c}##") == "a##(b)##{c}####"


def test_folder_and_env_values_reach_the_pane_as_written(
    tmp_path: Path, server: libtmux.Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = tmp_path / "ran"
    monkeypatch.setenv("WAVE_FMT_MARK", str(mark))
    folder = tmp_path / f"repo{PAYLOAD}"
    folder.mkdir()
    seen = tmp_path / "seen"
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    value = f"v{PAYLOAD}"
    script = f'printf "%s\\n%s\\n" "$PWD" "$PROBE" > {str(seen)!r}'
    pid = tmux.start_session("probe", ["bash", "-c", script], str(folder), env={"PROBE": value})
    assert pid is not None and tmux.server_pid is not None
    wait_for(lambda: seen.exists() and seen.read_text().count("\n") == 2, what="the probe")
    cwd, env_value = seen.read_text().splitlines()
    assert cwd == str(folder)
    assert env_value == value
    assert not mark.exists(), "tmux ran a command from the folder name"
    tmux.kill_server()


def test_session_name_is_not_expanded(tmp_path: Path, server: libtmux.Server) -> None:
    assert server.socket_name is not None
    tmux = TmuxServer(server.socket_name)
    name = "s#{session_id}#{host}"  # tmux would put its values in place of these
    tmux.start_session(name, ["sleep", "30"], str(tmp_path))
    assert name in tmux.panes()
    tmux.kill_server()


def test_launch_in_a_repository_whose_path_holds_formats(
    tmp_path: Path, server: libtmux.Server
) -> None:
    assert server.socket_name is not None
    repo = Repo(tmp_path / f"r{PAYLOAD}", socket=server.socket_name)
    mark = tmp_path / "ran"
    repo.env["WAVE_FMT_MARK"] = str(mark)
    # The dashboard session gets NO_COLOR through `-e`: a value with formats in it.
    repo.env["NO_COLOR"] = f"1{PAYLOAD}"
    probe = 'pwd > "$WAVE_REPO/cwd.txt"; printf %s "$NO_COLOR" > "$WAVE_REPO/env.txt"'
    repo.lane(
        "main",
        local_lane(),
        {1: f"agents:\n  - {{id: A1, prompt: p, executor: {{local: {{command: {probe!r}}}}}}}\n"},
    )
    result = repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert (repo.root / "cwd.txt").read_text().strip() == str(repo.root)
    assert (repo.root / "env.txt").read_text() == f"1{PAYLOAD}"
    assert not mark.exists(), "tmux ran a command from the repository path"
    assert os.path.isdir(repo.state("main"))
