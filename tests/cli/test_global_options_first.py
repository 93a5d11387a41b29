"""`--repo` and `--lane` before the command work for every command, as `wave --help` says:
also for the commands whose options belong to an action (`wave --lane X coord show`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo, git_init, local_lane

from wave_orchestrator.cli import (
    COMMANDS,
    GLOBAL_OPTIONS,
    IGNORES_GLOBAL,
    build_parser,
    hoist_global_options,
)

WAVE = 'agents:\n  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'


def _two_lanes(repo: Repo) -> None:
    """Two lanes and no default: a command that lost --lane exits 2 (which lane?)."""
    repo.lane("main", local_lane(), {1: WAVE})
    repo.lane("other", local_lane(), {1: WAVE})
    git_init(repo.root)


def _wave_first(repo: Repo, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`wave --repo R --lane other ARGS`, run from a folder outside the repository."""
    argv = [sys.executable, "-P", "-m", "wave_orchestrator", "--repo", str(repo.root)]
    return subprocess.run(
        [*argv, "--lane", "other", *args],
        env=repo.env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_global_options_before_a_command_with_actions(repo: Repo, tmp_path: Path) -> None:
    _two_lanes(repo)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    posted = _wave_first(repo, outside, "coord", "post", "--wave", "1", "--kind", "decision")
    assert posted.returncode == 2 and "--summary" in posted.stderr  # its own error, not ours
    posted = _wave_first(
        repo, outside, "coord", "post", "--wave", "1", "--kind", "decision", "--summary", "x"
    )
    assert posted.returncode == 0, posted.stderr
    assert (repo.state("other") / "coordination" / "wave-1.jsonl").exists()
    assert not (repo.state("main") / "coordination").exists()
    shown = _wave_first(repo, outside, "coord", "show", "--wave", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [item["summary"] for item in json.loads(shown.stdout)] == ["x"]
    listed = _wave_first(repo, outside, "feedback", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr
    desk = _wave_first(repo, outside, "desk", "status", "--wave", "1", "--json")
    assert desk.returncode == 0, desk.stderr
    trees = _wave_first(repo, outside, "worktrees", "list", "--json")
    assert trees.returncode == 0, trees.stderr


def test_global_options_before_a_command_that_ignores_one(repo: Repo, tmp_path: Path) -> None:
    """Like $WAVE_LANE, a --lane before `wave lanes` (which lists every lane) is no error."""
    _two_lanes(repo)
    lanes = _wave_first(repo, tmp_path, "lanes", "--json")
    assert lanes.returncode == 0, lanes.stderr
    assert "other" in lanes.stdout and "main" in lanes.stdout


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_parses_with_global_options_first(command: str) -> None:
    """Every command, and every action of one, takes --repo and --lane before it."""
    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    sub = choices[command]
    actions = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
    lines = [[command, name] for name in actions[0].choices] if actions else [[command]]
    for words in lines:
        takes = set(choices[command]._option_string_actions)
        if actions:
            takes = set(actions[0].choices[words[1]]._option_string_actions)
        assert (set(GLOBAL_OPTIONS) - takes) == set(IGNORES_GLOBAL.get(command, ())), words
        argv = hoist_global_options(["--repo", "/r", "--lane", "x", *words, *_needed(words)])
        args = build_parser(argv).parse_args(argv)
        assert args.command == command
        assert getattr(args, "repo", "/r") == "/r" and getattr(args, "lane", "x") == "x"


def _needed(words: list[str]) -> list[str]:
    """The required arguments of the actions that have some."""
    needs = {
        "desk claim": ["f"],
        "desk handover": ["f", "--note", "n"],
        "summary": ["A"],
        "diff": ["A"],
        "rerun": ["A"],
        "comment": ["--text", "t"],
        "coord post": ["--kind", "ack", "--summary", "s"],
        "coord resolve": ["c-1"],
        "feedback ask": ["--question", "q"],
        "feedback show": ["q-1"],
        "feedback respond": ["q-1", "--response", "r"],
        "completion": ["bash"],
    }
    return needs.get(" ".join(words), [])
