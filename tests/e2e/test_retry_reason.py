"""End to end: a retried agent's prompt says why it runs again, the retry reruns what the failed
gate names, and `wave status` shows the reason for the current attempt (issue 9, section 3)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import Repo, local_lane

pytestmark = pytest.mark.e2e

LANE = local_lane(retries=1)
QA_PASS = (
    "echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass'; "
    "echo '[wave-verdict] pass'"
)


def on_attempt(first: str, later: str) -> str:
    """A bash command that runs ``first`` on attempt 1 and ``later`` afterwards."""
    return f'if [ "$WAVE_ATTEMPT" = 1 ]; then {first}; else {later}; fi'


def agent(agent_id: str, command: str, **extra: object) -> str:
    row = {"id": agent_id, "prompt": f"task of {agent_id}", **extra}
    row["executor"] = {"local": {"command": command}}
    return f"  - {json.dumps(row)}\n"


def write(path: str) -> str:
    return f"mkdir -p out && echo done > {path}"


def qa(first: str) -> str:
    report = "mkdir -p r && printf 'Checked.\\nVerdict: PASS\\n' > r/qa.md"
    return on_attempt(f"{report}; {first}", f"{report}; {QA_PASS}")


def prompt(repo: Repo, agent_id: str) -> str:
    return (repo.agent_dir("main", 1, agent_id) / "prompt.md").read_text()


def launches(repo: Repo) -> list[str]:
    return [e["agent"] for e in repo.events("main") if e["event"] == "agent_launched"]


def test_a_failed_agents_retry_prompt_carries_its_failing_output(tmux_repo: Repo) -> None:
    command = on_attempt("echo 'fatal: database is locked'; exit 3", "echo fixed")
    tmux_repo.lane("main", LANE, {1: "wave: 1\nagents:\n" + agent("A1", command)})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr

    text = prompt(tmux_repo, "A1")
    assert "## why you are running again" in text
    assert "This is attempt 2 of this wave." in text
    assert "Your attempt 1 ended: status failed, exit code 3" in text
    assert "    fatal: database is locked" in text
    assert "Chosen for this attempt: rerun A1, the agents that did not succeed" in text
    first = (tmux_repo.agent_dir("main", 1, "A1") / "attempt-1.log").read_text()
    assert "fatal" in first
    retry = [e for e in tmux_repo.events("main") if e["event"] == "wave_retry"]
    assert retry[0]["reason"] == "A1 failed (exit 3): rerunning A1"
    status = tmux_repo.wave("status", "--lane", "main")
    assert "why attempt 2: A1 failed (exit 3): rerunning A1" in status.stdout


def test_a_closure_gate_that_names_an_agent_reruns_it_with_the_gate_detail(
    tmux_repo: Repo,
) -> None:
    failing = (
        "echo '[wave-gate] architecture=pass integration=blocked durability=pass live=pass "
        "docs=pass agents=A2 detail=the page never calls the endpoint'; "
        "echo '[wave-verdict] blocked detail=the page never calls the endpoint'"
    )
    wave = (
        "wave: 1\nagents:\n"
        + agent("A1", write("out/a1"), owns=["out/a1"], deliverables=["out/a1"])
        + agent("A2", write("out/a2"), owns=["out/a2"], deliverables=["out/a2"])
        + agent("QA", qa(failing), role="cont-qa", owns=["r/qa.md"])
    )
    tmux_repo.lane("main", LANE, {1: wave})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert launches(tmux_repo) == ["A1", "A2", "QA", "A2", "QA"]

    text = prompt(tmux_repo, "A2")
    assert (
        "The cont-qa gate failed with gate-integration-blocked: "
        "QA: the page never calls the endpoint" in text
    )
    assert "Report: r/qa.md" in text and "Agents it names: A2" in text
    assert "rerun A2 (named by the gate), then the whole closure sweep" in text
    qa_text = prompt(tmux_repo, "QA")
    assert "    [wave-verdict] blocked detail=the page never calls the endpoint" in qa_text


def test_an_agent_id_in_the_detail_names_it(tmux_repo: Repo) -> None:
    failing = (
        "echo '[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 "
        "detail=A1 and A2 disagree; A1 must change the key format'"
    )
    wave = (
        "wave: 1\nagents:\n"
        + agent("A1", write("out/a1"), owns=["out/a1"])
        + agent("A2", write("out/a2"), owns=["out/a2"])
        + agent(
            "I",
            on_attempt(
                failing,
                "echo '[wave-integration] state=ready-for-doc-closure claims=2 "
                "conflicts=0 blockers=0'",
            ),
            role="integration",
        )
    )
    tmux_repo.lane("main", LANE, {1: wave})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    got = launches(tmux_repo)  # A1 and A2 run side by side: either may be launched first
    assert (sorted(got[:2]), got[2], sorted(got[3:5]), got[5:]) == (
        ["A1", "A2"],
        "I",
        ["A1", "A2"],
        ["I"],
    )


def test_a_gate_that_names_no_agent_reruns_its_stage_alone(tmux_repo: Repo) -> None:
    failing = (
        "echo '[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 "
        "detail=the key formats disagree'"
    )
    passing = (
        "echo '[wave-integration] state=ready-for-doc-closure claims=2 conflicts=0 blockers=0'"
    )
    wave = (
        "wave: 1\nagents:\n"
        + agent("A1", write("out/a1"), owns=["out/a1"])
        + agent("I", on_attempt(failing, passing), role="integration")
    )
    tmux_repo.lane("main", LANE, {1: wave})
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert launches(tmux_repo) == ["A1", "I", "I"]
    text = prompt(tmux_repo, "I")
    assert "Agents it names: none" in text
    assert "rerun the integration stage and the stages after it" in text
    data = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
    assert data["waves"][0]["attempt_reason"] == (
        "integration gate failed (integration-needs-more-work): rerunning the integration stage"
    )


def test_cont_qa_blocked_naming_no_one_reruns_agents_with_missing_deliverables(
    tmux_repo: Repo,
) -> None:
    blocked = "echo '[wave-verdict] blocked detail=the wave is not finished'"
    failing = (
        "echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass "
        f"docs=pass'; {blocked}"
    )
    wave = (
        "wave: 1\nagents:\n"
        + agent("A1", write("out/a1"), owns=["out/a1"], deliverables=["out/a1"])
        # A2 writes its deliverable only on its second attempt; the implementation gate is
        # satisfied by an old copy, so only cont-qa notices.
        + agent("A2", on_attempt("true", write("out/a2")), owns=["out/a2"], deliverables=["out/a2"])
        + agent("QA", qa(failing), role="cont-qa", owns=["r/qa.md"])
    )
    tmux_repo.lane("main", LANE, {1: wave})
    (tmux_repo.root / "out").mkdir()
    (tmux_repo.root / "out" / "a2").write_text("left over from last week\n")
    old = 1_000_000_000
    os.utime(tmux_repo.root / "out" / "a2", (old, old))
    result = tmux_repo.wave("launch", "--lane", "main")
    assert result.returncode == 0, result.stderr
    assert launches(tmux_repo) == ["A1", "A2", "QA", "A2", "QA"]
    assert "deliverables are missing or stale" in prompt(tmux_repo, "A2")
