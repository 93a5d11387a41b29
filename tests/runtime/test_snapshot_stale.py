"""dashboard.json's last line of an agent is its current try's: what an earlier attempt (or
an earlier try of the same attempt) printed never stands for the run now on screen."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fakes.pool import plan_runs

from wave_orchestrator.runtime.agent.run import AgentRun, archive_attempt
from wave_orchestrator.runtime.wave.snapshot import OutputCache, agent_row
from wave_orchestrator.state.lifecycle import AgentState


def launched(run: AgentRun, said: str) -> None:
    run.to(AgentState.LAUNCHING)
    run.to(AgentState.RUNNING)
    run.launched_wall = time.time()
    run.launch.paths.output_log.parent.mkdir(parents=True, exist_ok=True)
    run.launch.paths.output_log.write_text(said)


def test_a_try_that_ended_before_any_frame_shows_its_own_last_line(tmp_path: Path) -> None:
    """Its first try ended and was drawn (its log then read no more); its next try prints and
    ends between two frames: the row says what the next try printed."""
    run = plan_runs(tmp_path, 1)[0]
    cache = OutputCache()
    launched(run, "words of try one\n")
    assert agent_row(run, cache)["last_line"] == "words of try one"
    run.to(AgentState.FAILED)
    for _ in range(3):  # frames after its end
        assert agent_row(run, cache)["last_line"] == "words of try one"
    archive_attempt(run.launch, run.launch.attempt, ".rerun1")
    run.renew()
    assert agent_row(run, cache)["last_line"] == ""  # pending: nothing of its own yet
    launched(run, "words of try two\n")
    run.to(AgentState.FAILED)
    assert agent_row(run, cache)["last_line"] == "words of try two"


def test_a_new_log_of_the_same_size_and_time_is_read_again(tmp_path: Path) -> None:
    """A file's time moves in ticks of the kernel's clock: the next try's log can have the
    size and the time of the one before, and is still another file."""
    run = plan_runs(tmp_path, 1)[0]
    cache = OutputCache()
    launched(run, "words of try one\n")
    log = run.launch.paths.output_log
    before = log.stat()
    assert agent_row(run, cache)["last_line"] == "words of try one"
    run.to(AgentState.FAILED)
    archive_attempt(run.launch, run.launch.attempt, ".rerun1")
    run.renew()
    launched(run, "words of try two\n")
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert log.stat().st_size == before.st_size
    assert agent_row(run, cache)["last_line"] == "words of try two"
