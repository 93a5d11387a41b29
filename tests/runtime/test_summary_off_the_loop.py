"""A streaming agent's summary, as it ends, is written off the pool's loop: reading its
stream to its end (a big log is many reads) must not hold the next agent's end unnoticed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.clock import FakeClock, clock_installed
from fakes.wave import wave_on_fakes

import wave_orchestrator.runtime.wave.snapshot as snapshot_module
from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.runtime.pool.loop import AgentPool
from wave_orchestrator.runtime.wave import summaries
from wave_orchestrator.runtime.wave.runner import WaveRunner
from wave_orchestrator.state.events import EventLog
from wave_orchestrator.state.run_state import RunState

LANE = "closure: {required_roles: []}\ndefaults: {max_retries_per_wave: 0, launch_stagger_ms: 0}\n"
STREAMS = "{id: claude, claude: {output_format: stream-json}}"
TEXT = "{id: local, local: {command: 'true'}}"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The fake clock for the pool, and for the dashboard's frames (summaries ride them)."""
    with clock_installed(FakeClock()) as fake:
        monkeypatch.setattr(snapshot_module, "time", fake)
        yield fake


def test_a_streaming_agent_s_summary_reads_its_stream_off_the_loop(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = f"  - {{id: K, prompt: go, executor: {STREAMS}}}\n  - {{id: L, prompt: go, executor: {TEXT}}}\n"
    ctx, _, layout = wave_on_fakes(tmp_path, clock, monkeypatch, LANE, "agents:\n" + rows)
    pool_runs = threading.Event()
    real_run = AgentPool.run

    def pool_run(pool: AgentPool) -> None:
        pool_runs.set()
        try:
            real_run(pool)
        finally:
            pool_runs.clear()

    monkeypatch.setattr(AgentPool, "run", pool_run)
    on_loop: list[str] = []  # streams read to their end on the loop while it ran
    read: list[str] = []
    real = summaries.stream_row

    def noted(run: AgentRun, catch_up: bool = False) -> Any:
        read.append(run.id)
        if (
            catch_up
            and pool_runs.is_set()
            and threading.current_thread() is threading.main_thread()
        ):
            on_loop.append(run.id)
        return real(run, catch_up)

    monkeypatch.setattr(summaries, "stream_row", noted)
    outcome = WaveRunner(ctx, ctx.lane.wave(1)).run(RunState(layout.run_state, "sim"))
    assert outcome.state == "completed"
    assert "K" in read and "L" in read  # both summaries written
    assert on_loop == []  # K's stream was read to its end off the loop (L has none to read)
    assert json.loads(layout.agent(1, "K").summary.read_text())["agent"] == "K"


def test_a_summary_written_later_is_of_the_try_that_ended_not_of_its_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary thread is held while a person's rerun renews the run on the loop: the
    summary it then writes is still the ended try's (its outcome, its conversation)."""
    from types import SimpleNamespace

    from fakes.pool import plan_runs

    from wave_orchestrator.closure.gates import AgentResult
    from wave_orchestrator.closure.markers import parse_markers
    from wave_orchestrator.runtime.wave.judging import Judging
    from wave_orchestrator.state.lifecycle import AgentState

    [run] = plan_runs(tmp_path, 1)
    run.to(AgentState.LAUNCHING)
    run.launched_wall = 1_900_000_000.0
    run.begin(0.0)
    run.said_conversation = "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"
    run.end(AgentState.COMPLETED, EventLog(tmp_path / "events.jsonl"), 0)
    held, release = threading.Event(), threading.Event()
    real = summaries.stream_row

    def hold(run: AgentRun, catch_up: bool = False) -> Any:
        held.set()
        release.wait(10)
        return real(run, catch_up)

    monkeypatch.setattr(summaries, "stream_row", hold)

    def result_of(agent: Any) -> AgentResult:
        return AgentResult(agent, "success", 0, parse_markers(""), tmp_path)

    judging = SimpleNamespace(_writer=None, _pending=[], _written={}, result=result_of)
    Judging._write_later(judging, run, {})  # type: ignore[arg-type]
    assert held.wait(10)
    run.renew()  # `wave rerun` on the loop, meanwhile
    release.set()
    judging._pending[0].result(10)
    judging._writer.shutdown()
    summary = json.loads(run.launch.paths.summary.read_text())
    assert summary["status"] == "success"
    assert summary["conversation"] == "0d0e8d38-4b7a-4bde-9a5a-4c5b0a8f5b7e"
