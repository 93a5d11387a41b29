"""Which pending agents may start, and starting them: their dependencies, the first opencode
agent starting alone, and a burst's work (files written, sessions started).
"""

from __future__ import annotations

import contextlib
import time

from ...errors import WaveError
from ...placement.base import Placement
from ...state.fsutil import write_json_atomic
from ...state.lifecycle import AgentState
from ..agent.materialize import materialize
from ..agent.run import AgentRun, archive_attempt


def dependency_state(
    run: AgentRun, runs: dict[str, AgentRun], succeeded_before: set[str]
) -> tuple[bool, str | None]:
    """(ready, failed dependency) for a pending agent: ``runs`` are its pool's, by id, and
    ``succeeded_before`` the agents that succeeded in an earlier pool of the wave."""
    for dep in run.launch.agent.depends_on:
        if dep in succeeded_before:
            continue
        other = runs.get(dep)
        if other is None:
            return False, dep  # not in this pool and never succeeded
        if other.state is AgentState.COMPLETED:
            continue
        if other.state.terminal:
            return False, dep
        return False, None
    return True, None


def waits_on_first_opencode(run: AgentRun, first: AgentRun | None, longest: float) -> bool:
    """opencode agents started at once on a fresh HOME race to create its database
    (``Failed query: CREATE TABLE ...``): the first one starts alone, the others once it has
    printed output (its database exists by then), ended, or had ``longest`` seconds."""
    if run.launch.executor != "opencode" or first is None or first.state.terminal:
        return False
    starting = time.monotonic() - (first.launched_mono or 0) < longest
    with contextlib.suppress(OSError):
        return starting and first.launch.paths.output_log.stat().st_size == 0
    return starting


def at_capacity(placement: Placement, starting: int, busy: int, max_running: int) -> bool:
    """At `max_running` agents (``busy``: running, stopping and ``starting``; each holds a
    pty and tmux descriptors), or no free slot where they run (every SSH host at its
    `max_agents`): the others wait."""
    room = placement.room()
    return (room is not None and starting >= room) or busy >= max_running


def prepare_and_start(
    runs: list[AgentRun], stale: list[bool], placement: Placement
) -> list[int | Exception | None]:
    """A burst's work, on the burst thread (or the loop): each run's files written (prompt,
    wrapper, launch record) and a session left under its name removed (``stale``), then the
    ready ones started by one placement call. Each run's handle, or what kept it from starting."""
    handles: list[int | Exception | None] = []
    for run, old in zip(runs, stale, strict=True):
        launch = run.launch
        try:
            if run.reruns:  # what its stopped try wrote, kept aside (its processes are gone)
                archive_attempt(launch, launch.attempt, f".rerun{run.reruns}")
            materialize(launch)
            if old:
                placement.remove([launch.session])
            run.launched_wall, run.launched_mono = time.time(), time.monotonic()
            write_json_atomic(launch.paths.launch_record, run.launch_record())
            handles.append(None)
        except (WaveError, OSError) as exc:  # a placement or a sandbox that refused
            handles.append(exc)
    ready = [run.launch.job() for run, h in zip(runs, handles, strict=True) if h is None]
    started = iter(placement.start_many(ready))
    return [h if h is not None else next(started) for h in handles]
