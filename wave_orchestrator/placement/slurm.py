"""The Slurm placement: each agent attempt is one ``sbatch`` job running the same ``run.sh``.

Jobs are named ``wave-<repo tag>-<lane>-w<n>-<id>``, and wave follows and cancels only jobs of
the calling user that it submitted: the id of each job is kept in its agent folder
(``slurm-job``), so a launcher that comes back (``--resume``) or ``wave stop`` tells its own
job from a look-alike. Following them costs one ``squeue`` per interval for every job of the
lane, plus one ``scontrol show job`` (all jobs, one call) when some vanished from it, to learn
how they ended (TIMEOUT, OUT_OF_MEMORY...). Signals go through ``scancel``.

A controller that does not answer (a restart) leaves every agent as it was: nothing is
submitted (submissions wait), nothing is failed for a missing answer, and the launcher asks
again with a cheap ``scontrol ping`` until it answers or ``placement.unreachable_minutes``
pass. A job the cluster refuses as submitted (an invalid partition...) is never resubmitted.

The nodes must see the repository and the state directory: the wrapper writes ``slurm-node``
into its agent folder when it starts, and a running job whose file never shows up here is
failed with a message saying so.

The ``sbatch`` command line is ``slurm_submission``'s; reading what ``squeue`` and ``scontrol``
answer, ``slurm_queue``'s; running the commands and naming their failures, ``slurm_commands``'.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal as signals
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..definitions.model import PlacementSettings
from ..errors import PlacementRefused, PlacementUnreachable, SlurmError
from ..state.fsutil import read_text, write_atomic
from ..state.layout import AGENT_SESSION_RE, StateLayout, repo_tag
from .base import AgentJob, HereDefaults, PaneInfo, start_each
from .slurm_commands import (
    Answer,
    ControllerSilent,
    controller_up,
    preflight,
    run_slurm,
    submit_error,
)
from .slurm_queue import QUEUED_STATES, finished_jobs, queued_jobs, squeue_argv
from .slurm_submission import sbatch_argv

CACHE_SECONDS = 1.0  # one squeue answers every question asked within this long
SHARED_FS_SECONDS = 30.0  # how long a running job may take to show its start in its folder
WIND_DOWN_SECONDS = 5.0  # a finished wrapper's job leaves the queue by itself within this
PING_EVERY_SECONDS = 5.0  # while the controller is silent, how often it is pinged
NODE_FILE = "slurm-node"  # what the wrapper writes at start: the node it runs on
JOB_FILE = "slurm-job"  # what the launcher writes at submission: the job's id
SBATCH_ANSWER = "sbatch.err"  # sbatch's own words when it refused the job
NOT_SHARED = "NOT_SHARED"


class SlurmPlacement(HereDefaults):
    kind = "slurm"
    queues = True

    def __init__(
        self,
        settings: PlacementSettings,
        lane: str,
        repo: Path,
        layout: StateLayout | None = None,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.settings = settings
        # wave-<repo tag>-<lane>-w<n>-<agent>: two checkouts with a lane of the same name
        # never share a job name, and only this user's jobs are ever asked about or touched.
        self.prefix = f"wave-{repo_tag(repo)}-{lane}-"
        self.layout = layout  # where each agent folder's slurm-job says which job is ours
        self.warn = warn
        self.uid = os.getuid()
        self.user = _user_name(self.uid)
        self.jobs: dict[str, int] = {}  # session -> job id, of every job of ours seen
        self.owned: set[int] = set()  # job ids submitted here or named by their slurm-job
        self.foreign: set[int] = set()  # job ids of look-alikes, ignored (warned once)
        self.dirs: dict[str, Path] = {}  # session -> agent folder, for the shared-fs check
        self.running_since: dict[str, float] = {}  # session -> first seen running (monotonic)
        self.held: dict[str, AgentJob] = {}  # submissions waiting for a silent controller
        self.unreachable_since: float | None = None  # wall clock: the controller went silent
        self._pinged = -math.inf
        self._live: dict[str, PaneInfo] = {}
        self._ended: dict[str, PaneInfo] = {}
        self._at = -math.inf

    # -- commands -----------------------------------------------------------------------
    def _run(self, argv: Sequence[str], check: bool = True) -> str:
        return self._ask(argv, check).out

    def _ask(self, argv: Sequence[str], check: bool = True) -> Answer:
        """One Slurm command. While the controller is known to be silent, a ping (which fails
        at once) stands in for the command (which would wait ~MessageTimeout first)."""
        if self.unreachable_since is not None and not self._controller_back():
            raise self._unreachable()
        try:
            return run_slurm(argv, check=check)
        except ControllerSilent as exc:
            if self.unreachable_since is None:  # told once, whichever command met it first
                self.unreachable_since = time.time()
                self.warn(f"placement not answering: agents kept as they are ({exc})")
            self._pinged = time.monotonic()
            raise self._unreachable(str(exc)) from exc

    def _controller_back(self) -> bool:
        now = time.monotonic()
        if now - self._pinged < PING_EVERY_SECONDS:
            return False
        self._pinged = now
        if controller_up():
            self.unreachable_since = None
            self.warn("placement answers again: agents followed as before")
            return True
        return False

    def _unreachable(self, words: str = "") -> PlacementUnreachable:
        since = self.unreachable_since or time.time()
        bound = self.settings.unreachable_minutes
        given_up = time.time() - since > bound * 60
        clock = time.strftime("%H:%M:%S", time.localtime(since))
        said = f"the Slurm controller has not answered since {clock}"
        if given_up:
            said += (
                f", longer than placement.unreachable_minutes ({bound:g}); its jobs may still "
                "run: see `squeue --me` once it answers, and `wave launch --resume` adopts them"
            )
        elif words:
            said += f" ({words})"
        return PlacementUnreachable(said, since, given_up)

    def job_name(self, session: str) -> str:
        return self.prefix + session

    def command_line(self, job: AgentJob) -> list[str]:
        return sbatch_argv(self.settings, job, self.job_name(job.session))

    # -- the seam ---------------------------------------------------------------------------
    def check(self) -> None:
        """Before anything is launched: the Slurm commands are there, the controller answers
        (one squeue), and the partition, account and QOS the lane names exist."""
        self._refresh(force=True)
        problems, notes = self.preflight()
        for note in notes:
            self.warn(note)
        if problems:
            raise PlacementRefused("; ".join(problems))

    def preflight(self) -> tuple[list[str], list[str]]:
        """(problems, notes): the lane's partition, account and QOS as the cluster knows them."""
        return preflight(self.settings, self.user)

    def start(self, job: AgentJob) -> int | None:
        """Submit ``job``; None when the controller is silent: it is held (shown queued) and
        submitted once the controller answers again."""
        for name in (NODE_FILE, JOB_FILE, SBATCH_ANSWER):
            (job.agent_dir / name).unlink(missing_ok=True)
        self.dirs[job.session] = job.agent_dir
        self._ended.pop(job.session, None)
        self.running_since.pop(job.session, None)
        try:
            return self._submit(job)
        except PlacementUnreachable:
            self.held[job.session] = job
            self._live[job.session] = PaneInfo(job.session, False, None, None, queued=True)
            return None

    def start_many(self, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        return start_each(self, jobs)  # one sbatch per job: Slurm has no cheaper burst

    def _submit(self, job: AgentJob) -> int:
        answer = self._ask(self.command_line(job), check=False)
        if answer.code != 0:  # sbatch's own words kept: the agent's log never existed
            kept = job.agent_dir / SBATCH_ANSWER
            write_atomic(kept, answer.err + answer.out)
            error = submit_error(answer)
            raise type(error)(f"{error} (sbatch's answer: {kept})")
        out = answer.out.strip()
        job_id = out.split(";", 1)[0]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch answered {out!r}, not a job id")
        write_atomic(job.agent_dir / JOB_FILE, f"{job_id}\n")
        self.jobs[job.session] = int(job_id)
        self.owned.add(int(job_id))
        self._live[job.session] = PaneInfo(job.session, False, None, int(job_id), queued=True)
        return int(job_id)

    def _submit_held(self) -> None:
        """The controller answers again: what waited for it is submitted, in order."""
        for session, job in list(self.held.items()):
            try:
                self._submit(job)
            except PlacementUnreachable:
                return
            except SlurmError as exc:
                ended = f"NOT_SUBMITTED ({exc})"
                self._ended[session] = PaneInfo(session, True, None, None, ended=ended)
                self._live.pop(session, None)
            del self.held[session]

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every job of ours squeue shows, those that just ended (as dead panes), and those
        held for a silent controller (as queued)."""
        try:
            self._refresh(force=True)
        except SlurmError:
            if strict:
                raise
            return {}
        return {**self._ended, **self._live}

    def _refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._at < CACHE_SECONDS:
            return
        out = self._run(squeue_argv(self.user))
        live: dict[str, PaneInfo] = {}
        never: set[str] = set()
        for job in queued_jobs(out, self.prefix):
            session = job.session
            if not self._ours(session, job.job_id):
                continue
            if job.never_starts:
                self._cancel([job.job_id])
                ended = f"PENDING ({job.reason}: it cannot start as submitted)"
                self._ended[session] = PaneInfo(session, True, None, job.job_id, ended=ended)
                never.add(session)
                continue
            live[session] = self._live_info(session, job.job_id, job.state, job.node, now)
        for session in self.held:
            live[session] = PaneInfo(session, False, None, None, queued=True)
        vanished = [s for s in self._live if s not in live and s not in never]
        gone = self._ended_jobs(vanished) if vanished else {}  # may raise: nothing updated
        self._live, self._at = live, now
        self._ended.update(gone)
        for session, info in live.items():
            if info.pid is not None:
                self.jobs[session] = info.pid
        if self.held:
            self._submit_held()

    def _ours(self, session: str, job_id: int) -> bool:
        """Whether a job of this lane's name and this user's is one wave submitted here: its
        agent folder's slurm-job names it. A look-alike (submitted by hand, by a script, by
        another tool) is ignored, never waited on nor cancelled."""
        if job_id in self.owned or self.layout is None:
            return True
        if job_id in self.foreign:
            return False
        if self._recorded_job(session) == job_id:
            self.owned.add(job_id)
            return True
        self.foreign.add(job_id)
        self.warn(
            f"Slurm job {job_id} ({self.job_name(session)}) was not submitted by this lane "
            f"(no {JOB_FILE} names it): ignored, never cancelled"
        )
        return False

    def _recorded_job(self, session: str) -> int | None:
        if self.layout is None or not AGENT_SESSION_RE.fullmatch(session):
            return None
        wave, agent = session[1:].split("-", 1)
        try:
            text = read_text(self.layout.agent(int(wave), agent).dir / JOB_FILE, limit=64)
        except (OSError, ValueError):
            return None
        return int(text.strip()) if text.strip().isdigit() else None

    def _live_info(self, session: str, job_id: int, state: str, node: str, now: float) -> PaneInfo:
        queued = state in QUEUED_STATES
        if not queued and state == "RUNNING":
            since = self.running_since.setdefault(session, now)
            folder = self.dirs.get(session)
            if (
                folder is not None
                and now - since > SHARED_FS_SECONDS
                and not (folder / NODE_FILE).exists()
            ):
                self._cancel([job_id])
                return PaneInfo(session, True, None, job_id, ended=_not_shared(folder), host=node)
        return PaneInfo(session, False, None, job_id, queued=queued, host=node or None)

    def _ended_jobs(self, sessions: list[str]) -> dict[str, PaneInfo]:
        """How the jobs of ``sessions`` ended, from one ``scontrol show job`` of every job.
        One that slurmctld already forgot has no entry: its session is missing."""
        wanted = {self.job_name(s): s for s in sessions}
        out = self._run(["scontrol", "--oneliner", "show", "job"], check=False)
        found: dict[str, PaneInfo] = {}
        for job in finished_jobs(out, self.uid):
            session = wanted.get(job.name)
            if session is None or self.jobs.get(session) not in (None, job.job_id):
                continue  # not asked about, or an earlier attempt's job of the same name
            ended = None if job.state == "COMPLETED" else job.state
            found[session] = PaneInfo(
                session, True, job.status, job.job_id, ended=ended, host=job.node
            )
        return found

    def remove(self, names: Iterable[str]) -> None:
        """Cancel the jobs of ``names``; one whose wrapper wrote its status is winding down
        on its own and is given WIND_DOWN_SECONDS first (its job ends COMPLETED, not
        CANCELLED, in the cluster's accounting)."""
        names = list(names)
        for name in names:
            if self.held.pop(name, None) is not None:  # never submitted: nothing to cancel
                self._live.pop(name, None)
            self._ended.pop(name, None)
        names = [n for n in names if n in self.jobs]
        done = {n for n in names if (d := self.dirs.get(n)) and (d / "status.json").exists()}
        deadline = time.monotonic() + WIND_DOWN_SECONDS
        while done and time.monotonic() < deadline and self._any_live(done):
            time.sleep(0.2)
            self._at = -math.inf
        ids = [self.jobs[n] for n in names if n in self._live]
        if ids:
            self._cancel(ids)

    def _any_live(self, names: set[str]) -> bool:
        try:
            self._refresh()
        except SlurmError:
            return False
        return any(n in self._live for n in names)

    def _cancel(self, ids: Sequence[int]) -> None:
        """Best effort: a silent controller cancels nothing (the job's --time still ends it)."""
        with contextlib.suppress(SlurmError):
            self._run(["scancel", f"--user={self.user}", *map(str, ids)], check=False)
        self._at = -math.inf

    def signal(self, handle: int, signum: int) -> bool:
        """TERM: the batch script and every step get it (the wrapper writes its status);
        KILL, or any signal to a job still pending: the job is cancelled."""
        if not self.alive(handle):
            return False
        queued = any(i.pid == handle and i.queued for i in self._live.values())
        if signum == signals.SIGKILL or queued:  # a pending job has nothing to signal
            self._cancel([handle])
        else:
            # With tmux in the job, only its batch script is signalled: it hands the signal
            # to the wrapper in the pane, then ends the job's tmux server itself.
            name = signals.Signals(signum).name.removeprefix("SIG")
            scope = "--batch" if self.settings.tmux else "--full"
            argv = ["scancel", f"--user={self.user}", f"--signal={name}", scope, str(handle)]
            with contextlib.suppress(SlurmError):
                self._run(argv, check=False)
        return True

    def alive(self, handle: int) -> bool:
        try:
            self._refresh()
        except SlurmError:
            return True  # unknown is not gone: asked again next round
        return any(i.pid == handle and not i.dead for i in self._live.values())

    def wrapper_running(self, handle: int) -> bool:
        return self.alive(handle)

    def attach_argv(self, session: str, output_log: Path) -> list[str]:
        job = self.jobs.get(session)
        if job is None:
            info = self.sessions().get(session)
            job = info.pid if info is not None else None
        if job is None:
            raise SlurmError(f"no Slurm job {self.job_name(session)!r} is running")
        srun = ["srun", f"--jobid={job}", "--overlap", "--pty"]
        if self.settings.tmux:  # env -u TMUX: attaching from inside a tmux of one's own
            tmux = ["tmux", "-L", job_socket(job), "attach", "-t", f"={session}"]
            return [*srun, "env", "-u", "TMUX", *tmux]
        return [*srun, "tail", "-f", str(output_log)]


def _user_name(uid: int) -> str:
    """The login Slurm knows this user by (its commands take names; the uid without one)."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def job_socket(job_id: int) -> str:
    """The tmux socket of a job's own server (placement.tmux); run.sh names it the same."""
    return f"wave-{job_id}"


def _not_shared(folder: Path) -> str:
    return (
        f"{NOT_SHARED}: the job ran but never wrote {folder / NODE_FILE}; the repository and "
        "the lane's state directory must be on a filesystem the nodes share "
        "(see docs/placement.md)"
    )
