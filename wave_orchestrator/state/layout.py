"""The one place that knows the state-dir layout, tmux socket and session names."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import UsageError
from ..names import AGENT_ID_RE, LANE_NAME_RE
from .fsutil import UnsafePath, register_state_root

# tmux -L NAME makes the socket /tmp/tmux-<uid>/NAME: a `/` or `..` would put it elsewhere.
SOCKET_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def agent_token(socket: str, session: str) -> str:
    """``WAVE_AGENT_TOKEN`` of an agent: every process it starts inherits it, so what it left
    running is found whatever its session or group (``placement/processes.py``)."""
    return f"{socket}/{session}"


def socket_name(lane: str, repo: Path) -> str:
    """``wave-<lane>-<sha1(repo)[:8]>``: one private tmux server per repository and lane.

    ``WAVE_TMUX_SOCKET`` overrides it (tests give each run its own server this way).
    """
    override = os.environ.get("WAVE_TMUX_SOCKET")
    if override:
        if not SOCKET_NAME_RE.fullmatch(override):
            raise UsageError(
                f"WAVE_TMUX_SOCKET={override!r} is not a plain socket name (expected to match "
                f"{SOCKET_NAME_RE.pattern}: tmux keeps it in its own folder, never a path)"
            )
        return override
    return f"wave-{lane}-{repo_tag(repo)}"


def repo_tag(repo: Path) -> str:
    """``sha1(repo)[:8]``: what tells two checkouts apart in names outside the state dir (the
    tmux socket, Slurm job names), whatever the lane is called."""
    import hashlib  # OpenSSL's loading costs every command that never names a socket

    return hashlib.sha1(os.fsencode(repo.resolve())).hexdigest()[:8]


def session_name(wave: int, agent_id: str) -> str:
    """``w<n>-<id>``; ids are validated, because tmux silently rewrites `.` and `:`."""
    if not AGENT_ID_RE.fullmatch(agent_id):
        raise ValueError(f"invalid agent id {agent_id!r}")
    return f"w{wave}-{agent_id}"


def resolve_state_dir(repo: Path, lane: str, configured: str | None) -> Path:
    """``WAVE_STATE_DIR``, else lane.yaml's ``state_dir``, else ``<repo>/.wave/<lane>``.

    ``WAVE_STATE_DIR`` names the lane's state dir itself: agents get it set that way, so a `wave`
    command an agent runs finds the same folder as its launcher.
    """
    env = os.environ.get("WAVE_STATE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    if configured:
        return (repo / Path(configured).expanduser()).resolve()
    return lane_home(repo, lane)


def lane_home(repo: Path, lane: str) -> Path:
    """``<repo>/.wave/<lane>``: the default state dir, and where the lane lock always lives.
    Inside the repository, so neither folder may be a link out of it."""
    home = repo / ".wave" / lane
    for folder in (home.parent, home):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise UnsafePath(
                f"{folder} is a symbolic link or not a folder; wave keeps a lane's state in a "
                "real folder (set state_dir in lane.yaml or WAVE_STATE_DIR to keep it elsewhere)"
            )
    return home


AGENT_SESSION_RE = re.compile(r"w\d+-[A-Za-z][A-Za-z0-9_-]{0,31}")
DASHBOARD_SESSION = "dashboard"
LAUNCHER_SESSION = "launcher"


# NamedTuples, not dataclasses: immutable values all the same, and `wave status` and `wave lanes`
# build them without loading `dataclasses`, which brings `inspect` (~10 ms of their start-up).


class AgentPaths(NamedTuple):
    """The files of one agent's attempt folder, named in one place."""

    dir: Path

    @property
    def prompt(self) -> Path:
        return self.dir / "prompt.md"

    @property
    def run_script(self) -> Path:
        return self.dir / "run.sh"

    @property
    def output_log(self) -> Path:
        return self.dir / "output.log"

    @property
    def status(self) -> Path:
        return self.dir / "status.json"

    @property
    def backoff(self) -> Path:
        """Written by the wrapper while it sleeps on a rate limit; silence then is not a stall."""
        return self.dir / "backoff.json"

    @property
    def summary(self) -> Path:
        """The attempt's execution summary (runtime.summaries): what a gate decision read."""
        return self.dir / "summary.json"

    @property
    def launch_record(self) -> Path:
        """Which attempt and executor were launched, and when: what `--resume` adopts."""
        return self.dir / "launch.json"

    @property
    def preview(self) -> Path:
        return self.dir / "launch-preview.json"

    @property
    def rerun_request(self) -> Path:
        """`wave rerun` of a running wave asks its launcher here: beside the wave's agent
        folders, not in this one (which the agent writes to). The answer goes next to it."""
        return self.dir.parent.parent / "reruns" / f"{self.dir.name}.json"

    @property
    def rerun_answer(self) -> Path:
        return self.dir.parent.parent / "reruns" / f"{self.dir.name}.answer.json"

    @property
    def skills(self) -> Path:
        """Its skill bundles as wave gives them (the files: agents/skills_projection.py)."""
        return self.dir / "skills"

    def sibling(self, agent_id: str) -> AgentPaths:
        """The folder of another agent of the same wave run."""
        if not AGENT_ID_RE.fullmatch(agent_id):
            raise ValueError(f"invalid agent id {agent_id!r}")
        return AgentPaths(self.dir.parent / agent_id)

    def attempt_log(self, attempt: int, suffix: str = "") -> Path:
        return self.dir / f"attempt-{attempt}{suffix}.log"

    def attempt_status(self, attempt: int, suffix: str = "") -> Path:
        return self.dir / f"attempt-{attempt}{suffix}.status.json"


