"""End to end: the closure sweep in real tmux, judged from the markers agents print (SPEC 3.4, 7)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo

pytestmark = pytest.mark.e2e

LANE = """
defaults: {{executor: local, timeout_minutes: 1, max_retries_per_wave: {retries}, launch_stagger_ms: 0}}
"""

EVAL_OK = "[wave-eval] state=satisfied targets=1 benchmarks=0 regressions=0"
SEC_OK = "[wave-security] state=clear findings=0 approvals=0"
INT_OK = "[wave-integration] state=ready-for-doc-closure claims=1 conflicts=0 blockers=0"
DOC_OK = "[wave-doc-closure] state=no-change"
QA_OK = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"


def says(*lines: str, report: str | None = None, extra: str = "") -> str:
    """A local agent command (one bash string) that prints ``lines`` and writes its report."""
    parts = [extra] if extra else []
    if report:
        parts.append(
            f'mkdir -p "$(dirname {report})" && echo "report by $WAVE_AGENT_ID" > {report}'
        )
    parts += [f"echo '{line}'" for line in lines]
    return "; ".join(parts)


def wave_yaml(agents: list[tuple[str, str, str, str | None]]) -> str:
    """agents: (id, role, command, report path or None)."""
    out = ["agents:"]
    for agent_id, role, command, report in agents:
        owns = f", owns: [{report}]" if report else ""
        out.append(
            f"  - {{id: {agent_id}, role: {role}, prompt: do it{owns}, "
            f"executor: {{local: {{command: {json.dumps(command)}}}}}}}"
        )
    return "\n".join(out) + "\n"


def full_wave(**override: str) -> str:
    commands = {
        "A1": says(extra="sleep 0.2"),
        "E": says(EVAL_OK),
        "S1": says(SEC_OK, report="r/s1.md", extra="sleep 0.3"),
        "S2": says(SEC_OK, report="r/s2.md", extra="sleep 0.3"),
        "I": says(INT_OK),
        "D": says(DOC_OK),
        "QA": says(QA_OK, "[wave-verdict] pass", report="r/qa.md"),
    }
    commands.update(override)
    roles = {
        "A1": "implementation",
        "E": "cont-eval",
        "S1": "security",
        "S2": "security",
        "I": "integration",
        "D": "documentation",
        "QA": "cont-qa",
    }
    reports = {"S1": "r/s1.md", "S2": "r/s2.md", "QA": "r/qa.md"}
    # File order is deliberately not the stage order: the launcher sorts stages itself.
    order = ["QA", "D", "S1", "I", "A1", "S2", "E"]
    return wave_yaml([(a, roles[a], commands[a], reports.get(a)) for a in order])


def events(repo: Repo, *names: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] in names]


def test_all_five_closure_stages_pass_in_order(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", LANE.format(retries=0), {1: full_wave()})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    gates = [e["stage"] for e in events(tmux_repo, "gate_passed")]
    assert gates == [
        "implementation",
        "cont-eval",
        "security",
        "integration",
        "documentation",
        "cont-qa",
    ]
    seq = [
        (e["event"], e.get("agent"), e.get("stage"))
        for e in events(tmux_repo, "agent_launched", "agent_finished", "gate_passed")
    ]
    launched = [a for ev, a, _ in seq if ev == "agent_launched"]
    assert launched[:2] == ["A1", "E"] and set(launched[2:4]) == {"S1", "S2"}
    assert launched[4:] == ["I", "D", "QA"]
    # Each stage starts after the gate of the stage before has passed.
    for before, after in (
        ("implementation", "E"),
        ("cont-eval", "S1"),
        ("security", "I"),
        ("integration", "D"),
        ("documentation", "QA"),
    ):
        assert seq.index(("gate_passed", None, before)) < seq.index(("agent_launched", after, None))
    # The security reviewers ran in parallel.
    assert seq.index(("agent_launched", "S2", None)) < seq.index(("agent_finished", "S1", None))
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"
    # Closure agents are told about the wave: its agents, their results and logs.
    qa_prompt = (tmux_repo.agent_dir("main", 1, "QA") / "prompt.md").read_text()
    assert "- A1 (implementation" in qa_prompt and ": success, exit 0" in qa_prompt
    assert str(tmux_repo.agent_dir("main", 1, "A1") / "output.log") in qa_prompt


def test_blocked_security_review_stops_the_sweep_before_integration(tmux_repo: Repo) -> None:
    blocked = says(
        "[wave-security] state=blocked findings=2 approvals=0 detail=secrets in logs",
        report="r/s2.md",
    )
    tmux_repo.lane("main", LANE.format(retries=0), {1: full_wave(S2=blocked)})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    failed = events(tmux_repo, "gate_failed")
    assert [(e["stage"], e["status"]) for e in failed] == [("security", "security-blocked")]
    assert "secrets in logs" in failed[0]["detail"]
    launched = {e["agent"] for e in events(tmux_repo, "agent_launched")}
    assert launched == {"A1", "E", "S1", "S2"}  # integration, documentation, cont-qa never ran
    assert "security gate: security-blocked (S2: secrets in logs)" in result.stderr
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "failed"


def test_integration_needs_more_work_once_then_passes_without_rerunning_implementation(
    tmux_repo: Repo,
) -> None:
    flaky = (
        'if [ "$WAVE_ATTEMPT" = 1 ]; then '
        "echo '[wave-integration] state=needs-more-work claims=1 conflicts=1 blockers=0 detail=merge conflict'; "
        f"else echo '{INT_OK}'; fi"
    )
    tmux_repo.lane("main", LANE.format(retries=1), {1: full_wave(I=flaky)})
    result = tmux_repo.wave("launch", "--lane", "main", "--json")
    assert result.returncode == 0, result.stderr
    # --json lists every run that ended, each once, attempt by attempt (S1 and S2 run together)
    runs = json.loads(result.stdout)["waves"][0]["runs"]
    ran = [(r["agent"], r["attempt"]) for r in runs]
    assert ran[:1] + sorted(ran[1:4]) + ran[4:] == [
        ("A1", 1),
        ("E", 1),
        ("S1", 1),
        ("S2", 1),
        ("I", 1),
        ("I", 2),
        ("D", 2),
        ("QA", 2),
    ]
    assert {(r["outcome"], r["executor"], r["reused"]) for r in runs} == {
        ("success", "local", False)
    }
    assert all(r["duration_ms"] > 0 and r["code"] == 0 for r in runs)
    launches: dict[str, list[int]] = {}
    for e in events(tmux_repo, "agent_launched"):
        launches.setdefault(e["agent"], []).append(e["attempt"])
    assert launches["A1"] == [1] and launches["E"] == [1]
    assert launches["S1"] == [1] and launches["S2"] == [1]
    assert launches["I"] == [1, 2] and launches["D"] == [2] and launches["QA"] == [2]
    retry = events(tmux_repo, "wave_retry")
    assert [(e["attempt"], e["stage"], e["agents"]) for e in retry] == [(2, "integration", [])]
    failed = events(tmux_repo, "gate_failed")
    assert [(e["stage"], e["status"]) for e in failed] == [
        ("integration", "integration-needs-more-work")
    ]
    assert "merge conflict" in (tmux_repo.agent_dir("main", 1, "I") / "attempt-1.log").read_text()
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"


def test_cont_qa_without_wave_gate_fails_the_wave(tmux_repo: Repo) -> None:
    silent_qa = says("[wave-verdict] pass", "all looks fine to me", report="r/qa.md")
    tmux_repo.lane("main", LANE.format(retries=0), {1: full_wave(QA=silent_qa)})
    result = tmux_repo.wave("launch", "--lane", "main", "--json")
    assert result.returncode == 1
    failed = events(tmux_repo, "gate_failed")
    assert [(e["stage"], e["status"]) for e in failed] == [("cont-qa", "missing-wave-gate")]
    assert "cont-qa gate: missing-wave-gate" in result.stderr
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "failed"
    qa = tmux_repo.status("main", 1, "QA")
    assert qa["code"] == 0  # the agent itself succeeded: the gate is what failed


def test_markers_of_earlier_tries_do_not_count(tmux_repo: Repo) -> None:
    # Try 1 prints a passing verdict, then hits a rate limit; try 2 prints no gate marker.
    qa = (
        "mkdir -p r && echo report > r/qa.md; "
        "if [ ! -e tried ]; then touch tried; "
        f"echo '{QA_OK}'; echo '[wave-verdict] pass'; echo '429 Too Many Requests'; exit 1; fi; "
        "echo '[wave-verdict] pass'"
    )
    lane = """
defaults:
  executor: local
  timeout_minutes: 1
  max_retries_per_wave: 0
  launch_stagger_ms: 0
  rate_limit: {base_delay_seconds: 0.1, max_delay_seconds: 0.1, jitter_seconds: 0}
"""
    tmux_repo.lane("main", lane, {1: full_wave(QA=qa)})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 1
    assert tmux_repo.status("main", 1, "QA")["tries"] == 2
    failed = events(tmux_repo, "gate_failed")
    assert [(e["stage"], e["status"]) for e in failed] == [("cont-qa", "missing-wave-gate")]
