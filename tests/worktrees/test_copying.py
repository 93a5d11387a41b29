"""setup.copy into a hostile worktree: never through a link, never blocking, owner-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from wave_orchestrator.errors import WaveError
from wave_orchestrator.worktrees.copying import CopyRefused, copy_setup_files


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "main"
    root.mkdir()
    return root


@pytest.fixture
def target(tmp_path: Path) -> Path:
    root = tmp_path / "worktree"
    root.mkdir()
    return root


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".wave-copy")]


def test_a_file_is_copied_owner_only_with_its_mtime(source: Path, target: Path) -> None:
    (source / ".env").write_text("TOKEN=secret\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(source / ".env", 0o644)
    os.chmod(source / "run.sh", 0o755)
    os.utime(source / ".env", (1_000_000_000, 1_000_000_000))

    written = copy_setup_files(source, target, [".env", "run.sh"])

    assert written == [".env", "run.sh"]
    assert (target / ".env").read_text() == "TOKEN=secret\n"
    assert mode(target / ".env") == 0o600
    assert mode(target / "run.sh") == 0o700
    assert (target / ".env").stat().st_mtime == 1_000_000_000
    assert leftovers(target) == []


def test_a_folder_is_copied_recursively_keeping_links_as_links(
    source: Path, target: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not to be copied\n")
    (source / "config" / "deep").mkdir(parents=True)
    (source / "config" / "local.yaml").write_text("a: 1\n")
    (source / "config" / "deep" / "more.yaml").write_text("b: 2\n")
    (source / "config" / "link").symlink_to(outside)

    written = copy_setup_files(source, target, ["config"])

    assert written == ["config/deep/more.yaml", "config/link", "config/local.yaml"]
    assert (target / "config" / "local.yaml").read_text() == "a: 1\n"
    assert (target / "config" / "deep" / "more.yaml").read_text() == "b: 2\n"
    assert (target / "config" / "link").is_symlink()
    assert os.readlink(target / "config" / "link") == str(outside)
    assert mode(target / "config") == 0o700
    assert mode(target / "config" / "deep") == 0o700


def test_a_target_that_is_a_link_to_a_file_outside_is_refused(
    source: Path, target: Path, tmp_path: Path
) -> None:
    (source / ".env").write_text("TOKEN=secret\n")
    outside = tmp_path / "outside"
    outside.write_text("untouched\n")
    os.chmod(outside, 0o644)
    (target / ".env").symlink_to(outside)

    with pytest.raises(CopyRefused) as refused:
        copy_setup_files(source, target, [".env"])

    assert str(refused.value) == (
        f"setup.copy: .env in {target} is a symbolic link (to {outside}), "
        "refusing to write through it"
    )
    assert outside.read_text() == "untouched\n"
    assert mode(outside) == 0o644
    assert os.readlink(target / ".env") == str(outside)
    assert leftovers(target) == []


def test_a_dangling_target_link_is_refused_and_nothing_is_created(
    source: Path, target: Path, tmp_path: Path
) -> None:
    (source / ".env").write_text("TOKEN=secret\n")
    outside = tmp_path / "would-be-created"
    (target / ".env").symlink_to(outside)

    with pytest.raises(CopyRefused, match="symbolic link"):
        copy_setup_files(source, target, [".env"])

    assert not outside.exists()


def test_a_parent_folder_that_is_a_link_is_refused(
    source: Path, target: Path, tmp_path: Path
) -> None:
    (source / "config").mkdir()
    (source / "config" / "local.yaml").write_text("token: x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (target / "config").symlink_to(elsewhere)

    with pytest.raises(CopyRefused, match=r"config in .* is a symbolic link \(to .*elsewhere\)"):
        copy_setup_files(source, target, ["config/local.yaml"])
    with pytest.raises(CopyRefused, match="symbolic link"):
        copy_setup_files(source, target, ["config"])

    assert list(elsewhere.iterdir()) == []


def test_a_link_deeper_in_the_target_path_is_refused(
    source: Path, target: Path, tmp_path: Path
) -> None:
    (source / "a" / "b").mkdir(parents=True)
    (source / "a" / "b" / "c.txt").write_text("x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (target / "a").mkdir()
    (target / "a" / "b").symlink_to(elsewhere)

    with pytest.raises(CopyRefused, match=r"a/b in .* is a symbolic link"):
        copy_setup_files(source, target, ["a/b/c.txt"])

    assert list(elsewhere.iterdir()) == []


def test_missing_parent_folders_are_made_owner_only(source: Path, target: Path) -> None:
    (source / "a" / "b").mkdir(parents=True)
    (source / "a" / "b" / "c.txt").write_text("x\n")

    assert copy_setup_files(source, target, ["a/b/c.txt"]) == ["a/b/c.txt"]

    assert (target / "a" / "b" / "c.txt").read_text() == "x\n"
    assert mode(target / "a") == 0o700
    assert mode(target / "a" / "b") == 0o700


def test_a_source_link_is_copied_as_a_link_not_followed(
    source: Path, target: Path, tmp_path: Path
) -> None:
    real = tmp_path / "real.env"
    real.write_text("TOKEN=secret\n")
    (source / ".env").symlink_to(real)

    assert copy_setup_files(source, target, [".env"]) == [".env"]

    assert (target / ".env").is_symlink()
    assert os.readlink(target / ".env") == str(real)


def test_a_missing_source_is_skipped(source: Path, target: Path) -> None:
    (source / "here.txt").write_text("x\n")

    assert copy_setup_files(source, target, ["absent.env", "here.txt", "no/such/dir"]) == [
        "here.txt"
    ]

    assert sorted(p.name for p in target.iterdir()) == ["here.txt"]


@pytest.mark.parametrize("rel", ["../escape", "a/../../escape", "/etc/passwd", "", "."])
def test_paths_outside_the_repository_are_refused(
    source: Path, target: Path, tmp_path: Path, rel: str
) -> None:
    (tmp_path / "escape").write_text("x\n")
    (source / "a").mkdir()

    with pytest.raises(CopyRefused, match=r"^setup\.copy: .* (is not inside|names no file)"):
        copy_setup_files(source, target, [rel])

    assert list(target.iterdir()) == []


def test_a_fifo_source_is_refused_without_blocking(source: Path, target: Path) -> None:
    os.mkfifo(source / "pipe")
    (source / "folder").mkdir()
    os.mkfifo(source / "folder" / "pipe")

    # Opened blocking, a FIFO with no writer would hang here: the test would never return.
    with pytest.raises(CopyRefused, match=r"pipe in .* is a FIFO"):
        copy_setup_files(source, target, ["pipe"])
    with pytest.raises(CopyRefused, match=r"folder/pipe in .* is a FIFO"):
        copy_setup_files(source, target, ["folder"])

    assert not (target / "pipe").exists()
    assert not (target / "folder" / "pipe").exists()


def test_a_fifo_in_the_target_is_refused(source: Path, target: Path) -> None:
    (source / ".env").write_text("TOKEN=secret\n")
    os.mkfifo(target / ".env")

    with pytest.raises(CopyRefused, match=r"\.env in .* is a FIFO"):
        copy_setup_files(source, target, [".env"])

    assert stat.S_ISFIFO((target / ".env").lstat().st_mode)


def test_a_folder_where_a_file_goes_is_refused(source: Path, target: Path) -> None:
    (source / ".env").write_text("TOKEN=secret\n")
    (target / ".env").mkdir()
    (source / "config").mkdir()
    (target / "config").write_text("a file\n")

    with pytest.raises(CopyRefused, match=r"\.env in .* is a folder"):
        copy_setup_files(source, target, [".env"])
    with pytest.raises(CopyRefused, match=r"config in .* is a file"):
        copy_setup_files(source, target, ["config"])


def test_an_existing_regular_target_is_replaced_not_written_into(
    source: Path, target: Path, tmp_path: Path
) -> None:
    (source / ".env").write_text("TOKEN=new\n")
    os.chmod(source / ".env", 0o640)
    (target / ".env").write_text("TOKEN=old, longer than the new one\n")
    os.chmod(target / ".env", 0o666)
    hardlink = tmp_path / "hardlink-outside"
    os.link(target / ".env", hardlink)

    assert copy_setup_files(source, target, [".env"]) == [".env"]

    assert (target / ".env").read_text() == "TOKEN=new\n"
    assert mode(target / ".env") == 0o600
    assert hardlink.read_text() == "TOKEN=old, longer than the new one\n"
    assert leftovers(target) == []


def test_copy_refused_is_a_wave_error_with_exit_code_1() -> None:
    assert issubclass(CopyRefused, WaveError)
    assert CopyRefused.exit_code == 1
