"""Agents as Slurm jobs, on the real two-node dev cluster (scripts/slurm-dev-cluster.sh).

Marked ``slurm``: they need root (slurmd runs jobs as their user). Where there is none,
deselect them with ``-m 'not slurm'``; a cluster that cannot start fails them, never skips.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import libtmux
import pytest
from helpers import Repo, processes_naming, wait_for

from wave_orchestrator.state.layout import repo_tag

pytestmark = [pytest.mark.e2e, pytest.mark.slurm]

QA_OK = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"


def slurm_lane(budget: float = 1, extra: str = "") -> str:
    return f"""
closure: {{required_roles: []}}
placement: {{kind: slurm, cpus: 1, mem: 100M{extra}}}
defaults:
  executor: local
  timeout_minutes: {budget}
  max_retries_per_wave: 0
  launch_stagger_ms: 0
"""


def agent(agent_id: str, command: str, role: str = "implementation", more: str = "") -> str:
    return (
        f"  - {{id: {agent_id}, role: {role}, prompt: do it{more}, "
        f"executor: {{local: {{command: {json.dumps(command)}}}}}}}\n"
    )


def name(repo: Repo, lane: str, session: str) -> str:
    """The job name wave gives an agent: its checkout's tag, its lane, its session."""
    return f"wave-{repo_tag(repo.root)}-{lane}-{session}"


def job_of(repo: Repo, name: str) -> dict[str, str]:
    """scontrol's fields of the newest job called ``name`` ({} when there is none)."""
    out = subprocess.run(
        ["scontrol", "--oneliner", "show", "job"],
        env=repo.env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    jobs = [dict(f.split("=", 1) for f in line.split() if "=" in f) for line in out.splitlines()]
    mine = [j for j in jobs if j.get("JobName") == name]
    return max(mine, key=lambda j: int(j["JobId"])) if mine else {}


def running(repo: Repo, lane: str, *agents: str) -> bool:
    """Every one of ``agents`` runs on a node (its wrapper wrote where, on the shared disk)."""
    return all((repo.agent_dir(lane, 1, a) / "slurm-node").exists() for a in agents)


def test_six_agents_with_cont_qa_complete_on_both_nodes(slurm_repo: Repo) -> None:
    ids = [f"A{i}" for i in range(1, 6)]
    body = "agents:\n" + "".join(
        agent(i, 'echo "$WAVE_AGENT_ID on $SLURMD_NODENAME"; sleep 2') for i in ids
    )
    qa = (
        'mkdir -p r && echo "qa by $WAVE_AGENT_ID" > r/qa.md; '
        f"echo '{QA_OK}'; echo '[wave-verdict] pass'"
    )
    body += agent("QA", qa, role="cont-qa", more=", owns: [r/qa.md]")
    slurm_repo.lane("six", slurm_lane(), {1: body})

    result = slurm_repo.wave("launch", "--lane", "six", "--no-dashboard", timeout=240)

    assert result.returncode == 0, result.stderr
    assert slurm_repo.run_state("six")["waves"]["1"]["state"] == "completed"
    gates = [e["stage"] for e in slurm_repo.events("six") if e["event"] == "gate_passed"]
    assert gates == ["implementation", "cont-qa"]
    nodes = {}
    for i in [*ids, "QA"]:
        job = job_of(slurm_repo, name(slurm_repo, "six", f"w1-{i}"))
        assert job.get("JobState") == "COMPLETED", job
        nodes[i] = job["NodeList"]
        log = (slurm_repo.agent_dir("six", 1, i) / "output.log").read_text()
        if i != "QA":
            assert f"{i} on {nodes[i]}" in log  # the job's output went to the agent's log
    assert set(nodes.values()) == {"node1", "node2"}, nodes


def test_an_agent_over_its_budget_ends_timeout_through_scancel(slurm_repo: Repo) -> None:
    budget = "executor: {budget: {minutes: 0.1}, local: {command: 'sleep 120'}}"
    slurm_repo.lane(
        "late", slurm_lane(), {1: f"agents:\n  - {{id: A1, prompt: do it, {budget}}}\n"}
    )
    started = time.monotonic()
    result = slurm_repo.wave("launch", "--lane", "late", "--no-dashboard", timeout=120)

    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 60  # the budget, not sleep 120, ended it
    status = slurm_repo.status("late", 1, "A1")
    assert status["outcome"] == "timeout", status
    assert "budget" in status["detail"]
    job = wait_for(
        lambda: (
            (j := job_of(slurm_repo, name(slurm_repo, "late", "w1-A1")))
            and j["JobState"] != "RUNNING"
            and j
        ),
        30,
        what="the job to end",
    )
    assert job["JobState"] in ("FAILED", "CANCELLED", "COMPLETED"), job


def test_a_job_cancelled_from_outside_ends_cancelled(slurm_repo: Repo) -> None:
    slurm_repo.lane("ext", slurm_lane(), {1: "agents:\n" + agent("A1", "sleep 120")})
    launcher = slurm_repo.spawn("launch", "--lane", "ext", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "ext", "A1"), 60, what="A1 to run")
        job = job_of(slurm_repo, name(slurm_repo, "ext", "w1-A1"))
        subprocess.run(["scancel", job["JobId"]], env=slurm_repo.env, check=True)
        launcher.wait(timeout=60)
    finally:
        launcher.kill()
    assert launcher.returncode == 1
    status = slurm_repo.status("ext", 1, "A1")
    assert status["outcome"] in ("cancelled", "session-missing"), status
    assert status["detail"] == "Slurm job cancelled (scancel)"  # the wrapper's TERM trap
    finished = [e for e in slurm_repo.events("ext") if e["event"] == "agent_finished"]
    assert [e["status"] for e in finished] == [status["outcome"]]


