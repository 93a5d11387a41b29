"""The closure briefings: a literal agent passes with the passing lines and fails with the
failing example's code; every role's prompt names its report; docs/markers.md says the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from wave_orchestrator.agents.briefings import (
    GUIDES,
    PreviousAttempt,
    closure_instructions,
    retry_section,
)
from wave_orchestrator.closure.gates import AgentResult, judge_stage
from wave_orchestrator.closure.markers import parse_markers
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "markers.md"


def closure_agent(role: str, owns: tuple[str, ...] = ("reviews/r.md",)) -> AgentDef:
    executor = ExecutorSpec(id="local")
    return AgentDef(
        id="R", title="reviewer", role=role, executor=executor, prompt="review", owns=owns
    )


def judged(tmp_path: Path, role: str, lines: tuple[str, ...], verdict: str = "PASS") -> list[str]:
    agent = closure_agent(role)
    report = tmp_path / "reviews" / "r.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(f"Checked.\nVerdict: {verdict}\n")
    result = AgentResult(agent, "success", 0, parse_markers("\n".join(lines) + "\n"), tmp_path)
    return [f.code for f in judge_stage(role, [result]).failures]


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_the_passing_lines_pass_the_gate(tmp_path: Path, role: str) -> None:
    assert judged(tmp_path, role, GUIDES[role].passing) == []


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_the_failing_example_fails_with_its_code(tmp_path: Path, role: str) -> None:
    codes = judged(tmp_path, role, GUIDES[role].failing, verdict="BLOCKED")
    assert codes[:1] == [GUIDES[role].failing_code]


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_the_prompt_lists_the_lines_report_and_meanings(role: str) -> None:
    text = closure_instructions(closure_agent(role))
    guide = GUIDES[role]
    assert "1. Write your report to: reviews/r.md" in text
    for line in (*guide.passing, *guide.failing):
        assert f"\n{line}\n" in text  # each on a line of its own, verbatim
    assert guide.failing_code in text
    assert "<" not in "".join(guide.passing)  # no template to restate


def test_a_required_report_the_agent_cannot_write_is_said_plainly() -> None:
    text = closure_instructions(closure_agent("cont-qa", owns=("reviews/",)))
    assert "This gate needs a report file, and you own none" in text


@pytest.mark.parametrize("role", sorted(GUIDES))
def test_docs_show_the_same_lines_and_codes(role: str) -> None:
    docs = DOCS.read_text()
    guide = GUIDES[role]
    assert f"### {role}\n" in docs
    for line in (*guide.passing, *guide.failing):
        assert f"\n{line}\n" in docs, line
    assert f"`{guide.failing_code}`" in docs


def test_retry_section_carries_the_previous_attempt_and_the_gate() -> None:
    previous = PreviousAttempt("A2", 1, "failed", 3, "", ("compiling", "error: no such table"))
    text = retry_section(2, previous, ["The cont-qa gate failed with x: y"], "rerun A2")
    assert text.splitlines() == [
        "## why you are running again",
        "This is attempt 2 of this wave.",
        "Your attempt 1 ended: status failed, exit code 3.",
        "The last lines of your output then:",
        "    compiling",
        "    error: no such table",
        "The cont-qa gate failed with x: y",
        "Chosen for this attempt: rerun A2",
        "Fix what is described above before anything else, then finish your task.",
    ]
