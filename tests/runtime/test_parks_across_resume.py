"""A launcher killed while an agent is parked: the agent's parks so far, as its status file
keeps them, still count towards ``usage_limit.max_parks`` after ``--resume`` (a forged count
is bounded, an odd one is one park)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fakes.pool import plan_runs

from wave_orchestrator.runtime.wave.resume import Leftover, adopt
from wave_orchestrator.state.lifecycle import AgentState
from wave_orchestrator.state.status import StatusFile

WORDS = "You've hit your usage limit, resets in 10m"


def left_parked(parks: object) -> Leftover:
    until = time.time() + 600
    raw = {"code": 1, "usage_limit": True, "detail": WORDS, "attempt": 1}
    raw |= {"limited_until": until, "parks": parks}
    status = StatusFile(1, 1, 0, None, None, WORDS, True, None, raw, 1, until)
    return Leftover(attempt=1, executor="local", launched_at=time.time() - 5, status=status)


@pytest.mark.parametrize(
    ("parks", "counted"), [(2, 2), (1, 1), ("2", 1), (True, 1), (-3, 1), (10**9, 1), (None, 1)]
)
def test_a_resumed_launcher_counts_the_parks_the_status_file_kept(
    tmp_path: Path, parks: object, counted: int
) -> None:
    [planned] = plan_runs(tmp_path, 1)
    run = adopt(planned.launch, left_parked(parks), 1, None)
    assert run is not None and run.state is AgentState.LIMITED
    assert run.parked == counted