def test_resume_after_kill_9_adopts_running_jobs_and_runs_none_twice(slurm_repo: Repo) -> None:
    ids = ["A1", "A2", "A3"]
    command = 'echo ran >> "$WAVE_REPO/runs-$WAVE_AGENT_ID"; sleep 8'
    slurm_repo.lane("res", slurm_lane(), {1: "agents:\n" + "".join(agent(i, command) for i in ids)})
    first = slurm_repo.spawn("launch", "--lane", "res", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "res", *ids), 60, what="every agent to run")
    finally:
        first.kill()  # SIGKILL: no clean-up of any kind
        first.wait(timeout=10)
    # With no launcher, status asks squeue (this user's jobs), as a local lane asks tmux.
    shown = json.loads(slurm_repo.wave("status", "--lane", "res", "--json").stdout)
    states = {a["id"]: a["state"] for a in shown["waves"][0]["agents"]}
    assert states == dict.fromkeys(ids, "running (no launcher)"), states

    result = slurm_repo.wave("launch", "--lane", "res", "--resume", "--no-dashboard", timeout=120)

    assert result.returncode == 0, result.stderr
    for i in ids:
        assert (slurm_repo.root / f"runs-{i}").read_text() == "ran\n", i
    adopted = {e["agent"] for e in slurm_repo.events("res") if e["event"] == "agent_adopted"}
    assert adopted == set(ids)
    launched = [e["agent"] for e in slurm_repo.events("res") if e["event"] == "agent_launched"]
    assert sorted(launched) == ids  # by the first launcher only


def test_attach_print_shows_the_srun_command(slurm_repo: Repo) -> None:
    slurm_repo.lane("att", slurm_lane(), {1: "agents:\n" + agent("A1", "sleep 120")})
    launcher = slurm_repo.spawn("launch", "--lane", "att", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "att", "A1"), 60, what="A1 to run")
        job = job_of(slurm_repo, name(slurm_repo, "att", "w1-A1"))
        shown = slurm_repo.wave("attach", "--lane", "att", "A1", "--print")
        stop = slurm_repo.wave("stop", "--lane", "att")
        launcher.wait(timeout=60)
    finally:
        launcher.kill()
    assert shown.returncode == 0, shown.stderr
    log = slurm_repo.agent_dir("att", 1, "A1") / "output.log"
    assert shown.stdout.strip() == f"srun --jobid={job['JobId']} --overlap --pty tail -f {log}"
    assert stop.returncode == 0, stop.stderr
    wait_for(
        lambda: job_of(slurm_repo, name(slurm_repo, "att", "w1-A1")).get("JobState") != "RUNNING",
        30,
        what="wave stop to end the job",
    )


