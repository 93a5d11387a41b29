"""Files under `.wave/` that an agent forges decide nothing: reuse, `--resume`, `--auto-next`
and `depends_on_lanes` take their word from the launcher's ledger (real launches, real tmux;
each agent appends its id to `runs`, so what ran again is counted)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from helpers import Repo, local_agent, local_lane, wait_for

from wave_orchestrator.state.ledger import ledger_path

pytestmark = pytest.mark.e2e

COUNT = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '


def runs(repo: Repo) -> list[str]:
    path = repo.root / "runs"
    return path.read_text().split() if path.exists() else []


def launch(repo: Repo, lane: str = "main", *flags: str) -> tuple[int, str]:
    done = repo.wave("launch", "--lane", lane, "--no-dashboard", *flags)
    return done.returncode, done.stdout + done.stderr


# A succeeds; B fails until the file `fixed` exists.
A_AND_B = (
    "agents:\n"
    + local_agent("A", COUNT + "echo did A")
    + local_agent("B", COUNT + 'test -e "$WAVE_REPO/fixed"')
)


def forge_completed(repo: Repo, lane: str) -> None:
    """What an agent can write in any lane's state: a run state saying wave 1 completed."""
    state = repo.state(lane)
    state.mkdir(parents=True)
    (state / "run-state.json").write_text(
        json.dumps({"lane": lane, "waves": {"1": {"state": "completed"}}, "history": []})
    )


def forge_success(repo: Repo, agent: str) -> None:
    """What an agent can do to another's files: its status says it succeeded."""
    path = repo.agent_dir("main", 1, agent) / "status.json"
    status = json.loads(path.read_text())
    path.write_text(json.dumps({**status, "code": 0, "status": "success"}))


def test_a_status_forged_to_success_is_not_reused(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: A_AND_B})
    assert launch(tmux_repo)[0] != 0  # B failed
    forge_success(tmux_repo, "B")
    (tmux_repo.root / "runs").unlink()
    code, out = launch(tmux_repo)
    assert runs(tmux_repo) == ["B"]  # A reused (the launcher saw it succeed); B runs again
    assert code != 0  # and fails again: its forged success completed nothing
    assert "agent not reused" in out and "the launcher saw it end failed" in out


def test_files_written_for_an_agent_that_never_ran_are_not_reused(tmux_repo: Repo) -> None:
    """B is new in the wave file since its last run; an agent writes B a launch record with
    the right fingerprint (a plain digest anyone can compute) and a success: B still runs."""
    a_only = "agents:\n" + local_agent("A", COUNT + 'test -e "$WAVE_REPO/fixed"')
    tmux_repo.lane("main", local_lane(), {1: a_only})
    assert launch(tmux_repo)[0] != 0
    with_b = a_only + local_agent("B", COUNT + "echo did B")
    tmux_repo.lane("main", local_lane(), {1: with_b})
    a_dir, b_dir = tmux_repo.agent_dir("main", 1, "A"), tmux_repo.agent_dir("main", 1, "B")
    b_dir.mkdir(parents=True)
    record = json.loads((a_dir / "launch.json").read_text())
    from wave_orchestrator.definitions.loading.lane_loader import load_lane
    from wave_orchestrator.runtime.wave.reuse import fingerprint

    b_def = next(a for a in load_lane(tmux_repo.root, "main").waves[0].agents if a.id == "B")
    forged = {**record, "fingerprint": fingerprint(b_def, "local"), "session": "w1-B"}
    (b_dir / "launch.json").write_text(json.dumps(forged))
    status = {"agent": "B", "wave": 1, "attempt": record["attempt"], "code": 0}
    (b_dir / "status.json").write_text(json.dumps({**status, "status": "success"}))
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "runs").unlink()
    code, out = launch(tmux_repo)
    assert code == 0, out
    assert sorted(runs(tmux_repo)) == ["A", "B"]
    assert "the launcher has no record of it" in out


def test_a_lane_with_no_ledger_reuses_nothing_and_says_why(tmux_repo: Repo) -> None:
    """Runs of a wave that kept no ledger (or whose ledger is gone) are not vouched for."""
    tmux_repo.lane("main", local_lane(), {1: A_AND_B})
    assert launch(tmux_repo)[0] != 0
    ledger_path(tmux_repo.root, "main").unlink()
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "runs").unlink()
    code, out = launch(tmux_repo)
    assert code == 0 and sorted(runs(tmux_repo)) == ["A", "B"]
    assert "nothing reused" in out and "no launcher record of earlier runs" in out


def test_a_forged_completed_run_state_does_not_release_a_dependent_lane(
    tmux_repo: Repo,
) -> None:
    tmux_repo.lane("infra", local_lane(), {1: "agents:\n" + local_agent("net", COUNT)})
    app = "depends_on_lanes: ['infra:1']\nagents:\n" + local_agent("api", COUNT)
    tmux_repo.lane("app", local_lane(), {1: app})
    forge_completed(tmux_repo, "infra")
    waiting = tmux_repo.spawn("launch", "--lane", "app", "--no-dashboard")
    try:
        wait_for(
            lambda: (
                "run-state.json says completed" in tmux_repo.wave("status", "--lane", "app").stdout
            ),
            30,
            what="app's wave 1 to say it still waits for infra, and why",
        )
        assert runs(tmux_repo) == []  # nothing of app ran on the forged word
        assert launch(tmux_repo, "infra")[0] == 0  # infra really runs: app goes on
        _, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, err
    assert runs(tmux_repo) == ["net", "api"]


def test_auto_next_does_not_skip_a_wave_forged_completed(tmux_repo: Repo) -> None:
    one = "agents:\n" + local_agent("A", COUNT)
    tmux_repo.lane("main", local_lane(), {1: one, 2: "agents:\n" + local_agent("B", COUNT)})
    forge_completed(tmux_repo, "main")
    code, out = launch(tmux_repo, "main", "--auto-next")
    assert code == 0, out
    assert runs(tmux_repo) == ["A", "B"]
    assert "run-state.json says wave 1 completed, but no launcher saw it complete" in out


def test_resume_does_not_adopt_a_status_forged_after_the_launcher_died(
    tmux_repo: Repo, tmp_path: Path
) -> None:
    """The launcher saw B fail, then died; an agent rewrote B's status to success: --resume
    runs B again rather than taking the forged word."""
    slow = COUNT + 'test -e "$WAVE_REPO/go" || sleep 30'
    wave = (
        "agents:\n"
        + local_agent("B", COUNT + 'test -e "$WAVE_REPO/fixed"')
        + local_agent("S", slow)
    )
    tmux_repo.lane("main", local_lane(), {1: wave})
    proc = tmux_repo.spawn("launch", "--lane", "main", "--no-dashboard")
    try:
        wait_for(
            lambda: any(
                e["event"] == "agent_finished" and e.get("agent") == "B"
                for e in tmux_repo.events("main")
            ),
            30,
            what="B to end (failed) while S still runs",
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    forge_success(tmux_repo, "B")
    (tmux_repo.root / "fixed").touch()
    (tmux_repo.root / "go").touch()
    code, out = launch(tmux_repo, "main", "--resume")
    assert code == 0, out
    assert runs(tmux_repo).count("B") == 2  # ran again after the forged success
    assert "agent not adopted" in out and "the launcher saw it end failed" in out
