"""The component matrix the gates keep: the owners' met levels recorded once the
implementation gate passed, and a stage failed while a promoted component stands below its
target."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.closure.gates import AgentResult, GateResult
from wave_orchestrator.closure.markers import parse_markers
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec
from wave_orchestrator.runtime.wave.judging import (
    check_matrix,
    matrix_stage,
    read_matrix,
    record_levels,
)
from wave_orchestrator.state.layout import StateLayout


def owner(level: str, state: str) -> AgentResult:
    agent = AgentDef(
        id="A1",
        title="A1",
        role="implementation",
        executor=ExecutorSpec(id="local"),
        prompt="p",
        components=(("auth-api", "integrated"),),
    )
    said = f"[wave-component] component=auth-api level={level} state={state}\n"
    return AgentResult(agent, "success", 0, parse_markers(said), Path())


def wave(*roles: str) -> Any:
    stages = [(role, ()) for role in roles]
    return SimpleNamespace(
        number=2, components=(("auth-api", "integrated"),), closure_stages=lambda: stages
    )


def test_a_met_level_is_recorded_and_the_promoted_component_then_passes(
    tmp_path: Path,
) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    record_levels(layout, wave(), [owner("contract", "gap")])  # a gap sets nothing
    assert read_matrix(layout) == {}
    stale = GateResult("documentation")
    check_matrix(layout, wave(), stale)
    assert [f.code for f in stale.failures] == ["component-current-level-stale"]
    assert "auth-api is absent" in stale.failures[0].detail
    record_levels(layout, wave(), [owner("integrated", "met")])
    entry = read_matrix(layout)["auth-api"]
    assert (entry["level"], entry["wave"], entry["agent"]) == ("integrated", "2", "A1")
    passed = GateResult("documentation")
    check_matrix(layout, wave(), passed)
    assert passed.passed


def test_the_matrix_is_checked_after_documentation_else_after_the_last_stage() -> None:
    assert matrix_stage(wave("integration", "documentation", "cont-qa")) == "documentation"
    assert matrix_stage(wave("integration", "cont-qa")) == "cont-qa"
    assert matrix_stage(wave()) == "implementation"


def test_a_forged_matrix_entry_is_cut_and_what_is_not_text_is_left_out(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    layout.component_matrix.parent.mkdir(parents=True, exist_ok=True)
    layout.component_matrix.write_text(
        '{"components": {"auth-api": {"level": "' + "x" * 5000 + '", "wave": 3}, "b": 7}}'
    )
    assert read_matrix(layout) == {"auth-api": {"level": "x" * 200}}
