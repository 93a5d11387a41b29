"""The spend limit blocks the wave (exit 4) whether or not the lane retries waves: with
``max_retries_per_wave: 0`` there is no retry to plan, and the wave used to end *failed*."""

from __future__ import annotations

import json

import pytest
from helpers import Repo
from test_governor_e2e import events, setup

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("retries", [0, 1])
def test_the_spend_limit_blocks_the_wave_with_or_without_wave_retries(
    tmux_repo: Repo, retries: int
) -> None:
    ids = ["S1", "S2", "S3"]
    extra = (
        "executors: {claude: {output_format: json}}\nspend_limit_usd: 1\n"
        "notify: {command: [sh, -c, 'cat >> told.jsonl; echo >> told.jsonl']}\n"
    )
    agents = [f"{{id: {i}, prompt: p}}" for i in ids]
    setup(tmux_repo, agents, retries=retries, caps=", max_running: {claude: 1}", extra=extra)
    for agent in ids:
        (tmux_repo.root / "cost" / agent).write_text("0.6")
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=90)
    assert done.returncode == 4, done.stderr
    assert "spend limit $1.00 reached ($1.20 spent)" in done.stderr
    assert not (tmux_repo.root / "runs" / "S3").exists()  # never started
    (ended,) = events(tmux_repo, "wave_failed")
    assert ended["reason"].startswith("spend limit $1.00 reached ($1.20 spent)")
    told = [json.loads(x) for x in (tmux_repo.root / "told.jsonl").read_text().split("\n") if x]
    assert [t["kind"] for t in told][-1] == "wave-blocked"
    assert "wave 1 failed after 1 attempt(s) (spend limit $1.00 reached" in done.stderr
