"""Fault class 7: a lanes/ folder whose name is no lane name (spaces, a leading dot or dash,
capitals, a control character) is skipped with a warning by every command; alone, it makes
commands say there is no lane, never a traceback; beside a good lane, the good lane works."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_lane

from wave_orchestrator.definitions.repository.lanes import lane_folders, skipped_lane_warnings

BAD_NAMES = ["bad name", ".hidden", "-x", "UPPER", "esc\x1b[2Jape", "a" * 40]
WAVE = "agents:\n  - {id: A1, prompt: work, executor: {local: {command: [echo, hi]}}}\n"
COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("stop",),
    ("dashboard", "--once"),
    ("logs", "A1"),
    ("desk", "status", "--wave", "1"),
    ("attach", "--print", "A1", "--wave", "1"),
    ("validate",),
    ("launch", "--dry-run"),
]


def bad_folder(repo: Repo, name: str) -> None:
    folder = repo.root / "lanes" / name
    (folder / "waves").mkdir(parents=True)
    (folder / "lane.yaml").write_text(local_lane())
    (folder / "waves" / "wave-1.yaml").write_text(WAVE)


def clean(result: object) -> str:
    out = getattr(result, "stdout", "") + getattr(result, "stderr", "")
    assert "Traceback" not in out, out
    assert "\x1b" not in out, out  # the name is shown quoted, its escape never sent
    return out


def test_every_invalid_name_is_skipped_and_listed(repo: Repo) -> None:
    repo.lane("good", local_lane(), {1: WAVE})
    for name in BAD_NAMES:
        bad_folder(repo, name)
    (repo.root / "lanes" / "no-lane-yaml").mkdir()  # not a lane at all: silently ignored
    lanes, skipped = lane_folders(repo.root)
    assert lanes == ["good"] and sorted(skipped) == sorted(BAD_NAMES)
    assert len(skipped_lane_warnings(repo.root)) == len(BAD_NAMES)


@pytest.mark.parametrize("name", ["bad name", "esc\x1b[2Jape"], ids=repr)
def test_lanes_and_metrics_skip_the_folder_with_a_warning(repo: Repo, name: str) -> None:
    repo.lane("good", local_lane(), {1: WAVE})
    bad_folder(repo, name)
    listed = repo.wave("lanes", "--json")
    clean(listed)
    assert listed.returncode == 0
    assert [row["lane"] for row in json.loads(listed.stdout)["lanes"]] == ["good"]
    assert "wave: warning: skipped the folder" in listed.stderr
    assert repr("lanes/" + name) in listed.stderr
    for args in (("metrics",), ("metrics", "--json")):
        metrics = repo.wave(*args)
        clean(metrics)
        assert metrics.returncode == 0 and "skipped the folder" in metrics.stderr


@pytest.mark.parametrize("name", ["bad name", "esc\x1b[2Jape"], ids=repr)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_alone_it_is_no_lane_and_no_traceback(
    repo: Repo, name: str, command: tuple[str, ...]
) -> None:
    bad_folder(repo, name)
    result = repo.wave(*command)
    clean(result)
    assert result.returncode == 2
    assert "skipped the folder" in result.stderr
    assert f"wave: no lane in {repo.root / 'lanes'}" in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_beside_a_good_lane_the_good_lane_is_the_only_lane(
    repo: Repo, command: tuple[str, ...]
) -> None:
    repo.lane("good", local_lane(), {1: WAVE})
    bad_folder(repo, "bad name")
    result = repo.wave(*command)  # no --lane: the good lane is the repository's only lane
    clean(result)
    assert "skipped the folder 'lanes/bad name'" in result.stderr
    assert "no lane" not in result.stderr and "--lane is required" not in result.stderr
    # `logs` and `attach` ask about an agent that has not run yet
    assert result.returncode in ((0, 2) if command[0] in ("logs", "attach") else (0,))


def test_naming_the_bad_folder_is_a_usage_error(repo: Repo) -> None:
    bad_folder(repo, "bad name")
    result = repo.wave("status", "--lane", "bad name")
    clean(result)
    assert result.returncode == 2 and "invalid lane name 'bad name'" in result.stderr
