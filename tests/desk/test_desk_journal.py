"""The desk's journal is kept and truncated, never deleted, by every connection: a sandboxed
agent reaches the desk through the database and journal files bound into its sandbox, and the
launcher's own changes between two of its commands must leave both in place."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import sandboxed_agent_site

from wave_orchestrator.definitions.model import SandboxSettings
from wave_orchestrator.desk.claims import Desk
from wave_orchestrator.sandbox.bwrap import build_binds, shell_line, to_argv
from wave_orchestrator.sandbox.plan import plan_sandbox, prepare
from wave_orchestrator.sandbox.probe import probe


def journal(db: Path) -> Path:
    return db.with_name(db.name + "-journal")


def test_a_change_leaves_the_journal_in_place_and_empty(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    db = tmp_path / "desk.sqlite3"
    desk = Desk(db, repo, wave=1)
    desk.claim("A1", "a.py")
    inode = journal(db).stat().st_ino
    desk.claim("B1", "a.py")
    desk.handover("A1", "a.py", "yours")
    assert journal(db).stat().st_size == 0  # truncated after each change
    assert journal(db).stat().st_ino == inode  # the same file: never removed and made anew


def test_a_desk_once_opened_in_delete_mode_is_truncated_all_the_same(tmp_path: Path) -> None:
    """The journal mode of a rollback journal is a connection's, not the file's: a desk made
    by an older wave (or anyone) in the default mode gets the kept journal from every
    connection of ours."""
    repo = tmp_path / "repo"
    repo.mkdir()
    db = tmp_path / "desk.sqlite3"
    with sqlite3.connect(db) as old:
        old.execute("PRAGMA journal_mode = DELETE")
        old.execute("CREATE TABLE unrelated (x)")
    old.close()
    assert not journal(db).exists()
    Desk(db, repo, wave=1).claim("A1", "a.py")
    assert journal(db).is_file() and journal(db).stat().st_size == 0


def test_sandboxed_claims_around_the_launchers_handover(
    outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A1 (sandboxed) claims a file B2 holds; the launcher, outside, releases what B2 held as
    it does when B2 ends; A1, sandboxed again, finds the file handed to it and claims another.
    A journal deleted by any of those connections would leave the second command no journal
    to write (its state dir is hidden and read-only), and its claim would fail."""
    repo, layout, env = sandboxed_agent_site(outside_tmp)
    launcher = Desk(layout.desk, repo, wave=1)
    launcher.claim("B2", "README.md", "edit")
    plan = plan_sandbox(
        SandboxSettings(mode="bubblewrap"),
        layout=layout,
        repo=repo,
        wave=1,
        agent_id="A1",
        executor="local",
        desk=True,
        env=env,
    )
    prepare(plan)
    wave = [sys.executable, "-P", "-m", "wave_orchestrator", "desk"]

    def boxed(*words: str) -> subprocess.CompletedProcess[str]:
        argv = to_argv(build_binds(plan), ["bash", "-c", shell_line([*wave, *words])])
        argv[0] = probe().require()
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )

    first = boxed("claim", "README.md", "--intent", "fix")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "queued" in first.stdout
    assert [h.to_agent for h in launcher.release_all("B2", "B2 ended")] == ["A1"]
    second = boxed("claim", "src/new.py", "--intent", "add")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "granted" in second.stdout
    held = dict(Desk(layout.desk, repo, wave=1).mine("A1").held)
    assert held == {"README.md": "fix", "src/new.py": "add"}
