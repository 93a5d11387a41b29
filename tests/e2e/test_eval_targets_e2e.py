"""cont-EVAL against declared targets through a real launch (issue 24 §3)."""

from __future__ import annotations

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

TARGETS = "eval_targets:\n  - p99\n  - {id: rps, benchmarks: [throughput]}\n"


def evaluator(target_ids: str, benchmark_ids: str) -> str:
    said = (
        "[wave-eval] state=satisfied targets=2 benchmarks=1 regressions=0 "
        f"target_ids={target_ids} benchmark_ids={benchmark_ids}"
    )
    return local_agent(
        "E", f"echo report > eval.md; echo '{said}'", role="cont-eval", owns=["eval.md"]
    )


def test_the_gate_holds_the_evaluator_to_the_declared_targets(tmux_repo: Repo) -> None:
    lane = local_lane() + "benchmarks: [throughput, p50]\n"
    wrong = TARGETS + "agents:\n" + local_agent("A", "true") + evaluator("p99,cost", "throughput")
    tmux_repo.lane("main", lane, {1: wrong})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    assert "status=cont-eval-target-mismatch" in done.stderr, done.stderr
    assert "(missing rps; not declared cost)" in done.stderr
    prompt = (tmux_repo.agent_dir("main", 1, "E") / "prompt.md").read_text()
    assert "target_ids= must list exactly p99,rps" in prompt
    assert "target_ids=p99,rps benchmark_ids=throughput" in prompt  # the passing line, filled in

    right = TARGETS + "agents:\n" + local_agent("A", "true") + evaluator("rps,p99", "throughput")
    tmux_repo.lane("main", lane, {1: right})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