def test_a_queued_agent_waits_without_spending_its_budget(slurm_repo: Repo) -> None:
    """A job that cannot run yet (all CPUs taken) is queued, and its budget starts later."""
    hog = subprocess.run(
        ["sbatch", "--parsable", "--job-name=hog", "--exclusive", "--nodes=2", "--wrap=sleep 8"],
        env=slurm_repo.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    budget = "executor: {budget: {minutes: 0.1}, local: {command: 'sleep 1'}}"
    slurm_repo.lane("q", slurm_lane(), {1: f"agents:\n  - {{id: A1, prompt: do it, {budget}}}\n"})
    started = time.monotonic()
    launcher = slurm_repo.spawn("launch", "--lane", "q", "--no-dashboard")
    try:
        board = slurm_repo.state("q") / "waves" / "wave-1" / "dashboard.json"

        def shown_queued() -> bool:
            try:
                agents = json.loads(board.read_text())["agents"]
            except (OSError, ValueError, KeyError):
                return False
            return [a["state"] for a in agents] == ["queued"]

        wait_for(shown_queued, 30, what="the dashboard to show A1 queued")
        _, err = launcher.communicate(timeout=120)
    finally:
        launcher.kill()
    assert launcher.returncode == 0, err  # queued past its 6 s budget, not a timeout
    assert time.monotonic() - started > 6.5
    job = job_of(slurm_repo, name(slurm_repo, "q", "w1-A1"))
    assert job["StartTime"] >= job_of(slurm_repo, "hog")["EndTime"], (job, hog)


def test_wave_stop_agent_cancels_one_job(slurm_repo: Repo) -> None:
    body = "agents:\n" + agent("A1", "sleep 120") + agent("A2", "sleep 4")
    slurm_repo.lane("one", slurm_lane(), {1: body})
    launcher = slurm_repo.spawn("launch", "--lane", "one", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "one", "A1", "A2"), 60, what="both to run")
        stop = slurm_repo.wave("stop", "--lane", "one", "--agent", "A1")
        launcher.wait(timeout=60)
    finally:
        launcher.kill()
    assert stop.returncode == 0, stop.stderr
    status = slurm_repo.status("one", 1, "A1")
    assert (status["outcome"], status.get("stopped_by")) == ("cancelled", "person")
    assert slurm_repo.status("one", 1, "A2")["code"] == 0  # the other agent ran on
    assert job_of(slurm_repo, name(slurm_repo, "one", "w1-A1"))["JobState"] != "RUNNING"


def test_tmux_inside_the_job_is_attached_through_srun_and_ends_with_it(
    slurm_repo: Repo, server: libtmux.Server
) -> None:
    """placement.tmux: each job runs its agent in a tmux session of its own; `wave attach`
    puts a terminal on it through `srun --pty`; a finished and a budget-killed job both
    leave no tmux server behind."""
    waits = 'echo hello-from-A1; while [ ! -e "$WAVE_REPO/release" ]; do sleep 0.2; done'
    late = ", executor: {budget: {minutes: 0.1}, local: {command: 'sleep 120'}}"
    slurm_repo.lane(
        "tm",
        slurm_lane(extra=", tmux: true"),
        {1: "agents:\n" + agent("A1", waits) + f"  - {{id: A2, prompt: do it{late}}}\n"},
    )
    launcher = slurm_repo.spawn("launch", "--lane", "tm", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "tm", "A1", "A2"), 60, what="both to run")
        one, two = (
            job_of(slurm_repo, name(slurm_repo, "tm", f"w1-{a}"))["JobId"] for a in ("A1", "A2")
        )
        shown = slurm_repo.wave("attach", "--lane", "tm", "A1", "--print")
        assert shown.returncode == 0, shown.stderr
        argv = shown.stdout.split()
        srun = f"srun --jobid={one} --overlap --pty env -u TMUX tmux -L wave-{one} attach -t =w1-A1"
        assert argv == srun.split()
        # A person's terminal (a pane of the test's own tmux) on the agent, through Slurm.
        session = server.new_session("person", window_command=shown.stdout.strip(), x=120, y=30)
        pane = session.active_window.active_pane
        assert pane is not None
        wait_for(
            lambda: "hello-from-A1" in "\n".join(pane.capture_pane()),
            30,
            what="the agent's output on the attached terminal",
        )
        assert processes_naming(f"wave-{one}") and processes_naming(
            f"wave-{two}"
        )  # each job's own server
        (slurm_repo.root / "release").touch()
        launcher.wait(timeout=90)
    finally:
        launcher.kill()
    assert slurm_repo.status("tm", 1, "A1")["code"] == 0
    late_status = slurm_repo.status("tm", 1, "A2")
    assert late_status["outcome"] == "timeout" and "budget" in late_status["detail"]
    wait_for(
        lambda: not processes_naming(f"wave-{one}") and not processes_naming(f"wave-{two}"),
        30,
        what="no tmux of either job left",
    )


