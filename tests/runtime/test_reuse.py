"""Which agents a new run of a wave reuses, what a fingerprint holds, what is carried over,
and the retry plan a resumed launcher restores (issue 24 §1)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from wave_orchestrator.definitions.model import (
    AgentDef,
    ExecutorSpec,
    ExitContract,
    PlacementSettings,
    ProofArtifact,
)
from wave_orchestrator.runtime.wave.retry import RetryPlan
from wave_orchestrator.runtime.wave.reuse import choose_reused, fingerprint, succeeded_with
from wave_orchestrator.state.layout import AgentPaths
from wave_orchestrator.state.ledger import AgentEntry, LedgerView
from wave_orchestrator.state.run_state import RunState


def agent(agent_id: str, **extra: Any) -> AgentDef:
    fields: dict[str, Any] = {
        "id": agent_id,
        "title": agent_id,
        "role": "implementation",
        "executor": ExecutorSpec(id="codex", model="m1"),
        "prompt": "p",
    }
    fields.update(extra)
    return AgentDef(**fields)


def finished(
    folder: Path,
    a: AgentDef,
    state: str = "success",
    attempt: int = 1,
    recorded_attempt: int | None = None,
    digest: str | None = None,
) -> AgentPaths:
    """An earlier run's folder: a status of ``state`` and a launch record."""
    paths = AgentPaths(folder / a.id)
    paths.dir.mkdir(parents=True)
    code = 0 if state == "success" else 1
    paths.status.write_text(json.dumps({"status": state, "code": code, "attempt": attempt}))
    record = {
        "attempt": recorded_attempt or attempt,
        "executor": "codex",
        "fingerprint": digest if digest is not None else fingerprint(a, "codex"),
    }
    paths.launch_record.write_text(json.dumps(record))
    return paths


def test_a_fingerprint_an_earlier_release_recorded_still_matches() -> None:
    """Work finished before an upgrade is reused after it: the digest of a definition does not
    depend on how the records holding it are built (the literal was recorded by an earlier release)."""
    executor = ExecutorSpec(
        id="codex",
        model="m1",
        env={"K": "v"},
        settings={"codex": {"sandbox": "workspace-write"}},
        fallbacks=("claude",),
    )
    a = agent(
        "A",
        owns=("src/a.py",),
        depends_on=("B",),
        exit_contract=ExitContract(),
        proof_artifacts=(ProofArtifact("docs/a.md", "cont-qa"),),
        placement=PlacementSettings(cpus=2),
        executor=executor,
    )
    recorded = "09dc8a711faa84882c0a7fa630cc0f4eae2f3ea88a61b62370f8c427693fbdaa"
    assert fingerprint(a, "codex", base="0" * 40) == recorded


def test_a_fingerprint_changes_with_what_shapes_the_work_only() -> None:
    base = fingerprint(agent("A"), "codex")
    assert fingerprint(agent("A"), "codex") == base
    other = ExecutorSpec(id="codex", model="m2")
    changed = [
        agent("A", prompt="p, differently"),
        agent("A", executor=other),
        agent("A", owns=("x.py",)),
        agent("A", deliverables=("x.py",)),
        agent("A", role="integration"),
    ]
    assert all(fingerprint(a, "codex") != base for a in changed)
    assert fingerprint(agent("A"), "claude") != base  # a fallback executor ran it
    assert fingerprint(agent("A"), "codex", base="0" * 40) != base  # worktree base moved
    secret = agent("A", executor=ExecutorSpec(id="codex", model="m1", env={"K": "sk-123"}))
    assert "sk-123" not in fingerprint(secret, "codex")


def test_only_a_success_of_the_same_fingerprint_and_attempt_counts(tmp_path: Path) -> None:
    a = agent("A")
    assert succeeded_with(finished(tmp_path / "1", a), fingerprint(a, "codex"))
    assert not succeeded_with(finished(tmp_path / "2", a, "failed"), fingerprint(a, "codex"))
    assert not succeeded_with(finished(tmp_path / "3", a, digest="f" * 64), fingerprint(a, "codex"))
    stale = finished(tmp_path / "4", a, attempt=2, recorded_attempt=1)  # record of attempt 1
    assert not succeeded_with(stale, fingerprint(a, "codex"))
    torn = finished(tmp_path / "5", a)
    torn.status.write_text('{"status": "succ')
    assert not succeeded_with(torn, fingerprint(a, "codex"))
    odd = finished(tmp_path / "6", a, digest="not a digest")
    assert not succeeded_with(odd, fingerprint(a, "codex"))


def test_rejected_failed_and_their_dependents_run_again(tmp_path: Path) -> None:
    agents = [
        agent("A"),
        agent("B"),
        agent("C", depends_on=("B",)),
        agent("D"),
        agent("E", depends_on=("C",)),
        agent("F"),
    ]
    earlier = {
        a.id: finished(tmp_path, a, "failed" if a.id == "B" else "success")
        for a in agents
        if a.id != "F"
    }
    prints = {a.id: fingerprint(a, "codex") for a in agents}
    ledger = seen({a: ("failed" if a == "B" else "completed", prints[a]) for a in "ABCDE"})
    assert choose_reused(agents, prints, earlier, ledger, 1) == ["A", "D"]  # F never ran
    assert choose_reused(agents, prints, earlier, ledger, 1, rejected=["A"]) == ["D"]


