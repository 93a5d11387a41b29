"""The infra gate over infra and deploy signals: one test per status code."""

from __future__ import annotations

from pathlib import Path

import pytest

from wave_orchestrator.closure.gates import AgentResult
from wave_orchestrator.closure.markers import parse_markers
from wave_orchestrator.closure.signals import INFRA_PASSING, has_signals, judge_infra
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec


def result(agent_id: str, *lines: str, role: str = "infra") -> AgentResult:
    agent = AgentDef(
        id=agent_id, title=agent_id, role=role, executor=ExecutorSpec(id="local"), prompt="p"
    )
    return AgentResult(agent, "success", 0, parse_markers("\n".join(lines) + "\n"), Path("/r"))


@pytest.mark.parametrize("state", INFRA_PASSING)
def test_every_passing_infra_state_passes(state: str) -> None:
    gate = judge_infra([result("A", f"[infra-status] kind=dns target=api state={state}")])
    assert gate.passed, gate.failures


@pytest.mark.parametrize("state", ["drift", "blocked", "failed", "checking"])
def test_any_other_state_fails_with_infra_state_naming_the_agent(state: str) -> None:
    line = f"[infra-status] kind=dns target=api.example.com state={state} detail=A points elsewhere"
    gate = judge_infra([result("A", line)])
    assert [(f.code, f.agent) for f in gate.failures] == [(f"infra-{state}", "A")]
    assert gate.failures[0].detail == (
        f"Infra signal dns on api.example.com ended in state {state} (A points elsewhere)."
    )


def test_the_last_signal_of_an_agent_counts_and_the_wave_prefix_is_read_too() -> None:
    fixed = result(
        "A",
        "[infra-status] kind=dns target=api state=drift",
        "[wave-infra-status] kind=dns target=api state=conformant",
    )
    broke = result(
        "B",
        "[infra-status] kind=tls target=web state=conformant",
        "[infra-status] kind=tls target=web state=Expired",
    )
    gate = judge_infra([fixed, broke])
    assert [(f.code, f.agent) for f in gate.failures] == [("infra-expired", "B")]


def test_a_failed_deploy_fails_and_the_other_deploy_states_do_not() -> None:
    ok = [
        result(f"D{i}", f"[deploy-status] service=api state={s}")
        for i, s in enumerate(("deploying", "healthy", "rolledover"))
    ]
    assert judge_infra(ok).passed
    gate = judge_infra([result("D", "[deploy-status] service=api state=failed detail=crashloop")])
    assert [(f.code, f.detail) for f in gate.failures] == [
        ("deploy-failed", "Deploy of api failed (crashloop).")
    ]


def test_an_unreadable_signal_fails_as_an_invalid_marker() -> None:
    gate = judge_infra(
        [
            result("A", "[infra-status] kind=dns state=drift"),
            result("D", "[deploy-status] service=api state=sideways"),
        ]
    )
    assert [f.code for f in gate.failures] == [
        "invalid-infra-status-marker",
        "invalid-deploy-status-marker",
    ]


def test_a_state_that_cannot_be_a_status_code_is_named_unknown() -> None:
    gate = judge_infra([result("A", "[infra-status] kind=dns target=api state=9$(reboot)")])
    assert [f.code for f in gate.failures] == ["infra-unknown"]


def test_a_wave_without_signals_has_no_infra_gate() -> None:
    assert not has_signals([result("A", "[wave-phase] coding", "done")])
    assert has_signals(
        [result("A", "done"), result("D", "[deploy-status] service=x state=healthy")]
    )