def test_slurm_s_own_time_limit_ends_an_agent_timeout(slurm_repo: Repo) -> None:
    """Slurm, not the launcher, ends the job (its limit lowered from outside, as an admin
    may): the wrapper's TERM trap asks Slurm why and writes a timeout. Slurm checks limits
    about every 30 s and counts whole minutes, so this takes 60-90 s."""
    slurm_repo.lane("tl", slurm_lane(budget=10), {1: "agents:\n" + agent("A1", "sleep 600")})
    launcher = slurm_repo.spawn("launch", "--lane", "tl", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "tl", "A1"), 60, what="A1 to run")
        job = job_of(slurm_repo, name(slurm_repo, "tl", "w1-A1"))
        assert job["TimeLimit"] == "00:12:00"  # the budget plus the margin
        lower = ["scontrol", "update", f"JobId={job['JobId']}", "TimeLimit=1"]
        subprocess.run(lower, env=slurm_repo.env, check=True, capture_output=True)
        launcher.wait(timeout=150)
    finally:
        launcher.kill()
    status = slurm_repo.status("tl", 1, "A1")
    assert status["outcome"] == "timeout", status
    assert status["detail"] == "Slurm time limit (1:00) reached", status
    assert job_of(slurm_repo, name(slurm_repo, "tl", "w1-A1"))["JobState"] == "TIMEOUT"


def test_a_repository_under_a_percent_folder_gets_its_logs(slurm_repo: Repo) -> None:
    """Slurm expands %j, %u, %x in --output; wave's %% keeps the path as it is."""
    odd = Repo(slurm_repo.root.parent / "100%j-%u%x-done" / "repo")
    odd.env = {**slurm_repo.env, "PATH": f"{odd.bin}:{slurm_repo.env['PATH']}"}
    odd.lane("pct", slurm_lane(), {1: "agents:\n" + agent("A", "echo from the job")})
    result = odd.wave("launch", "--lane", "pct", "--no-dashboard", timeout=180)
    assert result.returncode == 0, result.stderr
    log = odd.agent_dir("pct", 1, "A") / "output.log"
    assert "from the job" in log.read_text()


def test_two_checkouts_with_a_lane_of_the_same_name_leave_each_other_alone(
    slurm_repo: Repo,
) -> None:
    other = Repo(slurm_repo.root.parent / "second-checkout")
    other.env = {**slurm_repo.env, "PATH": f"{other.bin}:{slurm_repo.env['PATH']}"}
    slow = 'touch "$WAVE_REPO/started"; sleep 12; echo done-A'
    slurm_repo.lane("big", slurm_lane(), {1: "agents:\n" + agent("A1", slow)})
    other.lane("big", slurm_lane(), {1: "agents:\n" + agent("A1", "echo done-B")})
    first = slurm_repo.spawn("launch", "--lane", "big", "--no-dashboard")
    try:
        wait_for(lambda: (slurm_repo.root / "started").exists(), seconds=60, what="A's job")
        mine = job_of(slurm_repo, name(slurm_repo, "big", "w1-A1"))
        second = other.wave("launch", "--lane", "big", "--no-dashboard", timeout=120)
        assert second.returncode == 0, second.stderr  # not refused because of A's job
        theirs = job_of(other, name(other, "big", "w1-A1"))
        assert mine["JobName"] != theirs["JobName"]
        assert job_of(slurm_repo, mine["JobName"])["JobState"] == "RUNNING"  # not cancelled
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert "done-A" in (slurm_repo.agent_dir("big", 1, "A1") / "output.log").read_text()


