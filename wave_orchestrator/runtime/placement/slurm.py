"""The Slurm placement: each agent attempt is one ``sbatch`` job running the same ``run.sh``.

Jobs are named ``wave-<lane>-w<n>-<id>``, so a launcher that comes back (``--resume``) or
``wave stop`` finds them by name. Following them costs one ``squeue`` per interval for every
job of the lane, plus one ``scontrol show job`` (all jobs, one call) when some vanished from
it, to learn how they ended (TIMEOUT, OUT_OF_MEMORY...). Signals go through ``scancel``.

The nodes must see the repository and the state directory: the wrapper writes ``slurm-node``
into its agent folder when it starts, and a running job whose file never shows up here is
failed with a message saying so.
"""

from __future__ import annotations

import math
import os
import shutil
import signal as signals
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...definitions.model import PlacementSettings
from ...errors import SlurmError
from ...state.layout import repo_tag
from .base import AgentJob, PaneInfo

TIME_MARGIN_MINUTES = 2  # --time is the budget plus this: the launcher's own kill comes first
CACHE_SECONDS = 1.0  # one squeue answers every question asked within this long
SHARED_FS_SECONDS = 30.0  # how long a running job may take to show its start in its folder
WIND_DOWN_SECONDS = 5.0  # a finished wrapper's job leaves the queue by itself within this
COMMAND_SECONDS = 30.0  # a Slurm command that takes longer is a failure
NODE_FILE = "slurm-node"  # what the wrapper writes at start: the node it runs on
LIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
)
NOT_SHARED = "NOT_SHARED"
# Why a pending job will never start as submitted: it is cancelled and its agent fails, rather
# than wait queued for ever.
NEVER_STARTS = frozenset(
    {
        "PartitionTimeLimit",
        "PartitionNodeLimit",
        "AssocMaxWallDurationPerJobLimit",
        "QOSMaxWallDurationPerJobLimit",
        "InvalidAccount",
        "InvalidQOS",
        "BadConstraints",
        "DependencyNeverSatisfied",
    }
)


def slurm_literal(path: Path) -> str:
    """A path for an sbatch filename pattern, taken literally: Slurm expands ``%j``, ``%u``,
    ``%x``, ``%%``... in ``--output``, so a repository under ``100%j-done/`` would send the
    log to a folder that does not exist."""
    return str(path).replace("%", "%%")


def time_limit(budget_minutes: float) -> int:
    """Slurm's --time in whole minutes: the budget plus a margin."""
    return max(1, math.ceil(budget_minutes)) + TIME_MARGIN_MINUTES


