"""`wave metrics` of a real launch: exit 0 is not the work accepted (issue 23)."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e


def test_a_wave_whose_gate_failed_shows_success_but_nothing_accepted(tmux_repo: Repo) -> None:
    body = "agents:\n" + local_agent("A1", "echo done > A1.txt")
    body += local_agent("QA", "echo '[wave-verdict] fail'", role="cont-qa", owns=["qa.md"])
    lane = local_lane().replace("required_roles: []", "required_roles: [cont-qa]")
    tmux_repo.lane("main", lane, {1: body})
    launch = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert launch.returncode == 1, launch.stderr
    verdicts = [
        json.loads(line)
        for line in (tmux_repo.state("main") / "verdicts.jsonl").read_text().splitlines()
    ]
    assert [(v["wave"], len(v["judged"]), v["accepted"]) for v in verdicts] == [(1, 2, [])]
    shown = json.loads(tmux_repo.wave("metrics", "--lane", "main", "--json").stdout)
    assert '"verdict"' not in (tmux_repo.state("main") / "metrics.jsonl").read_text()
    group = shown["groups"][0]
    assert (group["runs"], group["successes"], group["judged"], group["accepted"]) == (2, 2, 2, 0)


def test_a_closure_retry_keeps_the_implementation_runs_accepted(tmux_repo: Repo) -> None:
    """The integration gate fails once and its stage alone runs again: the implementation
    agent's one run was kept by the completed wave (accepted), the first integration run
    was not."""
    body = "agents:\n" + local_agent("A1", "echo done > A1.txt")
    flip = (
        'if [ -e "$WAVE_REPO/once" ]; then s=ready-for-doc-closure; else touch "$WAVE_REPO/once"; '
        "s=needs-more-work; fi; mkdir -p r && echo x > r/int.md; "
        'echo "[wave-integration] state=$s claims=0 conflicts=0 blockers=0 detail=ok"'
    )
    body += local_agent("INT", flip, role="integration", owns=["r/int.md"])
    lane = local_lane(retries=1).replace("required_roles: []", "required_roles: [integration]")
    tmux_repo.lane("main", lane, {1: body})
    launch = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert launch.returncode == 0, launch.stderr
    group = json.loads(tmux_repo.wave("metrics", "--lane", "main", "--json").stdout)["groups"][0]
    assert (group["runs"], group["successes"], group["judged"], group["accepted"]) == (3, 3, 3, 2)
