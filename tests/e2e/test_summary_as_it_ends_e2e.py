"""An agent's summary is written when it ends and again after its gate, while the attempt
still runs: `wave summary` answers for an agent that finished before the others."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane, wait_for
from test_docs_cli import cli, local

pytestmark = pytest.mark.e2e

QA = (
    "while [ ! -f go-qa ]; do sleep 0.05; done; echo 'Verdict: PASS' > qa.md; "
    "echo '[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass'; "
    "echo '[wave-verdict] pass'"
)


def summary(repo: Repo, agent: str) -> dict[str, Any] | None:
    try:
        return json.loads((repo.agent_dir("main", 1, agent) / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def test_a_finished_agent_has_its_summary_before_the_attempt_ends(tmux_repo: Repo) -> None:
    body = (
        "agents:\n"
        + local_agent("A", "echo done > A.txt; echo '[wave-phase] coding'", deliverables=["A.txt"])
        + local_agent("B", "while [ ! -f go-b ]; do sleep 0.05; done; echo done > B.txt")
        + local_agent("QA", QA, role="cont-qa", owns=["qa.md"])
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    launcher = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        # A ended, B still runs: A's summary is there, with no gate judged yet
        a = wait_for(lambda: summary(tmux_repo, "A"), 30, what="A's summary while B runs")
        assert not (tmux_repo.agent_dir("main", 1, "B") / "status.json").exists()
        assert a["status"] == "success" and a["verdict"] == {
            "gates": [],
            "passed": False,
            "failures": [],
            "warnings": [],
        }
        assert a["markers"]["phase"]["values"] == {"value": "coding"}
        shown = tmux_repo.wave("summary", "--lane", "main", "A")
        assert shown.returncode == 0, shown.stderr
        assert "agent A of wave 1, attempt 1: success" in shown.stdout
        assert "  gate (none yet): not judged" in shown.stdout
        local(cli("wave summary --lane main A"), shown.stdout, tmux_repo.root)  # docs/cli.md
        running = tmux_repo.wave("summary", "--lane", "main", "B")
        assert running.returncode == 2 and "it is written when the agent ends" in running.stderr
        (tmux_repo.root / "go-b").write_text("")
        # the implementation gate passed, QA runs: A's summary now carries that verdict
        judged = wait_for(
            lambda: (s := summary(tmux_repo, "A")) and s["verdict"]["gates"] and s,
            30,
            what="A's summary after the implementation gate",
        )
        assert judged["verdict"] == {
            "gates": ["implementation"],
            "passed": True,
            "failures": [],
            "warnings": [],
        }
        assert summary(tmux_repo, "QA") is None  # it has not ended
        assert summary(tmux_repo, "B") is not None
        (tmux_repo.root / "go-qa").write_text("")
        _out, err = launcher.communicate(timeout=60)
        assert launcher.returncode == 0, err
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    qa = summary(tmux_repo, "QA")
    assert qa is not None and qa["verdict"]["gates"] == ["cont-qa"] and qa["verdict"]["passed"]