class SlurmPlacement:
    kind = "slurm"
    queues = True

    def __init__(self, settings: PlacementSettings, lane: str, repo: Path) -> None:
        self.settings = settings
        # wave-<repo tag>-<lane>-w<n>-<agent>: two checkouts with a lane of the same name
        # never share a job name, and only this user's jobs are ever asked about or touched.
        self.prefix = f"wave-{repo_tag(repo)}-{lane}-"
        self.uid = os.getuid()
        self.user = _user_name(self.uid)
        self.jobs: dict[str, int] = {}  # session -> job id, of every job seen or submitted
        self.dirs: dict[str, Path] = {}  # session -> agent folder, for the shared-fs check
        self.running_since: dict[str, float] = {}  # session -> first seen running (monotonic)
        self._live: dict[str, PaneInfo] = {}
        self._ended: dict[str, PaneInfo] = {}
        self._at = -math.inf

    # -- commands -----------------------------------------------------------------------
    def _run(self, argv: Sequence[str], check: bool = True) -> str:
        if shutil.which(argv[0]) is None:
            raise SlurmError(
                f"{argv[0]} not found: the Slurm placement needs the Slurm client commands "
                "(sbatch, squeue, scontrol, scancel) on PATH"
            )
        try:
            done = subprocess.run(
                list(argv), capture_output=True, text=True, timeout=COMMAND_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"{argv[0]} failed: {exc}") from exc
        if check and done.returncode != 0:
            words = (done.stderr or done.stdout).strip().splitlines()
            raise SlurmError(f"{argv[0]} failed ({done.returncode}): {' '.join(words[-3:])}")
        return done.stdout

    def job_name(self, session: str) -> str:
        return self.prefix + session

    def command_line(self, job: AgentJob) -> list[str]:
        s = self.settings
        limit = time_limit(job.budget_minutes)
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={self.job_name(job.session)}",
            f"--time={limit}",
            f"--cpus-per-task={job.cpus}",
            "--nodes=1",
            "--ntasks=1",
            f"--output={slurm_literal(job.output_log)}",
            "--open-mode=append",
            f"--chdir={job.cwd}",
            f"--export=ALL,WAVE_PLACEMENT=slurm,WAVE_TIME_LIMIT_SECONDS={limit * 60}"
            + (f",WAVE_SLURM_TMUX=1,WAVE_SESSION={job.session}" if s.tmux else ""),
        ]
        if job.mem:
            argv.append(f"--mem={job.mem}")
        for flag, value in (("partition", s.partition), ("account", s.account), ("qos", s.qos)):
            if value:
                argv.append(f"--{flag}={value}")
        return [*argv, *s.extra, *job.argv[1:]]  # job.argv is ["bash", run.sh]

    # -- the seam ---------------------------------------------------------------------------
    def check(self) -> None:
        """Before anything is launched: the Slurm commands are there and the controller
        answers (one squeue)."""
        self._refresh(force=True)

    def start(self, job: AgentJob) -> int | None:
        (job.agent_dir / NODE_FILE).unlink(missing_ok=True)
        out = self._run(self.command_line(job)).strip()
        job_id = out.split(";", 1)[0]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch answered {out!r}, not a job id")
        self.jobs[job.session] = int(job_id)
        self.dirs[job.session] = job.agent_dir
        self._live[job.session] = PaneInfo(job.session, False, None, int(job_id), queued=True)
        self._ended.pop(job.session, None)
        self.running_since.pop(job.session, None)
        return int(job_id)

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every job of the lane squeue shows, and those that just ended (as dead panes)."""
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
        out = self._run(["squeue", f"--user={self.user}", "--noheader", "--array",
                         "--format=%i|%j|%T|%N|%r"])  # fmt: skip
        live: dict[str, PaneInfo] = {}
        never: set[str] = set()
        for line in out.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 5 or not parts[1].startswith(self.prefix) or not parts[0].isdigit():
                continue
            job_id, name, state, node, reason = parts
            session = name.removeprefix(self.prefix)
            if state not in LIVE_STATES:
                continue
            if state == "PENDING" and reason in NEVER_STARTS:
                self._cancel([int(job_id)])
                ended = f"PENDING ({reason}: it cannot start as submitted)"
                self._ended[session] = PaneInfo(session, True, None, int(job_id), ended=ended)
                never.add(session)
                continue
            live[session] = self._live_info(session, int(job_id), state, node, now)
        vanished = [s for s in self._live if s not in live and s not in never]
        self._live, self._at = live, now
        for session, info in live.items():
            self.jobs[session] = info.pid or self.jobs.get(session, 0)
        if vanished:
            self._ended.update(self._ended_jobs(vanished))

    def _live_info(self, session: str, job_id: int, state: str, node: str, now: float) -> PaneInfo:
        queued = state in ("PENDING", "CONFIGURING", "REQUEUED")
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
        for line in out.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            session = wanted.get(fields.get("JobName", ""))
            if session is None or not fields.get("JobId", "").isdigit():
                continue
            if not fields.get("UserId", "").endswith(f"({self.uid})"):
                continue  # another user's job of that name: never ours to follow
            job_id = int(fields["JobId"])
            if self.jobs.get(session) not in (None, job_id):
                continue  # an earlier attempt's job of the same name
            state = fields.get("JobState", "")
            code, _, sig = fields.get("ExitCode", "").partition(":")
            status = 128 + int(sig) if sig.isdigit() and int(sig) else None
            if status is None and code.isdigit():
                status = int(code)
            ended = None if state == "COMPLETED" else state
            found[session] = PaneInfo(
                session, True, status, job_id, ended=ended, host=fields.get("NodeList")
            )
        return found

    def remove(self, names: Iterable[str]) -> None:
        """Cancel the jobs of ``names``; one whose wrapper wrote its status is winding down
        on its own and is given WIND_DOWN_SECONDS first (its job ends COMPLETED, not
        CANCELLED, in the cluster's accounting)."""
        names = [n for n in names if n in self.jobs]
        for name in names:
            self._ended.pop(name, None)
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
