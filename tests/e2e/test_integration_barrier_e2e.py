"""The integration gate as a barrier over the coordination log (issue 24 §5)."""

from __future__ import annotations

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

READY = "echo '[wave-integration] state=ready-for-doc-closure claims=0 conflicts=0 blockers=0'"


def test_an_unresolved_claim_holds_the_integration_gate_until_it_is_resolved(
    tmux_repo: Repo,
) -> None:
    claim = "wave coord post --kind claim --summary 'owns the schema' --artifact schema.sql"
    body = (
        "agents:\n"
        + local_agent("A", claim)
        + local_agent("I", f"echo ok > integ.md; {READY}", role="integration", owns=["integ.md"])
    )
    tmux_repo.lane("main", local_lane(), {1: body})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 1
    assert "gate failed (stage=integration status=integration-unresolved-claim" in done.stderr
    assert "from A is unresolved: owns the schema" in done.stderr
    gate = tmux_repo.run_state("main")["waves"]["1"]["gate_failure"]
    assert (gate["stage"], gate["agent"]) == ("integration", "A")

    # The same wave whose agent resolves its claim when done passes.
    resolve = f"id=$({claim} --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"id\"])'); "
    resolve += 'wave coord post --id "$id" --kind claim --summary done --status resolved'
    body = body.replace(local_agent("A", claim), local_agent("A", resolve))
    tmux_repo.lane("main", local_lane(), {1: body})
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
