"""`wave doctor` and `wave launch` warn of what would quietly go wrong: a lane that wants
desktop notifications on a machine with no notify-send, and a state dir inside the
repository that git does not ignore (`git add .` would commit logs, prompts and answers)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, git_init, local_agent, local_lane

ONE = "agents:\n" + local_agent("A", "echo done")


def _without_notify_send(repo: Repo) -> None:
    """PATH as it was, less any folder that has a notify-send."""
    folders = repo.env["PATH"].split(os.pathsep)
    kept = [f for f in folders if f and not (Path(f) / "notify-send").exists()]
    repo.env["PATH"] = os.pathsep.join(kept)


def _checks(repo: Repo) -> dict[str, dict[str, Any]]:
    done = repo.wave("doctor", "--json")
    assert done.returncode in (0, 1), done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def test_doctor_warns_of_a_state_dir_git_does_not_ignore(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: ONE})
    git_init(repo.root)
    (repo.root / ".gitignore").write_text("*.pyc\n")
    check = _checks(repo)["gitignore"]
    assert not check["ok"] and not check["blocking"], check
    assert ".wave/main" in check["detail"] and "not git-ignored" in check["detail"]
    assert check["fix"] == "add the line `.wave/` to .gitignore"
    done = repo.wave("doctor")
    assert "warn  gitignore: " in done.stdout and "add the line `.wave/`" in done.stdout
    (repo.root / ".gitignore").write_text("*.pyc\n.wave/\n")
    check = _checks(repo)["gitignore"]
    assert check["ok"] and ".wave/main" in check["detail"], check


def test_doctor_says_nothing_of_gitignore_outside_a_git_repository(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: ONE})
    assert "gitignore" not in _checks(repo)


def test_doctor_warns_of_desktop_notifications_with_no_notify_send(repo: Repo) -> None:
    repo.lane("main", local_lane() + "notify: {desktop: true}\n", {1: ONE})
    repo.lane("quiet", local_lane(), {1: ONE})
    _without_notify_send(repo)
    check = _checks(repo)["notify-send"]
    assert not check["ok"] and not check["blocking"], check
    assert "lanes: main)" in check["detail"] and "not on PATH" in check["detail"]
    assert "desktop: false" in check["fix"]
    repo.fake("notify-send", "exit 0\n")
    assert _checks(repo)["notify-send"]["ok"]


def test_doctor_has_no_notify_send_line_when_no_lane_wants_the_desktop(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: ONE})
    _without_notify_send(repo)
    assert "notify-send" not in _checks(repo)


@pytest.mark.e2e
def test_a_launch_warns_once_that_desktop_notifications_cannot_be_shown(tmux_repo: Repo) -> None:
    waves = {1: ONE, 2: "agents:\n" + local_agent("B", "echo done")}
    tmux_repo.lane("main", local_lane() + "notify: {desktop: true}\n", waves)
    _without_notify_send(tmux_repo)
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("notify-send is not on PATH") == 1, done.stderr
    log = (tmux_repo.state("main") / "launcher.log").read_text()
    assert "notify-send is not on PATH" in log
