"""The placement seam: what the launcher needs from wherever an agent's ``run.sh`` runs.

One interface starts an agent, tells whether it is still there (for every agent at once, in
one call), signals it, removes it, and says how a person attaches to it. ``local`` is tmux on
this machine (``local.py``); ``slurm`` is one batch job per attempt (``slurm.py``); ``ssh`` is
tmux on the lane's SSH hosts (``ssh.py``). The pool, the reaper and the wave runner see only
this; planning, budgets, gates and state do not change with the placement.

An agent is named by its session name (``w<n>-<id>``) everywhere; ``handle`` is what the
placement signals: the pane's process group locally, the job id on Slurm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from ..definitions.model import EMPTY
from ..errors import PlacementError
from ..state.lifecycle import AgentState


class PaneInfo(NamedTuple):
    """One agent as its placement sees it (a tmux pane, or a Slurm job)."""

    session: str
    dead: bool  # its wrapper has exited (the pane remains, or the job ended)
    dead_status: int | None
    pid: int | None  # the handle: the pane's process group, or the Slurm job id
    queued: bool = False  # waiting for resources (Slurm PENDING): its budget has not started
    ended: str | None = None  # how the scheduler ended it (TIMEOUT, OUT_OF_MEMORY, ...)
    host: str | None = None  # where it runs (a Slurm node)


class AgentJob(NamedTuple):
    """What a placement needs to start one attempt of one agent."""

    session: str
    argv: Sequence[str]
    cwd: str
    agent_dir: Path
    output_log: Path
    budget_minutes: float  # Slurm's --time is this plus a margin
    cpus: int = 1
    mem: str | None = None
    env: Mapping[str, str] = EMPTY


class Placement(Protocol):
    """Where agents run; every method but ``start`` may be called for agents of an earlier
    launcher (``--resume``), known only by their session name."""

    kind: str
    queues: bool  # agents may wait (queued) before they run: their budget starts later
    # When its controller stopped answering (seconds since the epoch), None while it answers:
    # meanwhile agents keep their states and no budget is enforced on a missing answer.
    unreachable_since: float | None

    def check(self) -> None:
        """Raise PlacementError, before any agent starts, when none could be placed."""
        ...

    def start(self, job: AgentJob) -> int | None:
        """Start the agent; returns its handle (None when unknown)."""
        ...

    def start_many(self, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        """Start several agents at once (a burst of ready agents), in order: each one's
        handle, or the error that kept it from starting (PlacementError, OSError)."""
        ...

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every agent of the lane this placement knows of, in one call. With ``strict``, a
        failed call raises PlacementError rather than answer "none"."""
        ...

    def remove(self, names: Iterable[str]) -> None:
        """Take these agents away (tmux sessions killed, Slurm jobs cancelled)."""
        ...

    def signal(self, handle: int, signum: int) -> bool:
        """Send ``signum`` to everything the agent runs; False when it is gone."""
        ...

    def alive(self, handle: int) -> bool:
        """Whether anything the agent started still runs."""
        ...

    def wrapper_running(self, handle: int) -> bool:
        """Whether the agent's wrapper itself still runs (it winds down on its own)."""
        ...

    def attach_argv(self, session: str, output_log: Path) -> list[str]:
        """The command that puts a person's terminal on this agent."""
        ...

    def command_line(self, job: AgentJob) -> list[str]:
        """The command a launch runs for ``job`` (what a dry run shows)."""
        ...

    def room(self) -> int | None:
        """How many more agents it can run now (None: as many as the lane allows)."""
        ...

    def bring_back(self, session: str, agent: str) -> None:
        """What an ended agent did where it ran, here (its commits from a host); nothing when
        it ran here. Raises PlacementError when that cannot be done."""
        ...

    def close(self) -> None:
        """End what the placement keeps running for the launch (connections, followers)."""
        ...


class HereDefaults:
    """What a placement whose agents see this machine's checkout has nothing to do for: no
    slots of its own, no work to bring back, nothing kept running between calls."""

    def room(self) -> int | None:
        return None

    def bring_back(self, session: str, agent: str) -> None:
        """Its agents work in this machine's checkout (or a shared filesystem's)."""

    def close(self) -> None:
        """Nothing kept running for the launch."""


def start_each(placement: Placement, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
    """``start_many`` as one ``start`` per job: where a burst costs no less than its parts."""
    started: list[int | Exception | None] = []
    for job in jobs:
        try:
            started.append(placement.start(job))
        except (PlacementError, OSError) as exc:
            started.append(exc)
    return started


# How Slurm's final job states read as agent outcomes when the wrapper wrote no status.
SCHEDULER_ENDINGS = {
    "TIMEOUT": AgentState.TIMEOUT,
    "DEADLINE": AgentState.TIMEOUT,
    "CANCELLED": AgentState.CANCELLED,
    "PREEMPTED": AgentState.CANCELLED,
}


def ended_state(ended: str) -> AgentState:
    """The outcome of an agent whose job ended ``ended`` without a status file."""
    return SCHEDULER_ENDINGS.get(ended, AgentState.FAILED)
