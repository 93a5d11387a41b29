"""What an execution summary says of how an attempt ended and of the files it left."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.runtime.summaries import artifact, hint
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


def test_an_artifact_behind_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to("/nonexistent/target")
    assert artifact(tmp_path, "real.txt")["exists"] is True
    assert artifact(tmp_path, "gone.txt") == {"path": "gone.txt", "exists": False,
                                               "modified_at": None}  # fmt: skip
    assert artifact(tmp_path, "link.txt")["exists"] is True  # the link itself, never its target