def seen(ends: dict[str, tuple[str, str]], attempt: int = 1) -> LedgerView:
    """A ledger in which the launcher saw each agent of wave 1 end (outcome, fingerprint)."""
    view = LedgerView()
    for agent_id, (outcome, digest) in ends.items():
        view.agents[(1, agent_id)] = AgentEntry(attempt, outcome, digest, 0.0)
    return view


def test_files_alone_never_decide_reuse(tmp_path: Path) -> None:
    """A success its files claim is reused only where the launcher saw it: a status.json
    rewritten to success, files written for an agent never run, a ledger that says failed,
    an older lane with no ledger at all: each runs again."""
    agents = [agent("A"), agent("B"), agent("C"), agent("D")]
    earlier = {a.id: finished(tmp_path, a) for a in agents}  # every file says success
    prints = {a.id: fingerprint(a, "codex") for a in agents}
    ledger = seen(
        {"A": ("completed", prints["A"]), "B": ("failed", prints["B"]), "C": ("launched", "")}
    )
    assert choose_reused(agents, prints, earlier, ledger, 1) == ["A"]  # D: never launched
    assert choose_reused(agents, prints, earlier, None, 1) == []
    other = seen({a.id: ("completed", "f" * 64) for a in agents})  # launched with other work
    assert choose_reused(agents, prints, earlier, other, 1) == []
    earlier["A"].status.write_text(json.dumps({"status": "failed", "code": 1, "attempt": 1}))
    assert choose_reused(agents, prints, earlier, ledger, 1) == []  # files no longer agree


def test_carry_over_copies_plain_files_and_marks_the_record(tmp_path: Path) -> None:
    from wave_orchestrator.runtime.wave.reuse import carry_over
    from wave_orchestrator.state.layout import StateLayout

    layout = StateLayout(tmp_path / "state", "main")
    earlier = layout.wave_dir(1).with_name("wave-1.S")
    a = agent("A")
    paths = finished(earlier / "agents", a)
    paths.output_log.write_text("did A\n")
    (paths.dir / "link").symlink_to("/etc/passwd")
    os.mkfifo(paths.dir / "pipe")
    assert carry_over(layout, 1, "S", ["A"]) == ["A"]
    target = layout.agent(1, "A")
    assert target.output_log.read_text() == "did A\n"
    assert not (target.dir / "link").exists() and not (target.dir / "pipe").exists()
    assert json.loads(target.launch_record.read_text())["reused"] is True


def test_the_retry_plan_survives_run_state_and_is_checked_on_the_way_back(
    tmp_path: Path,
) -> None:
    impl = (agent("A"), agent("B"))
    wave: Any = SimpleNamespace(implementation_agents=impl, closure_stages=lambda: [1, 2])
    plan = RetryPlan([impl[1]], 1, "integration gate failed", {"B": "why you run again"})
    state = RunState(tmp_path / "run-state.json", "main")
    state.set_attempts(1, 2, plan.reason, plan.saved())
    again = RunState(tmp_path / "run-state.json", "main").wave(1)
    restored = RetryPlan.restored(again["plan"], wave)
    assert restored == plan
    for odd in (
        {"agents": ["Z"], "first_stage": 0},
        {"agents": ["A"], "first_stage": 9},
        {"agents": "A", "first_stage": 0},
        {"agents": ["A"], "first_stage": True},
        "plan",
    ):
        assert RetryPlan.restored(odd, wave) is None
    kept = RetryPlan.restored(
        {"agents": ["A"], "first_stage": 0, "notes": {"Z": "x", "A": 1}}, wave
    )
    assert kept is not None and kept.notes == {}


def test_a_new_optional_setting_left_empty_keeps_the_fingerprint() -> None:
    """An agent that does not use a setting a newer wave added digests as before."""
    from wave_orchestrator.runtime.wave.reuse import _plain

    older = {"id": "A", "prompt": "p", "executor": {"id": "codex", "model": "m1"}}
    newer = {**older, "components": (), "proof_artifacts": [], "notes": None, "flag": False}
    assert _plain(newer) == _plain(older)
    assert _plain({**older, "flag": True}) != _plain(older)
    assert _plain({**older, "cpus": 0}) != _plain(older)  # a number is never empty


def test_an_agent_that_cannot_be_carried_over_runs_again(tmp_path: Path) -> None:
    from wave_orchestrator.runtime.wave.reuse import carry_over
    from wave_orchestrator.state.layout import StateLayout

    layout = StateLayout(tmp_path / "state", "main")
    earlier = layout.wave_dir(1).with_name("wave-1.S")
    finished(earlier / "agents", agent("A"))
    finished(earlier / "agents", agent("B"))
    blocked = layout.agent(1, "B").dir
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where B's folder goes")  # the copy fails
    assert carry_over(layout, 1, "S", ["A", "B"]) == ["A"]
