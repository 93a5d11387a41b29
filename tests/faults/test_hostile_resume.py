"""Fault class 5, on `--resume` (issue 33 §4): the times a dead launcher's files hold are the
agent's to write. A usage limit's reset past any calendar, or a century away, neither breaks
`wave status` nor holds the lane: on resume a reset is waited for only within the lane's
``usage_limit.max_wait_minutes``; beyond it the agent ends ``usage-limit``. A launch "in the
future" does not stretch an adopted agent's budget."""

from __future__ import annotations

import json
import os
import signal
import time

import libtmux
import pytest
from helpers import Repo, alive, local_lane, wait_for

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.placement.base import PaneInfo
from wave_orchestrator.runtime.agent.plan import AgentLaunch, Planner, plan_agent
from wave_orchestrator.runtime.wave.resume import adopt, read_leftover
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.lifecycle import AgentState

CENTURY = 100 * 365 * 86400
AGENT = "agents:\n  - {id: A1, prompt: x, executor: {local: {command: 'echo done'}}}\n"


def planned(repo: Repo, lane_extra: str = "") -> AgentLaunch:
    repo.lane("main", local_lane() + lane_extra, {1: AGENT})
    lane = load_lane(repo.root, "main")
    wave = lane.wave(1)
    launch = plan_agent(lane, StateLayout(lane.state_dir, "main"), wave, wave.agent("A1"))
    launch.paths.dir.mkdir(parents=True)
    return launch


def limited_status(launch: AgentLaunch, until: float) -> None:
    body = {"code": 1, "usage_limit": True, "attempt": 1, "limited_until": until}
    launch.paths.status.write_text(json.dumps(body))


def test_a_reset_within_the_maximum_wait_is_waited_for_on_resume(repo: Repo) -> None:
    launch = planned(repo)
    limited_status(launch, time.time() + 3600)
    run = adopt(launch, read_leftover(launch.paths, 1), 1, None)
    assert run is not None and run.state is AgentState.LIMITED
    assert run.limited_until is not None and run.limited_until < time.time() + 3601


@pytest.mark.parametrize(
    ("away", "extra"),
    [
        (CENTURY, ""),  # a century: the default wait is 360 minutes
        (7200, "usage_limit: {max_wait_minutes: 60}\n"),
        (60, "usage_limit: {wait: false}\n"),
    ],
    ids=["century", "beyond-max-wait", "wait-off"],
)
def test_a_reset_beyond_the_maximum_wait_ends_the_agent_usage_limit(
    repo: Repo, away: float, extra: str
) -> None:
    launch = planned(repo, extra)
    limited_status(launch, time.time() + away)
    run = adopt(launch, read_leftover(launch.paths, 1), 1, None)
    assert run is not None and run.state is AgentState.USAGE_LIMIT
    assert run.limited_until is None
    assert "max_wait_minutes" in run.detail or "usage_limit.wait is off" in run.detail


def test_a_reset_past_any_calendar_is_no_status(repo: Repo) -> None:
    """``1e12`` (the year 33658): the status is unreadable, so the agent runs again."""
    launch = planned(repo)
    limited_status(launch, 1e12)
    left = read_leftover(launch.paths, 1)
    assert left.status is None
    assert adopt(launch, left, 1, None) is None  # launched again


def test_a_launch_in_the_future_does_not_stretch_an_adopted_budget(repo: Repo) -> None:
    launch = planned(repo)
    later = time.time() + CENTURY
    launch.paths.launch_record.write_text(json.dumps({"attempt": 1, "launched_at": later}))
    pane = PaneInfo(launch.session, dead=False, dead_status=None, pid=os.getpid())
    run = adopt(launch, read_leftover(launch.paths, 1), 1, pane)
    assert run is not None and run.state is AgentState.RUNNING
    assert run.launched_wall is not None and run.launched_wall <= time.time()
    assert run.deadline is not None
    assert run.deadline <= time.monotonic() + launch.deadline_minutes * 60
    launch.paths.status.write_text(
        json.dumps({"code": 0, "attempt": 1, "finished_at": "9999-12-31T23:59:59.000Z"})
    )
    done = adopt(launch, read_leftover(launch.paths, 1), 1, None)
    assert done is not None and 0 <= done.duration_ms <= 1000


# -- end to end: a launcher killed, its agent's status forged, then `--resume` -----------------
# A1's first run waits until killed; any later run succeeds at once.
FIRST_WAITS = (
    'n=$(cat "$WAVE_REPO/runs" 2>/dev/null || echo 0); echo $((n + 1)) > "$WAVE_REPO/runs"; '
    'if [ "$n" = 0 ]; then sleep 300; fi; echo done'
)