class WaveFolder(NamedTuple):
    """One run's folder of a wave (the current one, or an earlier run set aside)."""

    dir: Path

    def agent(self, agent_id: str) -> AgentPaths:
        if not AGENT_ID_RE.fullmatch(agent_id):
            raise ValueError(f"invalid agent id {agent_id!r}")
        return AgentPaths(self.dir / "agents" / agent_id)


class Outboxes(NamedTuple):
    """One wave's outboxes: each sandboxed agent appends its posts and questions to its own
    files here (bound writable into its sandbox alone); the launcher merges them under its
    name. ``progress`` (how far each was merged) lies beside the folder, not in it."""

    dir: Path

    @classmethod
    def of_log(cls, log: Path) -> Outboxes:
        """The outboxes of the wave whose coordination log is ``log`` (``wave-<n>.jsonl``)."""
        return cls(log.with_name(log.name.removesuffix(".jsonl") + ".outbox"))

    def coordination(self, agent_id: str) -> Path:
        return self._file(agent_id, ".jsonl")  # `wave coord` (and `wave desk`) posts

    def questions(self, agent_id: str) -> Path:
        return self._file(agent_id, ".questions.jsonl")  # `wave feedback ask`: its questions

    def _file(self, agent_id: str, suffix: str) -> Path:
        if not AGENT_ID_RE.fullmatch(agent_id):
            raise ValueError(f"invalid agent id {agent_id!r}")
        return self.dir / (agent_id + suffix)

    @property
    def progress(self) -> Path:
        return self.dir.with_name(self.dir.name.removesuffix("outbox") + "merged.json")

    def set_aside(self, stamp: str) -> None:
        """A new run of the wave starts with empty outboxes: the old run's go beside its log."""
        for path in (self.dir, self.progress):
            if path.exists():
                path.rename(path.with_name(path.name.replace(".", f".{stamp}.", 1)))

    @staticmethod
    def owner(name: str) -> tuple[str, bool] | None:
        """The agent an outbox file is of, by its name, and whether it holds questions."""
        agent, _, kind = name.partition(".")
        ok = kind in ("jsonl", "questions.jsonl") and AGENT_ID_RE.fullmatch(agent)
        return (agent, kind != "jsonl") if ok else None


class _LayoutFields(NamedTuple):
    root: Path
    lane: str
    dry_run: bool = False
    repo: Path | None = None


