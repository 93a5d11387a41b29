"""A ``local`` agent (a person's script, often wrapping a real CLI) that ends on a usage limit
is parked ``limited`` under an account of its own and launched again after the reset, like
the CLIs' agents: the wave does not end on it."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

pytestmark = pytest.mark.e2e

# Its first run prints claude's limit text (what a wrapped claude ends on) and fails; the
# next one succeeds. The run counter lives outside the agent's folder, which a relaunch keeps.
SCRIPT = """\
n=$(cat "$WAVE_REPO/runs-$WAVE_AGENT_ID" 2>/dev/null || echo 0)
echo $((n + 1)) > "$WAVE_REPO/runs-$WAVE_AGENT_ID"
date +%s.%N >> "$WAVE_REPO/starts-$WAVE_AGENT_ID"
if [[ $n == 0 ]]; then
  echo "working on it"
  echo "You've hit your session limit · resets in $1"
  exit 1
fi
echo done > "$WAVE_AGENT_ID.txt"
"""


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def named(repo: Repo, event: str) -> list[dict]:
    return [e for e in repo.events("main") if e["event"] == event]


def test_a_local_agent_on_a_usage_limit_is_parked_then_relaunched_after_the_reset(
    tmux_repo: Repo,
) -> None:
    (tmux_repo.root / "agent.sh").write_text(SCRIPT)
    lane = local_lane() + "usage_limit: {margin_seconds: 1}\naccounts:\n"
    lane += "  wrapped: {executor: local, env: {WRAPPED_HOME: /tmp/wave-test-wrapped}}\n"
    agents = local_agent("L", 'bash "$WAVE_REPO/agent.sh" 4s')
    agents += local_agent("N", 'bash "$WAVE_REPO/agent.sh" 4s', account="wrapped")
    tmux_repo.lane("main", lane, {1: "agents:\n" + agents})

    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")

    def shown() -> dict:
        got = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
        return {a["id"]: a["state"] for a in got["waves"][0]["agents"]} if got["waves"] else {}

    wait_for(lambda: len(named(tmux_repo, "agent_limited")) == 2, 30, what="both parked")
    wait_for(lambda: shown().get("L") == "limited", 10, what="status to show L limited")
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err

    limited = {e["agent"]: e for e in named(tmux_repo, "agent_limited")}
    assert limited["L"]["account"] == "local"  # an account of their own
    assert limited["N"]["account"] == "wrapped"  # the agent's account, when it names one
    assert "resets in 4s" in limited["L"]["detail"]
    for agent in ("L", "N"):
        began = [float(x) for x in (tmux_repo.root / f"starts-{agent}").read_text().split()]
        assert len(began) == 2, began  # launched again, once
        assert began[1] >= at(limited[agent]["until"]), agent  # not before the reset
        assert (tmux_repo.root / f"{agent}.txt").read_text() == "done\n"
    finished = {e["agent"]: e["status"] for e in named(tmux_repo, "agent_finished")}
    assert finished == {"L": "success", "N": "success"}
    wave = tmux_repo.run_state("main")["waves"]["1"]
    assert wave["state"] == "completed" and wave["attempts"] == 1  # no wave retry used
