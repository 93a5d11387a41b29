"""How a launch's end is told: the exit code, the failure text on the terminal, the documents
a person's notification sinks get, and ``--json``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.closure.gates import GateResult
from wave_orchestrator.runtime.launch.outcome import (
    LaunchResult,
    failure_text,
    lane_done,
    wave_ended,
)
from wave_orchestrator.runtime.wave.context import WaveOutcome
from wave_orchestrator.state.lifecycle import AgentState


def run(repo: Path, agent: str, state: AgentState, code: int | None, detail: str = "") -> Any:
    log = repo / ".wave" / agent / "output.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("its output\n")
    paths = SimpleNamespace(output_log=log)
    return SimpleNamespace(
        id=agent, state=state, code=code, detail=detail, launch=SimpleNamespace(paths=paths)
    )


def failed_wave(repo: Path, **extra: Any) -> WaveOutcome:
    gate = GateResult("integration")
    gate.fail("integration-conflict", "B and C changed api.py", "B")
    runs = [run(repo, "A", AgentState.FAILED, 2, "tests failed")]
    return WaveOutcome(3, "failed", 2, failures=runs, gate=gate, **extra)


def test_the_failure_text_names_the_gate_and_each_failed_agent_with_its_log(
    tmp_path: Path,
) -> None:
    text = failure_text(failed_wave(tmp_path), tmp_path)
    assert text.splitlines() == [
        "wave 3 failed after 2 attempt(s):",
        "  - integration gate: integration-conflict (B: B and C changed api.py)",
        "  - A: failed (tests failed), exit 2, log: .wave/A/output.log",
    ]
    blocked = failure_text(failed_wave(tmp_path, blocked=True), tmp_path)
    assert blocked.startswith("wave 3 failed after 2 attempt(s) (blocked: nothing safe to retry):")


def test_the_exit_code_says_how_the_launch_ended(tmp_path: Path) -> None:
    interrupted = LaunchResult("main", [failed_wave(tmp_path)])
    interrupted.conclude(15, tmp_path)
    assert interrupted.code == 143 and "signal 15" in interrupted.message
    blocked = LaunchResult("main", [failed_wave(tmp_path, blocked=True)])
    blocked.conclude(None, tmp_path)
    assert blocked.code == 4 and blocked.message.startswith("wave 3 failed")
    failed = LaunchResult("main", [failed_wave(tmp_path)])
    failed.conclude(None, tmp_path)
    assert failed.code == 1
    done = LaunchResult("main", [WaveOutcome(1, "completed", 1)])
    done.conclude(None, tmp_path)
    assert (done.code, done.message) == (0, "")


def test_a_person_is_told_how_each_wave_ended_but_not_of_one_they_stopped(
    tmp_path: Path,
) -> None:
    assert wave_ended("main", WaveOutcome(1, "cancelled", 1), tmp_path) is None
    completed = wave_ended("main", WaveOutcome(1, "completed", 1), tmp_path)
    assert completed is not None and completed["kind"] == "wave-completed"
    failed = wave_ended("main", failed_wave(tmp_path), tmp_path)
    assert failed is not None
    assert (failed["kind"], failed["wave"], failed["agent"]) == ("wave-failed", 3, "A")
    assert "integration-conflict" in failed["reason"] and "A: failed" in failed["reason"]
    note = "blocked: question q-1 from A got no answer within 5 minute(s)"
    blocked = wave_ended("main", failed_wave(tmp_path, blocked=True, note=note), tmp_path)
    assert blocked is not None
    assert (blocked["kind"], blocked["reason"]) == ("wave-blocked", note)
    assert lane_done("main", 4)["kind"] == "lane-done"


def test_the_json_result_lists_failures_only_for_a_wave_that_did_not_complete(
    tmp_path: Path,
) -> None:
    result = LaunchResult("main", [WaveOutcome(1, "completed", 1), failed_wave(tmp_path)])
    waves = result.to_json()["waves"]
    assert (waves[0]["failures"], waves[0]["gate"]) == ([], None)
    assert [f["agent"] for f in waves[1]["failures"]] == ["A"]
    assert waves[1]["gate"]["stage"] == "integration"
    assert waves[1]["failures"][0]["log"].endswith("A/output.log")
