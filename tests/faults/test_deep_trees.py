"""Fault class 17: trees an agent leaves in its folder (issue 33 §5). A new run of a wave copies
a reused agent's folder; the agent made that folder, so the copy is iterative (a folder 700
deep is no ``RecursionError``), takes regular files and folders only (a link, a FIFO or a
device is neither followed nor opened, nor waited on), and stops at a depth, a size and a
number of files. Any failure means the agent runs again, and the launcher's log says why."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane

from wave_orchestrator.state.trees import CopyRefused, copy_plain_tree


def deep(root: Path, levels: int, name: str = "d") -> Path:
    """``root/d/d/.../d`` ``levels`` deep, made by descriptor (as a shell's `cd` loop would):
    its path can be longer than the system allows a path to be."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    return root


def test_a_tree_700_deep_is_refused_without_recursion(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    deep(src, 700)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a copy that recursed per level would fail long before
    try:
        with pytest.raises(CopyRefused, match="more than 32 folders deep"):
            copy_plain_tree(
                src, tmp_path / "dst", max_depth=32, max_bytes=1 << 20, max_files=10_000
            )
    finally:
        sys.setrecursionlimit(limit)


def test_a_tree_within_the_limits_is_copied_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "output.log").write_text("did it\n")
    (src / "a" / "b" / "deep.txt").write_text("deep\n")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o750)
    deep(src / "a", 20, name="x")
    copy_plain_tree(src, tmp_path / "dst", max_depth=32, max_bytes=1 << 20, max_files=100)
    dst = tmp_path / "dst"
    assert (dst / "output.log").read_text() == "did it\n"
    assert (dst / "a" / "b" / "deep.txt").read_text() == "deep\n"
    assert (dst / "run.sh").stat().st_mode & 0o777 == 0o750
    assert (dst / "a" / Path(*["x"] * 20)).is_dir()


def test_links_fifos_sockets_and_devices_are_left_out_unopened(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("the person's\n")
    (src / "file").write_text("kept\n")
    (src / "to-file").symlink_to(outside / "secret")
    (src / "to-folder").symlink_to(outside)
    (src / "sub" / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(src / "pipe")  # opened without O_NONBLOCK, a copy would wait for a writer
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(src / "sock"))
    os.symlink("/dev/zero", src / "zero")  # endless, if it were ever read
    t0 = time.monotonic()
    copy_plain_tree(src, tmp_path / "dst", max_depth=8, max_bytes=1 << 20, max_files=100)
    assert time.monotonic() - t0 < 5
    server.close()
    dst = tmp_path / "dst"
    assert sorted(p.name for p in dst.iterdir()) == ["file", "sub"]
    assert list((dst / "sub").iterdir()) == []
    assert (outside / "secret").read_text() == "the person's\n"


def test_a_link_at_the_top_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "f").write_text("x")
    (tmp_path / "src").symlink_to(real)
    with pytest.raises(OSError):
        copy_plain_tree(
            tmp_path / "src", tmp_path / "dst", max_depth=8, max_bytes=1 << 20, max_files=100
        )
    assert not (tmp_path / "dst" / "f").exists()


def test_a_link_where_the_copy_writes_is_not_written_through(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "status.json").write_text("{}")
    (src / "output.log").write_text("log")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "status.json").symlink_to(victim)
    os.link(victim, dst / "output.log")  # a hard link: O_NOFOLLOW alone would write through
    copy_plain_tree(src, dst, max_depth=8, max_bytes=1 << 20, max_files=100)
    assert victim.read_text() == "precious\n"
    assert not (dst / "status.json").is_symlink() and (dst / "status.json").read_text() == "{}"
    assert (dst / "output.log").read_text() == "log"


