"""The Slurm placement's commands and its reading of squeue/scontrol, without a cluster (the
real runs are in tests/e2e/test_slurm.py)."""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers import Repo

from wave_orchestrator.definitions.model import PlacementSettings
from wave_orchestrator.errors import PlacementRefused, PlacementUnreachable
from wave_orchestrator.placement import slurm
from wave_orchestrator.placement.base import AgentJob, ended_state
from wave_orchestrator.placement.slurm import SlurmPlacement
from wave_orchestrator.placement.slurm_commands import Answer, ControllerSilent
from wave_orchestrator.placement.slurm_submission import time_limit
from wave_orchestrator.state.layout import StateLayout, repo_tag
from wave_orchestrator.state.lifecycle import AgentState

REPO = Path("/srv/checkout")
TAG, UID, USER = repo_tag(REPO), os.getuid(), slurm._user_name(os.getuid())


def job(tmp_path: Path, budget: float = 30, mem: str | None = "2G") -> AgentJob:
    return AgentJob(
        session="w1-A1",
        argv=["bash", str(tmp_path / "run.sh")],
        cwd=str(tmp_path),
        agent_dir=tmp_path,
        output_log=tmp_path / "output.log",
        budget_minutes=budget,
        cpus=2,
        mem=mem,
    )


class FakeSlurm:
    """Answers the placement's commands from canned outputs; records every call."""

    def __init__(self, squeue: str = "", scontrol: str = "") -> None:
        self.squeue, self.scontrol = squeue, scontrol
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], check: bool = True) -> Answer:
        self.calls.append(list(argv))
        return Answer(0, self.answer(argv), "")

    def answer(self, argv: Sequence[str]) -> str:
        if argv[0] == "squeue":
            return self.squeue
        if argv[0] == "scontrol":
            return self.scontrol
        if argv[0] == "sbatch":
            return "41;wavedev\n"
        return ""


def test_budget_becomes_time_with_a_margin() -> None:
    assert time_limit(30) == 32
    assert time_limit(0.1) == 3  # at least one minute, plus the margin


def test_the_sbatch_line_carries_name_time_resources_output_and_extras(tmp_path: Path) -> None:
    where = PlacementSettings(
        kind="slurm", partition="agents", account="lab", qos="low", extra=("--constraint=x",)
    )
    argv = SlurmPlacement(where, "main", REPO).command_line(job(tmp_path))
    assert argv[:2] == ["sbatch", "--parsable"]
    assert f"--job-name=wave-{TAG}-main-w1-A1" in argv
    assert "--time=32" in argv and "--cpus-per-task=2" in argv and "--mem=2G" in argv
    assert f"--output={tmp_path / 'output.log'}" in argv
    assert {"--partition=agents", "--account=lab", "--qos=low"} <= set(argv)
    assert argv[-2:] == ["--constraint=x", str(tmp_path / "run.sh")]
    assert "--export=ALL,WAVE_PLACEMENT=slurm,WAVE_TIME_LIMIT_SECONDS=1920" in argv
    assert not any(
        a.startswith("--mem")
        for a in SlurmPlacement(where, "m", REPO).command_line(job(tmp_path, mem=None))
    )


def test_states_are_read_from_one_squeue_and_one_scontrol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(
        squeue=f"41|wave-{TAG}-main-w1-A1|PENDING||Resources\n"
        f"42|wave-{TAG}-main-w1-A2|RUNNING|node2|None\n"
        "43|wave-other-w1-A1|RUNNING|node1|None\n"
    )
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    seen = place.sessions(strict=True)
    assert set(seen) == {"w1-A1", "w1-A2"}  # another lane's job is not ours
    assert seen["w1-A1"].queued and not seen["w1-A2"].queued
    assert (seen["w1-A2"].pid, seen["w1-A2"].host) == (42, "node2")

    fake.squeue = f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n"  # A2 vanished
    fake.scontrol = f"JobId=42 JobName=wave-{TAG}-main-w1-A2 UserId=me({UID}) JobState=OUT_OF_MEMORY ExitCode=0:9 NodeList=node2\n"
    seen = place.sessions(strict=True)
    assert seen["w1-A2"].dead and seen["w1-A2"].ended == "OUT_OF_MEMORY"
    assert seen["w1-A2"].dead_status == 137
    assert [c[0] for c in fake.calls] == ["squeue", "squeue", "scontrol"]  # no per-job calls
    assert ended_state("TIMEOUT") is AgentState.TIMEOUT
    assert ended_state("OUT_OF_MEMORY") is AgentState.FAILED
    assert ended_state("NODE_FAIL") is AgentState.FAILED


