"""What an execution summary says of how an attempt ended and of the files it left."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.runtime.wave.summaries import artifact, hint
from wave_orchestrator.state.layout import AgentPaths
from wave_orchestrator.state.lifecycle import AgentState


def run(tmp_path: Path, state: AgentState, code: int | None, output: str = "") -> Any:
    paths = AgentPaths(tmp_path)
    paths.output_log.write_text(output)
    paths.status.write_text(json.dumps({"status": state.outcome, "code": code}))
    return SimpleNamespace(state=state, code=code, launch=SimpleNamespace(paths=paths))


def test_the_hint_reads_the_turn_limit_from_the_clis_own_words(tmp_path: Path) -> None:
    assert "raise budget_turns" in hint(
        run(tmp_path, AgentState.FAILED, 1, "Error: Reached max turns (2)")
    )
    assert (
        hint(run(tmp_path, AgentState.FAILED, 3, "boom")) == "it exited 3: see the end of its log"
    )
    assert hint(run(tmp_path, AgentState.COMPLETED, 0)) is None
    assert "ran past its budget" in hint(run(tmp_path, AgentState.TIMEOUT, None))


def test_an_artifact_behind_a_link_out_of_the_repository_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to("/etc/passwd")
    (tmp_path / "inside.txt").symlink_to("real.txt")
    assert artifact(tmp_path, "real.txt")["exists"] is True
    assert artifact(tmp_path, "gone.txt") == {
        "path": "gone.txt",
        "exists": False,
        "modified_at": None,
    }
    assert artifact(tmp_path, "link.txt")["exists"] is False  # as the gate sees it: not its file
    assert artifact(tmp_path, "inside.txt")["exists"] is True


def test_huge_marker_lines_are_cut_in_the_summary() -> None:
    from wave_orchestrator.closure.gates import AgentResult
    from wave_orchestrator.closure.markers import parse_markers
    from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec
    from wave_orchestrator.runtime.wave.summaries import gaps_of, markers
    from wave_orchestrator.state.untrusted import TEXT_LIMIT

    agent = AgentDef(
        id="A", title="A", role="implementation", executor=ExecutorSpec(id="local"), prompt="p"
    )
    text = "[wave-gap] kind=big detail=" + "x" * 200_000 + "\n"
    result = AgentResult(agent, "success", 0, parse_markers(text), Path("/r"))
    assert len(gaps_of(result)[0]["detail"]) == TEXT_LIMIT
    assert len(markers(result)["gap"]["line"]) == TEXT_LIMIT