def submit(repo: Repo, job_name: str, *options: str) -> str:
    """A job that only looks like an agent's (sleeping, its output thrown away)."""
    argv = ["sbatch", "--parsable", f"--job-name={job_name}", "--output=/dev/null", "--chdir=/"]
    done = subprocess.run(
        [*argv, *options, "--wrap=sleep 300"], env=repo.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def state_of(repo: Repo, job_id: str) -> str:
    out = subprocess.run(
        ["scontrol", "--oneliner", "show", "job", job_id],
        env=repo.env,
        capture_output=True,
        text=True,
    ).stdout
    return dict(f.split("=", 1) for f in out.split() if "=" in f).get("JobState", "")


def test_look_alike_jobs_of_another_user_and_of_no_record_are_left_alone(
    slurm_repo: Repo,
) -> None:
    """Jobs with an agent's very name: one of another user (``nobody``), one of this user
    that wave never submitted. Neither blocks the launch, is followed, or is cancelled."""
    job = name(slurm_repo, "look", "w1-A1")
    theirs = submit(slurm_repo, job, "--uid=nobody", "--gid=nogroup")
    try:
        _look_alikes_left_alone(slurm_repo, job, theirs)
    finally:  # the fixture cancels this user's jobs; nobody's is the test's to end
        subprocess.run(["scancel", theirs], env=slurm_repo.env, check=False)


def _look_alikes_left_alone(slurm_repo: Repo, job: str, theirs: str) -> None:
    by_hand = submit(slurm_repo, job)
    wait_for(
        lambda: {state_of(slurm_repo, theirs), state_of(slurm_repo, by_hand)} == {"RUNNING"},
        30,
        what="the look-alikes to run",
    )
    slurm_repo.lane("look", slurm_lane(), {1: "agents:\n" + agent("A1", "echo mine")})

    result = slurm_repo.wave("launch", "--lane", "look", "--no-dashboard", timeout=120)

    assert result.returncode == 0, result.stderr  # not "a launcher died and left 1 agent"
    assert f"Slurm job {by_hand} ({job}) was not submitted by this lane" in result.stderr
    assert "mine" in (slurm_repo.agent_dir("look", 1, "A1") / "output.log").read_text()
    ours = (slurm_repo.agent_dir("look", 1, "A1") / "slurm-job").read_text().strip()
    assert ours not in (theirs, by_hand)
    assert state_of(slurm_repo, theirs) == "RUNNING"
    assert state_of(slurm_repo, by_hand) == "RUNNING"


def test_resume_after_kill_9_never_adopts_a_job_it_did_not_submit(slurm_repo: Repo) -> None:
    """The launcher dies, its job is gone, and a job of the same name and user appears: the
    resumed launcher runs the agent again rather than wait on (and cancel) the stranger."""
    command = 'echo ran >> "$WAVE_REPO/runs"; while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.2; done'
    slurm_repo.lane("rs", slurm_lane(), {1: "agents:\n" + agent("A1", command)})
    first = slurm_repo.spawn("launch", "--lane", "rs", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "rs", "A1"), 60, what="A1 to run")
    finally:
        first.kill()
        first.wait(timeout=10)
    mine = (slurm_repo.agent_dir("rs", 1, "A1") / "slurm-job").read_text().strip()
    subprocess.run(["scancel", mine], env=slurm_repo.env, check=True)
    wait_for(lambda: state_of(slurm_repo, mine) not in ("RUNNING", "COMPLETING"), 30, what="end")
    # as if its node had gone down with it: no status written
    (slurm_repo.agent_dir("rs", 1, "A1") / "status.json").unlink(missing_ok=True)
    stranger = submit(slurm_repo, name(slurm_repo, "rs", "w1-A1"))
    wait_for(lambda: state_of(slurm_repo, stranger) == "RUNNING", 30, what="the stranger")
    (slurm_repo.root / "go").touch()

    result = slurm_repo.wave("launch", "--lane", "rs", "--resume", "--no-dashboard", timeout=120)

    assert result.returncode == 0, result.stderr
    assert (slurm_repo.root / "runs").read_text() == "ran\nran\n"  # run again, not adopted
    assert not [e for e in slurm_repo.events("rs") if e["event"] == "agent_adopted"]
    assert state_of(slurm_repo, stranger) == "RUNNING"


