"""What a pool is given: ``PoolContext`` (where its agents run and what it shares with the
wave) and ``PoolHooks`` (what its wave is told, and asked). A test builds a pool with
``AgentPool(runs, PoolContext(placement, events))``: everything else has a default.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .messages import Messages, NoMessages

if TYPE_CHECKING:
    from ...governor.governor import Governor
    from ...placement.base import Placement
    from ...placement.reaper import Reaper
    from ...state.events import EventLog
    from ..agent.plan import AgentLaunch
    from ..agent.run import AgentRun
    from .git_jobs import Workspace
    from .watcher import AgentFolderWatcher


class PoolLimits(NamedTuple):
    """The lane's pacing: a pause between launches, when silence is a stall, how many run."""

    stagger_seconds: float = 0.0
    stall_seconds: float = 0.0  # 0: no stall is judged
    max_running: int = 500


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class WaveShared:
    """What the pools of one wave hand on to each other; None: the pool makes its own."""

    # Process groups being ended: a relaunch waits until its previous attempt's are gone.
    reaper: Reaper | None = None
    watcher: AgentFolderWatcher | None = None  # one file watch for every stage
    sessions: set[str] | None = None  # sessions that may exist; each launch adds to it


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class PoolContext:
    """Where a pool's agents run and what it works with; one per wave in the launcher."""

    placement: Placement
    events: EventLog
    limits: PoolLimits = field(default_factory=PoolLimits)
    stop: threading.Event = field(default_factory=threading.Event)
    messages: Messages = field(default_factory=NoMessages)  # the coordination layer
    governor: Governor | None = None  # usage limits, caps and spend; None holds nothing
    workspace: Workspace | None = None  # isolation: worktree: git runs off the loop
    shared: WaveShared = field(default_factory=WaveShared)


def _nothing_changed() -> bool | None:
    return None


def _no_fallback(run: AgentRun) -> AgentLaunch | None:
    return None


def _ignore(run: AgentRun) -> None:
    return None


class PoolHooks(NamedTuple):
    """What the wave is told of and asked by its pool."""

    # Something views show changed; True when the dashboard deferred its update.
    on_change: Callable[[], bool | None] = _nothing_changed
    on_finish: Callable[[AgentRun], None] = _ignore  # an agent ended (after its event)
    # A usage limit with no reset near: the launch on the next executor, None if none is left.
    fallback: Callable[[AgentRun], AgentLaunch | None] = _no_fallback
