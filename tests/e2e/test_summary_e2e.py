"""Proof artifacts and execution summaries through real launches (issue 24 §5)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

QA = (
    "echo 'Verdict: PASS' > qa.md; echo '[wave-gate] architecture=pass integration=pass "
    "durability=pass live=pass docs=pass'; echo '[wave-verdict] pass'"
)


def summary(repo: Repo, agent: str) -> dict:
    return json.loads((repo.agent_dir("main", 1, agent) / "summary.json").read_text())


def test_a_missing_proof_artifact_fails_the_gate_that_needs_it_and_the_summary_says_so(
    tmux_repo: Repo,
) -> None:
    proofs = ["proof/A.log", {"path": "bench/A.json", "gate": "cont-qa"}]
    body = (
        "agents:\n"
        + local_agent(
            "A",
            "mkdir -p proof; echo ok > proof/A.log; echo '[wave-phase] coding'",
            proof_artifacts=proofs,
        )
        + local_agent("QA", QA, role="cont-qa", owns=["qa.md"])
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    # proof/A.log is there for the implementation gate; bench/A.json, for cont-qa, is not.
    assert "gate passed (stage=implementation" in done.stderr
    assert "gate failed (stage=cont-qa status=missing-proof-artifact" in done.stderr
    assert "A: proof artifact bench/A.json (needed by the cont-qa gate) does not exist" in (
        done.stderr
    )
    a, qa = summary(tmux_repo, "A"), summary(tmux_repo, "QA")
    assert [(p["path"], p["exists"], p["gate"]) for p in a["proof_artifacts"]] == [
        ("proof/A.log", True, "implementation"),
        ("bench/A.json", False, "cont-qa"),
    ]
    # its own gate passed; the cont-qa gate failed on its missing artifact, and says so here
    assert a["verdict"]["gates"] == ["cont-qa", "implementation"] and not a["verdict"]["passed"]
    assert [f["code"] for f in a["verdict"]["failures"]] == ["missing-proof-artifact"]
    assert a["markers"]["phase"]["values"] == {"value": "coding"}
    assert qa["markers"]["verdict"]["line"] == "[wave-verdict] pass"
    assert qa["report"].endswith("qa.md") and qa["report_written"] is True
    shown = tmux_repo.wave("summary", "--lane", "main", "A")
    assert shown.returncode == 0, shown.stderr
    assert "  proof artifact bench/A.json (for the cont-qa gate): MISSING" in shown.stdout


def test_a_timed_out_agent_s_summary_says_why_and_what_to_change(tmux_repo: Repo) -> None:
    lane = local_lane().replace("timeout_minutes: 1", "timeout_minutes: 0.02")
    tmux_repo.lane("main", lane, {1: "agents:\n" + local_agent("slow", "sleep 30")})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    end = summary(tmux_repo, "slow")["termination"]
    assert end["reason"] == "timeout" and "raise timeout_minutes" in end["hint"]
    shown = tmux_repo.wave("summary", "--lane", "main", "slow", "--json")
    assert json.loads(shown.stdout)["status"] == "timeout"


def test_no_summary_yet_is_a_clear_error(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    done = tmux_repo.wave("summary", "--lane", "main", "A")
    assert done.returncode == 2 and "has not run" in done.stderr
