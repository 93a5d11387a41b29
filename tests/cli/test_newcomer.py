"""A newcomer's first hour (issue 23, part 3): the commands a new user types, as they type
them, on the files a new user's machine has."""

from __future__ import annotations

import json
import os
import shutil
import socket as sockets
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane

WAVE = [sys.executable, "-m", "wave_orchestrator"]


def test_repo_and_lane_may_come_before_the_command(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    for argv in (
        ["--repo", str(repo.root), "validate"],
        [f"--repo={repo.root}", "--lane", "main", "validate"],
    ):
        done = subprocess.run([*WAVE, *argv], env=repo.env, cwd="/", capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "lane main: valid, 1 wave(s)" in done.stdout, done.stdout
    top = subprocess.run([*WAVE, "--help"], capture_output=True, text=True)
    assert "--repo PATH and --lane LANE may also come before the command" in top.stdout


def test_logs_of_a_huge_log_cost_one_chunk_of_memory(repo: Repo, tmp_path: Path) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    log = repo.agent_dir("main", 1, "A") / "output.log"
    log.parent.mkdir(parents=True)
    with log.open("wb") as fh:
        for _ in range(200):
            fh.write(b"x" * ((1 << 20) - 1) + b"\n")  # 200 MB
    # Measured in a fresh process whose only child is `wave logs`: its peak alone.
    measure = (
        "import os, resource, subprocess, sys\n"
        "with open(os.devnull, 'wb') as sink:\n"
        "    subprocess.run(sys.argv[1:], stdout=sink, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *repo.command("logs", "A", "--lane", "main")],
        env=repo.env,
        capture_output=True,
        text=True,
        check=True,
    )
    peak_mb = int(done.stdout) / 1024
    # A whole-file read held the 200 MB (and a copy); one 1 MiB chunk at a time does not.
    assert peak_mb < 100, peak_mb


def test_debug_info_hides_secrets_and_control_characters_and_knows_a_dead_server(
    repo: Repo, tmp_path: Path
) -> None:
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    short = Path(tempfile.mkdtemp(prefix="wt", dir="/tmp"))  # a socket path has 108 bytes
    env = {
        **repo.env,
        "TMUX_TMPDIR": str(short),
        "WAVE_API_KEY": "sk-live-123456",
        "WAVE_NOTE": "a\x1b]0;pwned\x07b",
    }
    shown = subprocess.run(
        repo.command("debug-info", "--json"), env=env, capture_output=True, text=True, check=True
    )
    socket = json.loads(shown.stdout)["lanes"][0]["socket"]
    (short / f"tmux-{os.getuid()}").mkdir()
    with sockets.socket(sockets.AF_UNIX) as s:  # a socket file whose server is gone
        s.bind(str(short / f"tmux-{os.getuid()}" / socket))
    done = subprocess.run(repo.command("debug-info"), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "sk-live-123456" not in done.stdout
    assert "WAVE_API_KEY=<redacted, 14 characters>" in done.stdout
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "(stale socket, no server)" in done.stdout
    assert "rich-argparse  " in done.stdout  # its name and version apart
    shutil.rmtree(short)


def test_ps_never_deletes_in_a_linked_registry_and_shows_entries_harmlessly(
    repo: Repo, tmp_path: Path
) -> None:
    state = Path(repo.env["XDG_STATE_HOME"]) if "XDG_STATE_HOME" in repo.env else None
    assert state is not None
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    (elsewhere / "notes.json").write_text("{}")
    (elsewhere / "123.json").write_text('{"pid": 123}')
    (state / "wave").mkdir(parents=True, exist_ok=True)
    (state / "wave" / "launchers").symlink_to(elsewhere)
    done = subprocess.run([*WAVE, "ps"], env=repo.env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["123.json", "notes.json"]
    (state / "wave" / "launchers").unlink()
    real = state / "wave" / "launchers"
    real.mkdir()
    (real / "notes.json").write_text("{}")  # not a name wave writes: left alone
    (real / "77.json").write_text('{"pid": 78}')  # says another pid: removed
    subprocess.run([*WAVE, "ps"], env=repo.env, capture_output=True, check=True)
    assert sorted(p.name for p in real.iterdir()) == ["notes.json"]


def test_init_keeps_a_gitignore_in_another_encoding_and_never_waits_on_a_fifo(
    tmp_path: Path,
) -> None:
    latin = tmp_path / "latin"
    latin.mkdir()
    (latin / ".gitignore").write_bytes(b"caf\xe9\n")
    done = subprocess.run(
        [*WAVE, "init", "--demo", "--repo", str(latin)], capture_output=True, text=True
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (latin / ".gitignore").read_bytes() == b"caf\xe9\n.wave/\n"
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / ".gitignore")
    done = subprocess.run(
        [*WAVE, "init", "--repo", str(fifo)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert (fifo / "lanes" / "main" / "lane.yaml").exists()
    assert "is a FIFO" in done.stderr and "add .wave/ to it yourself" in done.stderr


@pytest.fixture(autouse=True)
def _state_home(repo: Repo, tmp_path: Path) -> None:
    repo.env["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    Path(repo.env["XDG_STATE_HOME"]).mkdir(exist_ok=True)
