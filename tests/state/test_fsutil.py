from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from wave_orchestrator.state import fsutil
from wave_orchestrator.state.fsutil import (
    UnsafePath,
    ensure_dir,
    folders_checked_once,
    register_state_root,
    write_atomic,
    write_if_changed,
    write_json_atomic,
)
from wave_orchestrator.state.jsonl import append_jsonl, read_jsonl
from wave_orchestrator.state.owned_trees import clear_owned


def test_jsonl_reader_skips_torn_and_invalid_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_jsonl(path, {"a": 1})
    with path.open("a") as fh:
        fh.write('{"torn": \n[1, 2]\nnot json\n')
    append_jsonl(path, {"b": 2})
    assert list(read_jsonl(path)) == [{"a": 1}, {"b": 2}]
    assert list(read_jsonl(tmp_path / "missing.jsonl")) == []


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    write_json_atomic(path, {"v": 1})
    write_json_atomic(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 2}
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]


def test_a_folder_swapped_for_a_link_is_refused_again_outside_a_checked_once_block(
    tmp_path: Path,
) -> None:
    """A launcher lives as long as its agents: every ensure_dir checks every folder again."""
    root, outside = tmp_path / "state", tmp_path / "outside"
    outside.mkdir()
    register_state_root(root)
    ensure_dir(root / "waves" / "w1")
    (root / "waves" / "w1").rmdir()
    (root / "waves" / "w1").symlink_to(outside)
    with pytest.raises(UnsafePath, match="w1 is a symbolic link"):
        write_atomic(root / "waves" / "w1" / "prompt.md", "x")
    assert list(outside.iterdir()) == []


def test_folders_checked_once_checks_each_folder_once_and_forgets_what_it_clears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "state"
    register_state_root(root)
    looked: list[str] = []
    real_lstat = fsutil.os.lstat

    def lstat(path: Any, **kwargs: Any) -> Any:
        looked.append(str(path))
        return real_lstat(path, **kwargs)

    with folders_checked_once():
        clear_owned(root, "waves")  # wave's marker: the tree is its own from now on
        monkeypatch.setattr(fsutil.os, "lstat", lstat)
        for name in ("a.md", "b.md", "c.md"):
            write_atomic(root / "waves" / "w1" / name, name)
        folders = [p for p in looked if not p.endswith(".md")]
        assert folders.count(str(root / "waves")) == 1
        assert folders.count(str(root / "waves" / "w1")) == 1
        # The files are still looked at, every one: a link there is refused, not written through.
        (root / "waves" / "w1" / "a.md").unlink()
        (root / "waves" / "w1" / "a.md").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(UnsafePath, match=r"a\.md is a symbolic link"):
            write_atomic(root / "waves" / "w1" / "a.md", "x")
        # A cleared tree is checked again when it is made again.
        clear_owned(root, "waves")
        (root / "waves").symlink_to(tmp_path)
        with pytest.raises(UnsafePath, match="waves is a symbolic link"):
            write_atomic(root / "waves" / "w1" / "b.md", "x")
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "w1").exists()


def test_write_if_changed_leaves_the_same_file_and_replaces_any_other(tmp_path: Path) -> None:
    path = tmp_path / "preview.json"
    assert write_if_changed(path, "one\n", mode=0o600)
    inode = path.stat().st_ino
    assert not write_if_changed(path, "one\n", mode=0o600)
    assert path.stat().st_ino == inode
    path.chmod(0o644)  # the same text, readable by all: made owner-only again
    assert write_if_changed(path, "one\n", mode=0o600)
    assert path.stat().st_mode & 0o777 == 0o600 and path.stat().st_ino != inode
    assert write_if_changed(path, "two\n", mode=0o600) and path.read_text() == "two\n"


def test_write_if_changed_never_writes_through_a_link_nor_waits_on_a_fifo(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("same\n")
    victim.chmod(0o600)
    link, fifo = tmp_path / "prompt.md", tmp_path / "run.sh"
    link.symlink_to(victim)
    os.mkfifo(fifo)
    for path in (link, fifo):  # the same text as the victim: still refused, not skipped
        with pytest.raises(UnsafePath):
            write_if_changed(path, "same\n", mode=0o600)
    assert victim.read_text() == "same\n" and link.is_symlink()


def test_a_new_file_whose_text_cannot_be_written_leaves_nothing_behind(tmp_path: Path) -> None:
    """Text that cannot be encoded fails before anything is made: no file, no folder."""
    from wave_orchestrator.state.fsutil import write_new

    path = tmp_path / "preview" / "A.json"
    with pytest.raises(UnicodeEncodeError):
        write_new(path, "a lone surrogate \ud800")
    assert not path.parent.exists()
    assert write_new(path, "fine\n") and path.read_text() == "fine\n"
    assert not write_new(path, "again\n") and path.read_text() == "fine\n"
