"""A wave run attempt by attempt on a fake placement in simulated time: the stage hands its
agents to the pool, the gates judge them, a failed agent alone runs again, and the wave's end
is recorded (run state, dashboard.json), without tmux."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.clock import FakeClock, clock_installed
from fakes.placement import FakePlacement, Script
from fakes.wave import wave_on_fakes

from wave_orchestrator.runtime.wave.context import WaveOutcome
from wave_orchestrator.runtime.wave.runner import WaveRunner
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.run_state import RunState

LANE = "closure: {required_roles: []}\ndefaults: %s\n"


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    with clock_installed(FakeClock()) as fake:
        yield fake


def run_wave(
    root: Path, clock: FakeClock, scripts: dict[str, Script], monkeypatch: pytest.MonkeyPatch
) -> tuple[WaveOutcome, FakePlacement, StateLayout, list[dict[str, Any]]]:
    """Wave 1 of a lane of agents A0 and A1 (one retry allowed), its agents on the fakes."""
    defaults = {"executor": "local", "max_retries_per_wave": 1, "launch_stagger_ms": 0}
    command = {"local": {"command": "true"}}
    rows = [json.dumps({"id": a, "prompt": "noop", "executor": command}) for a in ("A0", "A1")]
    told: list[dict[str, Any]] = []
    ctx, placement, layout = wave_on_fakes(
        root,
        clock,
        monkeypatch,
        LANE % json.dumps(defaults),
        "agents:\n" + "".join(f"  - {r}\n" for r in rows),
        lambda session: scripts.get(session.split("-", 1)[1], Script()),
        told.append,
    )
    outcome = WaveRunner(ctx, ctx.lane.wave(1)).run(RunState(layout.run_state, "sim"))
    return outcome, placement, layout, told


def test_a_wave_whose_agents_succeed_completes_in_one_attempt(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, placement, layout, _ = run_wave(tmp_path, clock, {}, monkeypatch)
    assert (outcome.state, outcome.attempts, outcome.failures) == ("completed", 1, [])
    assert sorted(session for _, session in placement.starts) == ["w1-A0", "w1-A1"]
    assert RunState(layout.run_state, "sim").wave(1)["state"] == "completed"
    dashboard = json.loads(layout.dashboard(1).read_text())
    assert dashboard["status"] == "completed"
    assert {"stage": "implementation", "state": "passed"} in dashboard["stages"]


def test_a_failed_agent_alone_runs_again_and_the_wave_fails_when_no_retry_is_left(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome, placement, layout, _ = run_wave(tmp_path, clock, {"A1": Script(code=3)}, monkeypatch)
    assert (outcome.state, outcome.attempts, outcome.blocked) == ("failed", 2, False)
    assert [r.id for r in outcome.failures] == ["A1"]
    assert sorted(session for _, session in placement.starts) == ["w1-A0", "w1-A1", "w1-A1"]
    recorded = RunState(layout.run_state, "sim").wave(1)
    assert recorded["state"] == "failed" and "A1" in recorded["reason"]
