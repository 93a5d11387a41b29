"""The spend limit reached in a wave's last attempt (no retry left) blocks the wave (exit 4)
with the limit as its reason: the wave did not fail, it was stopped before its agents ran."""

from __future__ import annotations

import pytest
from helpers import Repo
from test_governor_e2e import events, say, setup

pytestmark = pytest.mark.e2e


def test_the_spend_limit_in_the_last_attempt_blocks_the_wave(tmux_repo: Repo) -> None:
    ids = ["S1", "S2", "S3"]
    extra = "executors: {claude: {output_format: json}}\nspend_limit_usd: 1\n"
    agents = [f"{{id: {i}, prompt: p}}" for i in ids]
    setup(tmux_repo, agents, retries=1, caps=", max_running: {claude: 1}", extra=extra)
    # Attempt 1: S1 and S2 fail on their own (no cost), S3 succeeds for $0.10. Attempt 2, the
    # last, reruns S1 and S2 one at a time: the first to run spends $1.20, so the limit stops
    # the other before it starts.
    for agent in ("S1", "S2"):
        say(tmux_repo, agent, "boom: an ordinary failure")
        (tmux_repo.root / "cost" / agent).write_text("1.2")
    (tmux_repo.root / "cost" / "S3").write_text("0.1")
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard", timeout=120)
    runs = {a: (tmux_repo.root / "runs" / a).read_text().strip() for a in ids}
    assert sorted(runs.values()) == ["1", "1", "2"], runs  # one of S1, S2 never ran again
    assert done.returncode == 4, (done.returncode, done.stderr)
    assert "spend limit $1.00 reached ($1.30 spent)" in done.stderr
    assert "wave 1 failed after 2 attempt(s) (spend limit $1.00 reached" in done.stderr
    (ended,) = events(tmux_repo, "wave_failed")
    assert ended["attempts"] == 2
    assert ended["reason"].startswith("spend limit $1.00 reached ($1.30 spent)")
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "failed"
