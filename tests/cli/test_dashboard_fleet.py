"""The interactive dashboard's keys run the real commands (issue 26 §1: one behaviour, two ways
to reach it): what they print, their exit codes, and the metrics the table shows."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane

from wave_orchestrator.cli.dashboard_fleet import CommandFleet
from wave_orchestrator.state.layout import StateLayout


@pytest.fixture
def fleet(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> CommandFleet:
    for name in ("WAVE_STATE_DIR", "WAVE_REPO", "WAVE_AGENT_ID"):
        monkeypatch.delenv(name, raising=False)
    repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    return CommandFleet(repo.root, "main", StateLayout(repo.root / ".wave" / "main", "main"))


def test_a_comment_key_is_wave_comment(fleet: CommandFleet) -> None:
    done = fleet.command(["comment", "--agent", "A", "--wave", "1", "--text=-starts with a dash"])
    assert done.code == 0, done.text
    lines = fleet.layout.coordination_log(1).read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["summary"] == "-starts with a dash" and record["id"] == done.text.strip()


def test_a_refused_command_gives_its_exit_code_and_words(fleet: CommandFleet) -> None:
    done = fleet.command(["stop", "--agent", "A"])
    assert done.code == 2 and "no wave of lane 'main' is running" in done.text


def test_agents_stay_agents_through_the_dashboard(
    fleet: CommandFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dashboard run in an agent's session comments no more than the agent could."""
    monkeypatch.setenv("WAVE_AGENT_ID", "A")
    done = fleet.command(["comment", "--agent", "A", "--wave", "1", "--text=x"])
    assert done.code == 2 and not fleet.layout.coordination_log(1).exists()


def test_attach_prints_the_command_the_app_runs_suspended(fleet: CommandFleet) -> None:
    done = fleet.command(["attach", "A", "--wave", "1", "--print"])
    argv = shlex.split(done.text)
    assert done.code == 0 and argv[0] == "tmux" and argv[-1] == "=w1-A"


def test_usage_is_each_agent_s_last_recorded_attempt_of_the_wave(fleet: CommandFleet) -> None:
    path: Path = fleet.layout.metrics
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {
        "lane": "main",
        "executor": "claude",
        "status": "success",
        "duration_ms": 1,
        "tries": 1,
        "rate_limited": 0,
        "agent": "A",
    }
    records = [
        {
            **base,
            "id": "1",
            "wave": 1,
            "started_at": "2026-12-05T01:00:00Z",
            "input_tokens": 10,
            "output_tokens": 5,
            "cost_usd": 0.5,
        },
        {
            **base,
            "id": "2",
            "wave": 1,
            "started_at": "2026-12-05T02:00:00Z",
            "input_tokens": 1000,
            "output_tokens": 234,
            "cost_usd": 1.25,
        },
        {**base, "id": "3", "wave": 2, "started_at": "2026-12-05T03:00:00Z", "cost_usd": 9.0},
        {
            **base,
            "id": "4",
            "wave": 1,
            "agent": "B",
            "started_at": "2026-12-05T03:00:00Z",
            "cost_usd": True,
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "{torn\n")
    assert fleet.usage(1) == {"A": (1234, 1.25), "B": (None, None)}
    assert fleet.usage(2) == {"A": (None, 9.0)}


@pytest.mark.parametrize(
    ("key", "colour"), [("launch", "unset"), ("rerun", "unset"), ("stop", "1")]
)
def test_a_key_that_starts_a_launcher_hands_it_the_person_s_environment(
    fleet: CommandFleet, monkeypatch: pytest.MonkeyPatch, key: str, colour: str
) -> None:
    """NO_COLOR keeps escapes out of what the console shows; a launcher started from a key
    (and its agents) must not inherit it, as one started at a terminal would not."""
    from wave_orchestrator.cli import dashboard_fleet

    monkeypatch.delenv("NO_COLOR", raising=False)
    says = ["sh", "-c", 'printf "%s" "${NO_COLOR-unset}"']
    monkeypatch.setattr(dashboard_fleet, "wave_argv", lambda *argv: says)
    assert fleet.command([key]).text == colour