def test_term_is_sent_to_the_whole_job_and_kill_cancels_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n")
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    assert place.signal(41, signal.SIGTERM)
    assert place.signal(41, signal.SIGKILL)
    cancels = [c for c in fake.calls if c[0] == "scancel"]
    assert cancels == [
        ["scancel", f"--user={USER}", "--signal=TERM", "--full", "41"],
        ["scancel", f"--user={USER}", "41"],
    ]


def test_with_tmux_the_job_is_told_so_signals_go_to_its_batch_script_and_attach_is_tmux(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = SlurmPlacement(PlacementSettings(kind="slurm", tmux=True), "main", REPO)
    argv = place.command_line(job(tmp_path))
    assert (
        "--export=ALL,WAVE_PLACEMENT=slurm,WAVE_TIME_LIMIT_SECONDS=1920,"
        "WAVE_SLURM_TMUX=1,WAVE_SESSION=w1-A1"
    ) in argv
    fake = FakeSlurm(squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n")
    monkeypatch.setattr(slurm, "run_slurm", fake)
    assert place.signal(41, signal.SIGTERM)
    assert [c for c in fake.calls if c[0] == "scancel"] == [
        ["scancel", f"--user={USER}", "--signal=TERM", "--batch", "41"]
    ]  # the batch script hands it to the pane, then ends the job's tmux
    srun = "srun --jobid=41 --overlap --pty env -u TMUX tmux -L wave-41 attach -t =w1-A1"
    assert place.attach_argv("w1-A1", tmp_path / "output.log") == srun.split()
    plain = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    assert plain.attach_argv("w1-A1", tmp_path / "output.log")[4:] == [
        "tail",
        "-f",
        str(tmp_path / "output.log"),
    ]


def test_a_job_that_cannot_see_its_folder_fails_with_a_shared_filesystem_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm()
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    monkeypatch.setattr(slurm, "SHARED_FS_SECONDS", 0.0)
    place.start(job(tmp_path))
    fake.squeue = f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n"
    place.sessions()  # first seen running
    seen = place.sessions()["w1-A1"]  # and still no slurm-node file from the job
    assert seen.dead and seen.ended is not None
    assert "filesystem the nodes share" in seen.ended
    assert ["scancel", f"--user={USER}", "41"] in fake.calls


def test_a_missing_slurm_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    with pytest.raises(slurm.SlurmError, match="squeue not found"):
        place.sessions(strict=True)


def test_dry_run_shows_the_exact_sbatch_line(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local, timeout_minutes: 10}\nclosure: {required_roles: []}\n"
        "placement: {kind: slurm, partition: agents, mem: 1G}\n",
        {1: 'agents:\n  - {id: A1, prompt: p, executor: {local: {command: "true"}}}\n'},
    )
    result = repo.wave("launch", "--lane", "main", "--dry-run")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("A1: sbatch"))
    argv = shlex.split(line.split(": ", 1)[1])
    live = repo.agent_dir("main", 1, "A1")
    assert argv[-1] == str(live / "run.sh")  # the live run's script, not the dry run's copy
    assert "--time=12" in argv and "--partition=agents" in argv and "--mem=1G" in argv
    preview = json.loads((repo.state("main") / "dry-run" / "launch-preview.json").read_text())
    assert preview[0]["sbatch"] == shlex.join(argv)


def test_a_job_that_can_never_start_is_cancelled_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm()
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    place.start(job(tmp_path))
    fake.squeue = f"41|wave-{TAG}-main-w1-A1|PENDING||PartitionTimeLimit\n"
    fake.scontrol = (
        f"JobId=41 JobName=wave-{TAG}-main-w1-A1 UserId=me({UID}) JobState=CANCELLED ExitCode=0:0\n"
    )
    seen = place.sessions()["w1-A1"]
    assert seen.dead and seen.ended is not None and "PartitionTimeLimit" in seen.ended
    assert ["scancel", f"--user={USER}", "41"] in fake.calls


