"""The integration summary through a real launch: built from what the implementation and
security agents printed, given to the integration agent in its prompt, and named in the
integration gate's verdict (the event, the agent's summary) when it passes over open items."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

QA = (
    "echo 'Verdict: PASS' > qa.md; echo '[wave-gate] architecture=pass integration=pass "
    "durability=pass live=pass docs=pass'; echo '[wave-verdict] pass'"
)
A1 = (
    "echo ok > A1.txt; echo '[wave-gap] kind=migration detail=old rows are not backfilled'; "
    "printf '[deploy-status] service=api state=rolledover detail=\\033[31mrolled back\\033[0m\\n'"
)
S1 = (
    "echo found > sec.md; "
    "echo '[wave-security] state=concerns findings=2 approvals=0 detail=tokens are logged'"
)
I1 = "echo '[wave-integration] state=ready-for-doc-closure claims=2 conflicts=0 blockers=0'"


def test_the_integration_agent_reads_the_summary_and_its_gate_names_the_open_items(
    tmux_repo: Repo,
) -> None:
    body = (
        "agents:\n"
        + local_agent("A1", A1)
        + local_agent("S1", S1, role="security", owns=["sec.md"])
        + local_agent("I1", I1, role="integration", owns=["int.md"])
        + local_agent("QA", QA, role="cont-qa", owns=["qa.md"])
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    prompt = (tmux_repo.agent_dir("main", 1, "I1") / "prompt.md").read_text()
    assert "## integration summary\n" in prompt
    assert "  - A1: gap migration: old rows are not backfilled\n" in prompt
    assert "  - A1: deploy api rolledover: rolled back\n" in prompt  # no escape reaches it
    assert "  - S1: concerns, 2 findings, 0 needing approval: tokens are logged\n" in prompt
    assert "changed interfaces: none\n" in prompt
    qa_prompt = (tmux_repo.agent_dir("main", 1, "QA") / "prompt.md").read_text()
    assert "## integration summary" not in qa_prompt  # the integration agent's alone
    passed = [
        e
        for e in tmux_repo.events("main")
        if e["event"] == "gate_passed" and e.get("stage") == "integration"
    ]
    said = "I1: ready for doc closure with open items of the integration summary: "
    want = said + "1 proof gap (A1); 2 security findings (S1)"
    assert passed and passed[-1]["warnings"] == [want]
    summary = json.loads((tmux_repo.agent_dir("main", 1, "I1") / "summary.json").read_text())
    assert summary["verdict"]["passed"] is True and summary["verdict"]["warnings"] == [want]
    shown = tmux_repo.wave("summary", "--lane", "main", "I1")
    assert f"    warning: {want}" in shown.stdout