class StateLayout(_LayoutFields):
    """Paths under one lane's state dir; ``dry_run`` selects the ``dry-run/`` mirror.
    ``repo`` places the live lock in ``<repo>/.wave/<lane>`` whatever the state dir."""

    __slots__ = ()

    def __new__(
        cls, root: Path, lane: str, dry_run: bool = False, repo: Path | None = None
    ) -> StateLayout:
        if not LANE_NAME_RE.fullmatch(lane):
            raise ValueError(f"invalid lane name {lane!r}")
        register_state_root(root)
        if repo is not None:
            register_state_root(repo / ".wave" / lane)
        return super().__new__(cls, root, lane, dry_run, repo)

    def _replace(self, **changes: Any) -> StateLayout:
        """A changed copy is checked as a new layout is (the tuple's own copy is not)."""
        return StateLayout(**{**self._asdict(), **changes})

    @property
    def base(self) -> Path:
        return self.root / "dry-run" if self.dry_run else self.root

    @property
    def lock(self) -> Path:
        """One launcher per repository and lane (they share a tmux server): the live lock
        does not move with ``WAVE_STATE_DIR`` or ``state_dir``; a dry run's has its own."""
        if self.dry_run or self.repo is None:
            return self.base / "launcher.lock"
        return lane_home(self.repo, self.lane) / "launcher.lock"

    @property
    def run_state(self) -> Path:
        return self.root / "run-state.json"

    @property
    def launcher_log(self) -> Path:
        return self.base / "launcher.log"

    @property
    def launcher_output(self) -> Path:
        """What a detached launcher prints (`wave logs --launcher`), appended run after run."""
        return self.root / "launcher.out"

    @property
    def events(self) -> Path:
        return self.base / "events.jsonl"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def verdicts(self) -> Path:
        """What the gates made of each wave attempt (`wave metrics`: accepted beside success);
        apart from metrics.jsonl, whose lines stay one record per agent attempt."""
        return self.root / "verdicts.jsonl"

    @property
    def accounts(self) -> Path:
        """One backoff file per account: a rate limit one agent met, every wrapper of the
        same login waits out (run.sh)."""
        return self.base / "accounts"

    @property
    def governor(self) -> Path:
        """Accounts waiting for a usage limit's reset and the run's spend (governor/)."""
        return self.base / "governor.json"

    @property
    def placement_record(self) -> Path:
        """Where the last launch placed its agents (``{"kind": "slurm"}``), for `wave stop`
        and `wave attach`, which must find them without the lane's files."""
        return self.root / "placement.json"

    @property
    def agent_env(self) -> Path:
        """The launcher's environment, sourced by every run.sh: a tmux server started by an
        earlier launcher would otherwise hand agents its own, older environment."""
        return self.base / "agent-env.sh"

    @property
    def agent_bin(self) -> Path:
        """The private folder put first on every agent's PATH: links to `wave` and
        `wave-demo-agent`, so agents reach those without wave's own virtualenv on their PATH."""
        return self.base / "bin"

    @property
    def desk(self) -> Path:
        return self.root / "desk.sqlite3"

    def context7_cache(self, selection: str) -> Path:
        """Library docs fetched from Context7 for one selection (its digest), kept a day."""
        return self.root / "context7" / f"{selection}.json"

    @property
    def launch_preview(self) -> Path:
        return self.base / "launch-preview.json"

    def wave_dir(self, wave: int) -> Path:
        return self.base / "waves" / f"wave-{wave}"

    def set_aside_wave(self, wave: int, stamp: str) -> str | None:
        """Move an earlier run's folder of ``wave`` to ``wave-<n>.<stamp>[-k]``, out of a new
        run's way and never overwritten; returns the suffix it got (None: nothing to move)."""
        folder = self.wave_dir(wave)
        if not folder.exists():
            return None
        suffix, n = stamp, 1
        while folder.with_name(f"{folder.name}.{suffix}").exists():
            n += 1
            suffix = f"{stamp}-{n}"
        folder.rename(folder.with_name(f"{folder.name}.{suffix}"))
        return suffix

    def earlier_run(self, wave: int, suffix: str) -> WaveFolder:
        """The folder ``set_aside_wave`` moved an earlier run of ``wave`` to."""
        folder = self.wave_dir(wave)
        return WaveFolder(folder.with_name(f"{folder.name}.{suffix}"))

    @property
    def component_matrix(self) -> Path:
        """The current level of each component the lane's waves promote (runtime.components)."""
        return self.root / "components.json"

    def dashboard(self, wave: int) -> Path:
        return self.wave_dir(wave) / "dashboard.json"

    def agents_dir(self, wave: int) -> Path:
        return self.wave_dir(wave) / "agents"

    def agent(self, wave: int, agent_id: str) -> AgentPaths:
        return WaveFolder(self.wave_dir(wave)).agent(agent_id)

    @property
    def worktrees(self) -> Path:
        """Agent worktrees (``isolation: worktree``): ``w<n>-<id>`` and ``w<n>-integration``."""
        return self.root / "worktrees"

    @property
    def branch_record(self) -> Path:
        """The commit wave left each integration branch at (``isolation: worktree``): what a
        later run finds past it is a person's, and is moved aside rather than reset."""
        return self.root / "branches.json"

    def kept_reports(self, wave: int) -> Path:
        """Closure reports copied out of the integration worktree before it is removed."""
        return self.wave_dir(wave) / "reports"

    @property
    def coordination_dir(self) -> Path:
        """The coordination log and its projections (board, summary, inboxes), per wave."""
        return self.root / "coordination"

    def coordination_log(self, wave: int) -> Path:
        return self.coordination_dir / f"wave-{wave}.jsonl"

    def outboxes(self, wave: int) -> Outboxes:
        """The wave's per-agent outboxes: what sandboxed agents write, for the launcher."""
        return Outboxes.of_log(self.coordination_log(wave))

    def board(self, wave: int) -> Path:
        return self.coordination_dir / f"wave-{wave}.board.md"

    def shared_summary(self, wave: int) -> Path:
        return self.coordination_dir / f"wave-{wave}.summary.md"

    def owners(self, wave: int) -> Path:
        """Each agent's owned paths, written at wave start: inboxes gather items touching them."""
        return self.coordination_dir / f"wave-{wave}.owners.json"

    def inbox(self, wave: int, agent_id: str) -> Path:
        if not AGENT_ID_RE.fullmatch(agent_id):
            raise ValueError(f"invalid agent id {agent_id!r}")
        return self.coordination_dir / f"wave-{wave}.inbox" / f"{agent_id}.md"

    @property
    def feedback(self) -> Path:
        """Questions to a person, lane-wide: ``wave feedback`` and the launcher read it."""
        return self.root / "feedback.jsonl"