def test_a_link_where_the_copy_makes_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "sub" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "sub").symlink_to(outside)
    with pytest.raises(OSError, match="symbolic link"):
        copy_plain_tree(
            tmp_path / "src", tmp_path / "dst", max_depth=8, max_bytes=1 << 20, max_files=100
        )
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("sizes", "limits", "words"),
    [
        ([600, 600], {"max_bytes": 1000, "max_files": 100}, "more than 1000 bytes"),
        ([1] * 20, {"max_bytes": 1 << 20, "max_files": 10}, "more than 10 files"),
    ],
    ids=["bytes", "files"],
)
def test_size_and_count_limits(
    tmp_path: Path, sizes: list[int], limits: dict[str, int], words: str
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i, size in enumerate(sizes):
        (src / f"f{i}").write_bytes(b"x" * size)
    with pytest.raises(CopyRefused, match=words):
        copy_plain_tree(src, tmp_path / "dst", max_depth=8, **limits)


def test_a_sparse_file_counts_by_what_is_read(tmp_path: Path) -> None:
    """A file that claims a terabyte (sparse) is refused once the limit is read, not first
    read whole."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "huge", "wb") as fh:
        fh.truncate(1 << 40)
    t0 = time.monotonic()
    with pytest.raises(CopyRefused, match="more than"):
        copy_plain_tree(src, tmp_path / "dst", max_depth=8, max_bytes=1 << 20, max_files=100)
    assert time.monotonic() - t0 < 5


def test_carry_over_runs_an_agent_with_a_700_deep_folder_again_and_says_why(
    tmp_path: Path,
) -> None:
    from structlog.testing import capture_logs

    from wave_orchestrator.runtime.wave.reuse import carry_over
    from wave_orchestrator.state.layout import StateLayout

    layout = StateLayout(tmp_path / "state", "main")
    for agent_id in ("A", "B"):
        folder = layout.wave_dir(1).with_name("wave-1.S") / "agents" / agent_id
        folder.mkdir(parents=True)
        (folder / "launch.json").write_text('{"attempt": 1}')
    deep(folder, 700)  # B's
    with capture_logs() as logs:
        assert carry_over(layout, 1, "S", ["A", "B"]) == ["A"]
    assert not layout.agent(1, "B").dir.exists()  # nothing half copied is left
    [said] = [e for e in logs if e.get("agent") == "B"]
    assert said["event"] == "agent not reused: it runs again"
    assert "more than 32 folders deep" in said["why"]


# -- end to end: a relaunch over an agent that left a 700-deep folder ---------------------------
DEEP_AND_DONE = (
    'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '
    'cd "$WAVE_STATE_DIR/waves/wave-$WAVE_WAVE/agents/$WAVE_AGENT_ID" && '
    "for i in $(seq 700); do mkdir d && cd d || exit 1; done; echo did A"
)
# B fails until the file `fixed` exists: the wave fails, and its next run reuses A
B_FAILS_FIRST = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; test -e "$WAVE_REPO/fixed"'


def runs(repo: Repo) -> list[str]:
    path = repo.root / "runs"
    return path.read_text().split() if path.exists() else []


@pytest.mark.e2e
def test_a_relaunch_over_a_700_deep_folder_runs_the_agent_again_and_says_why(
    tmux_repo: Repo,
) -> None:
    body = "agents:\n" + local_agent("A", DEEP_AND_DONE) + local_agent("B", B_FAILS_FIRST)
    tmux_repo.lane("main", local_lane(), {1: body})
    first = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert first.returncode != 0, first.stderr  # B failed; A succeeded, 700 folders deep
    assert sorted(runs(tmux_repo)) == ["A", "B"]
    assert tmux_repo.status("main", 1, "A")["code"] == 0
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "runs").unlink()

    again = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=120)
    assert "Traceback" not in again.stderr and "RecursionError" not in again.stderr, again.stderr
    assert again.returncode == 0, again.stderr
    assert sorted(runs(tmux_repo)) == ["A", "B"]  # A launched again, not reused
    said = [
        json.loads(line)
        for line in (tmux_repo.state("main") / "launcher.log").read_text().splitlines()
        if "not reused" in line and '"A"' in line
    ]
    assert said and "more than" in said[-1]["why"] and "folders deep" in said[-1]["why"], said
    assert not [e for e in tmux_repo.events("main") if e["event"] == "agent_reused"]