def test_a_launch_stops_before_any_agent_when_slurm_does_not_answer(repo: Repo) -> None:
    repo.fake(
        "squeue", 'echo "slurm_load_jobs error: Unable to contact slurm controller" >&2\nexit 1\n'
    )
    repo.lane(
        "main",
        "defaults: {executor: local}\nclosure: {required_roles: []}\nplacement: slurm\n",
        {1: 'agents:\n  - {id: A1, prompt: p, executor: {local: {command: "true"}}}\n'},
    )
    result = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 1
    assert "the Slurm controller has not answered since" in result.stderr
    assert "Unable to contact slurm controller" in result.stderr  # Slurm's own words
    assert "Traceback" not in result.stderr
    assert not repo.agent_dir("main", 1, "A1").exists()


def test_stopping_a_pending_job_cancels_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(squeue=f"41|wave-{TAG}-main-w1-A1|PENDING||Resources\n")
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    assert place.signal(41, signal.SIGTERM)
    assert [c for c in fake.calls if c[0] == "scancel"] == [["scancel", f"--user={USER}", "41"]]


def test_a_percent_in_the_output_path_is_taken_literally(tmp_path: Path) -> None:
    folder = tmp_path / "100%j-done" / "%u%%x"
    argv = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO).command_line(job(folder))
    assert f"--output={tmp_path}/100%%j-done/%%u%%%%x/output.log" in argv


