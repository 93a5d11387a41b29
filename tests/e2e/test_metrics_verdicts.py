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
    assert [(v["wave"], v["attempt"], v["verdict"]) for v in verdicts] == [(1, 1, "rejected")]
    shown = json.loads(tmux_repo.wave("metrics", "--lane", "main", "--json").stdout)
    assert '"verdict"' not in (tmux_repo.state("main") / "metrics.jsonl").read_text()
    group = shown["groups"][0]
    assert (group["runs"], group["successes"], group["judged"], group["accepted"]) == (2, 2, 2, 0)