def runs(repo: Repo) -> int:
    path = repo.root / "runs"
    return int(path.read_text()) if path.exists() else 0


def killed_with_a_forged_limit(repo: Repo, server: libtmux.Server, until: float) -> None:
    """Launch A1, kill -9 the launcher and A1's session, and leave a status that says A1 was
    parked on a usage limit until ``until``, as an agent (or a person) could write it."""
    agent = json.dumps({"id": "A1", "prompt": "x", "executor": {"local": {"command": FIRST_WAITS}}})
    repo.lane("main", local_lane(), {1: f"agents:\n  - {agent}\n"})
    started = repo.wave("launch", "--lane", "main", "--detach")
    assert started.returncode == 0, started.stderr
    wait_for(lambda: runs(repo) == 1, 30, what="A1 to start")
    pid = int(json.loads((repo.state("main") / "launcher.lock").read_text())["pid"])
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, what="the launcher to die")
    agent_dir = repo.agent_dir("main", 1, "A1")
    session = json.loads((agent_dir / "launch.json").read_text())["session"]
    server.cmd("kill-session", "-t", session)  # A1 ended with its launcher
    wait_for(lambda: not server.has_session(session), 10, what="A1's session to end")
    body = {
        "code": 1,
        "usage_limit": True,
        "attempt": 1,
        "limited_until": until,
        "detail": "usage limit reached",
    }
    (agent_dir / "status.json").write_text(json.dumps(body))


@pytest.mark.e2e
def test_a_reset_past_any_calendar_neither_breaks_status_nor_resume(
    tmux_repo: Repo, server: libtmux.Server
) -> None:
    killed_with_a_forged_limit(tmux_repo, server, 1e12)
    for flags in ([], ["--json"]):
        shown = tmux_repo.wave("status", "--lane", "main", *flags)
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
        assert "A1" in shown.stdout
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard", timeout=90)
    assert "Traceback" not in resumed.stderr, resumed.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert runs(tmux_repo) == 2  # its status is no status: A1 ran again, and the lane is done
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "completed"


@pytest.mark.e2e
def test_a_reset_a_century_away_is_not_waited_for(tmux_repo: Repo, server: libtmux.Server) -> None:
    killed_with_a_forged_limit(tmux_repo, server, time.time() + CENTURY)
    shown = tmux_repo.wave("status", "--lane", "main")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    t0 = time.monotonic()
    resumed = tmux_repo.wave("launch", "--lane", "main", "--resume", "--no-dashboard", timeout=90)
    assert time.monotonic() - t0 < 60  # not parked for the century, nor the 6 h maximum
    assert "Traceback" not in resumed.stderr, resumed.stderr
    assert resumed.returncode == 1, resumed.stderr  # the wave failed: no retry left
    state = json.loads(tmux_repo.wave("status", "--lane", "main", "--json").stdout)
    agent = state["waves"][0]["agents"][0]
    # The launcher recorded A1's launch and no end (its ledger): the end its status tells is
    # taken, but not its usage limit: its output says none (the launcher judges it again), so
    # A1 ends failed rather than waiting. (A real limit a century away ends usage-limit on
    # resume, the reason said: test_a_reset_beyond_the_maximum_wait_ends_the_agent_usage_limit.)
    assert runs(tmux_repo) == 1 and agent["state"] == "failed", agent


@pytest.mark.parametrize(
    ("last_lines", "parked"),
    [
        ("working on the rate-limit handler\nall tests pass\n", False),
        ("Error: usage limit reached, resets in 1h\n", True),
    ],
    ids=["forged-flag", "the-cli-said-so"],
)
def test_resume_judges_a_usage_limit_again_from_the_output(
    repo: Repo, last_lines: str, parked: bool
) -> None:
    """A dead launcher's agent whose status says `usage_limit` (run.sh's guess, or a forged
    file) is parked on resume only if its try's last lines say so too."""
    from wave_orchestrator.runtime.wave.resume import adopt_leftover
    from wave_orchestrator.state.events import EventLog
    from wave_orchestrator.state.ledger import Ledger

    launch = planned(repo)
    limited_status(launch, time.time() + 3600)
    launch.paths.output_log.write_text(last_lines)
    ledger = Ledger.for_lane(repo.root, "main")
    ledger.agents(1, [("A1", 1, None, "launched")])  # launched; its end not seen
    ledger.open()
    lane = load_lane(repo.root, "main")
    layout = StateLayout(lane.state_dir, "main")
    run = adopt_leftover(
        Planner(lane, layout),
        EventLog(layout.events),
        lane.wave(1),
        lane.wave(1).agent("A1"),
        1,
        ["local"],
        {},
        ledger=ledger,
    )
    assert run is not None
    assert run.state is (AgentState.LIMITED if parked else AgentState.FAILED)