def test_only_this_users_jobs_of_this_checkout_are_asked_about_or_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """squeue is asked for this user's jobs only; a job of the same name that scontrol says
    another user owns is not taken for ours; another checkout's lane of the same name has
    another job name."""
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    fake = FakeSlurm(squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n")
    monkeypatch.setattr(slurm, "run_slurm", fake)
    place.start(job(tmp_path))
    assert all(f"--user={USER}" in c for c in fake.calls if c[0] in ("squeue", "scancel"))
    fake.squeue = ""  # it left the queue; scontrol knows a job of that name, not ours
    fake.scontrol = (
        f"JobId=41 JobName=wave-{TAG}-main-w1-A1 UserId=other({UID + 1}) JobState=FAILED "
        "ExitCode=1:0\n"
    )
    assert "w1-A1" not in place.sessions()  # missing, not another user's failure
    other = SlurmPlacement(PlacementSettings(kind="slurm"), "main", Path("/srv/elsewhere"))
    assert other.job_name("w1-A1") != place.job_name("w1-A1")


class SilentSlurm(FakeSlurm):
    """A controller that stops answering (``down``) and comes back; ``pings`` counts the
    cheap checks made meanwhile."""

    def __init__(self, squeue: str = "") -> None:
        super().__init__(squeue=squeue)
        self.down = False
        self.pings = 0

    def __call__(self, argv: Sequence[str], check: bool = True) -> Answer:
        if self.down:
            self.calls.append(list(argv))
            raise ControllerSilent(f"{argv[0]}: Unable to contact slurm controller")
        return super().__call__(argv, check)

    def ping(self) -> bool:
        self.pings += 1
        return not self.down


def silent_slurm(monkeypatch: pytest.MonkeyPatch, squeue: str = "") -> SilentSlurm:
    fake = SilentSlurm(squeue)
    monkeypatch.setattr(slurm, "run_slurm", fake)
    monkeypatch.setattr(slurm, "controller_up", fake.ping)
    monkeypatch.setattr(slurm, "PING_EVERY_SECONDS", 0.0)
    return fake


def test_a_silent_controller_keeps_agents_as_they_are_and_holds_submissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = silent_slurm(monkeypatch, squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n")
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO)
    assert place.start(job(tmp_path)) == 41
    assert not place.sessions(strict=True)["w1-A1"].dead
    fake.down = True
    with pytest.raises(PlacementUnreachable) as silent:
        place.sessions(strict=True)
    assert not silent.value.given_up and place.unreachable_since is not None
    assert "has not answered since" in str(silent.value)
    assert place.alive(41)  # unknown is not gone
    calls = len(fake.calls)
    later = tmp_path / "A2"
    later.mkdir()
    held = AgentJob("w1-A2", ["bash", "run.sh"], str(later), later, later / "output.log", 5)
    assert place.start(held) is None  # held, not failed: submitted once it answers
    with pytest.raises(PlacementUnreachable):
        place.sessions(strict=True)
    assert len(fake.calls) == calls  # while it is silent, only pings ask
    assert fake.pings >= 2
    fake.down = False
    fake.squeue += f"42|wave-{TAG}-main-w1-A2|PENDING||Resources\n"
    seen = place.sessions(strict=True)
    assert place.unreachable_since is None
    assert [c[0] for c in fake.calls[calls:]] == ["squeue", "sbatch"]
    assert seen["w1-A2"].queued and (later / "slurm-job").read_text() == "41\n"  # fake's id


def test_the_silence_is_told_once_whichever_command_meets_it_and_so_is_the_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A liveness probe that swallows errors (``alive``) may be the first to meet a silent
    controller: the person is told all the same, once, and told when it answers again."""
    fake = silent_slurm(monkeypatch, squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n")
    told: list[str] = []
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO, warn=told.append)
    place.start(job(tmp_path))
    fake.down = True
    place._at = -math.inf  # the cache of the last squeue is past
    assert place.alive(41)
    with pytest.raises(PlacementUnreachable):
        place.sessions(strict=True)
    assert [t.split(":")[0] for t in told] == ["placement not answering"], told
    assert "Unable to contact slurm controller" in told[0]
    fake.down = False
    place.sessions(strict=True)
    assert told[1:] == ["placement answers again: agents followed as before"]


def test_a_controller_silent_past_the_bound_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = silent_slurm(monkeypatch)
    place = SlurmPlacement(PlacementSettings(kind="slurm", unreachable_minutes=1), "main", REPO)
    fake.down = True
    with pytest.raises(PlacementUnreachable):
        place.sessions(strict=True)
    assert place.unreachable_since is not None
    place.unreachable_since -= 61
    with pytest.raises(PlacementUnreachable) as lost:
        place.sessions(strict=True)
    assert lost.value.given_up
    assert "longer than placement.unreachable_minutes (1)" in str(lost.value)
    assert "wave launch --resume" in str(lost.value)


def test_a_refused_submission_keeps_sbatch_s_words_and_is_never_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = (
        "sbatch: error: invalid partition specified: nosuch\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    )
    monkeypatch.setattr(slurm, "run_slurm", lambda argv, check=True: Answer(1, "", said))
    place = SlurmPlacement(PlacementSettings(kind="slurm", partition="nosuch"), "main", REPO)
    with pytest.raises(PlacementRefused) as refused:
        place.start(job(tmp_path))
    assert "sbatch refused the job: Invalid partition name specified" in str(refused.value)
    assert str(tmp_path / "sbatch.err") in str(refused.value)
    assert (tmp_path / "sbatch.err").read_text() == said


def test_a_look_alike_job_is_ignored_and_never_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job of the lane's name and this user's that no agent folder's slurm-job names (one
    submitted by hand, or after a crash) is not taken for an agent: not followed, not
    adopted, not cancelled; the one whose id the record holds is."""
    layout = StateLayout(tmp_path / "state", "main", repo=REPO)
    folder = layout.agent(1, "A1").dir
    folder.mkdir(parents=True)
    (folder / "slurm-job").write_text("77\n")
    fake = FakeSlurm(
        squeue=f"41|wave-{TAG}-main-w1-A1|RUNNING|node1|None\n"
        f"77|wave-{TAG}-main-w1-A1|RUNNING|node2|None\n"
        f"78|wave-{TAG}-main-w1-A2|RUNNING|node2|None\n"
    )
    monkeypatch.setattr(slurm, "run_slurm", fake)
    warned: list[str] = []
    place = SlurmPlacement(PlacementSettings(kind="slurm"), "main", REPO, layout, warned.append)
    seen = place.sessions(strict=True)
    assert set(seen) == {"w1-A1"} and seen["w1-A1"].pid == 77
    assert len(warned) == 2 and "Slurm job 41" in warned[0] and "never cancelled" in warned[0]
    place.sessions(strict=True)
    assert len(warned) == 2  # once per job
    place.remove(["w1-A1", "w1-A2"])
    assert [c for c in fake.calls if c[0] == "scancel"] == [["scancel", f"--user={USER}", "77"]]