def test_a_partition_the_cluster_lacks_stops_the_launch_and_shows_in_the_dry_run(
    slurm_repo: Repo,
) -> None:
    slurm_repo.lane(
        "part", slurm_lane(extra=", partition: nosuch"), {1: "agents:\n" + agent("A1", "true")}
    )
    said = "placement.partition 'nosuch' is not a partition of this cluster (sinfo lists: debug)"
    dry = slurm_repo.wave("launch", "--lane", "part", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"warning: a live launch would stop: {said}" in dry.stdout

    result = slurm_repo.wave("launch", "--lane", "part", "--no-dashboard")

    assert result.returncode == 1 and said in result.stderr, result.stderr
    assert not (slurm_repo.agent_dir("part", 1, "A1") / "slurm-job").exists()


def test_a_job_the_cluster_refuses_is_not_submitted_again(slurm_repo: Repo) -> None:
    """A constraint no node has: sbatch refuses it. With retries left, it is still not
    resubmitted: the wave is blocked (exit 4) and sbatch's words are kept for the person."""
    lane = slurm_lane(extra=", extra: [--constraint=nosuch]").replace(
        "max_retries_per_wave: 0", "max_retries_per_wave: 2"
    )
    slurm_repo.lane("refuse", lane, {1: "agents:\n" + agent("A1", "true")})

    result = slurm_repo.wave("launch", "--lane", "refuse", "--no-dashboard", timeout=120)

    assert result.returncode == 4, result.stderr
    kept = slurm_repo.agent_dir("refuse", 1, "A1") / "sbatch.err"
    assert "Invalid feature specification" in kept.read_text()
    assert "sbatch refused the job: Invalid feature specification" in result.stderr
    assert str(kept) in result.stderr and "log:" not in result.stderr  # no log to point at
    seen = [e["event"] for e in slurm_repo.events("refuse")]
    assert seen.count("agent_finished") == 1 and "wave_retry" not in seen


def test_a_controller_restart_mid_wave_is_waited_out(
    slurm_repo: Repo, slurm_controller: Callable[[str], None]
) -> None:
    """slurmctld stops while A1 runs: A1 is kept as it is (status says the cluster is
    unreachable), finishes meanwhile, A2 (after A1) waits to be submitted, and once the
    controller is back the wave completes with each agent run once."""
    waits = 'echo "$WAVE_AGENT_ID" >> "$WAVE_REPO/runs"; '
    body = (
        "agents:\n"
        + agent("A1", waits + 'while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.2; done')
        + agent("A2", waits, more=", depends_on: [A1]")
    )
    slurm_repo.lane("ctl", slurm_lane(budget=5), {1: body})
    launcher = slurm_repo.spawn("launch", "--lane", "ctl", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "ctl", "A1"), 60, what="A1 to run")
        slurm_controller("stop")
        board = slurm_repo.state("ctl") / "waves" / "wave-1" / "dashboard.json"

        def unreachable() -> bool:
            try:
                return bool(json.loads(board.read_text()).get("cluster_unreachable_since"))
            except (OSError, ValueError):
                return False

        wait_for(unreachable, 40, what="the launcher to see the controller gone")
        shown = slurm_repo.wave("status", "--lane", "ctl")
        assert "cluster unreachable since" in shown.stdout, shown.stdout
        assert "A1" in shown.stdout and "running" in shown.stdout
        (slurm_repo.root / "go").touch()
        wait_for(
            lambda: (slurm_repo.agent_dir("ctl", 1, "A1") / "status.json").exists(),
            30,
            what="A1 to finish while the controller is away",
        )
        assert not (slurm_repo.agent_dir("ctl", 1, "A2") / "slurm-job").exists()  # held
        slurm_controller("start")
        _, err = launcher.communicate(timeout=180)
    finally:
        launcher.kill()
    assert launcher.returncode == 0, err
    assert (slurm_repo.root / "runs").read_text().split() == ["A1", "A2"]
    assert "placement not answering" in err and "answers again" in err


def test_a_controller_gone_past_the_bound_fails_the_wave_and_resume_picks_up(
    slurm_repo: Repo, slurm_controller: Callable[[str], None]
) -> None:
    command = 'echo ran >> "$WAVE_REPO/runs"; while [ ! -e "$WAVE_REPO/go" ]; do sleep 0.2; done'
    lane = slurm_lane(budget=5, extra=", unreachable_minutes: 0.2")
    slurm_repo.lane("gone", lane, {1: "agents:\n" + agent("A1", command)})
    launcher = slurm_repo.spawn("launch", "--lane", "gone", "--no-dashboard")
    try:
        wait_for(lambda: running(slurm_repo, "gone", "A1"), 60, what="A1 to run")
        slurm_controller("stop")
        _, err = launcher.communicate(timeout=120)
    finally:
        launcher.kill()
    assert launcher.returncode == 1, err  # the wave failed, saying why
    assert "longer than placement.unreachable_minutes (0.2)" in err
    assert "wave launch --resume" in err
    slurm_controller("start")
    (slurm_repo.root / "go").touch()

    result = slurm_repo.wave("launch", "--lane", "gone", "--resume", "--no-dashboard", timeout=120)

    assert result.returncode == 0, result.stderr
    assert (slurm_repo.root / "runs").read_text() == "ran\n"  # its job was adopted, not rerun
    adopted = [e["agent"] for e in slurm_repo.events("gone") if e["event"] == "agent_adopted"]
    assert adopted == ["A1"]
