"""A silent agent handled in steps (lane.yaml's ``stall``) before its budget ends it: silent
for ``nudge_minutes`` (no output, no stream event, no change in its workspace), it is stopped
and continues its conversation with a nudge; silent ``ask_minutes`` after that, a person is
told and asked to look. Each step is an event, a line of the launcher and a notification.

Its workspace is looked at twice per silence, not every turn, each time on a thread of its
own: at half the step's time and at the step; a change between the two is a sign of life
(``git status`` of its checkout, hashed: an agent at work on files it does not print about is
not nudged). Only an agent whose next try can go on with its conversation is nudged: a nudge
that started it over would throw its work away, so the person is asked instead.
"""

from __future__ import annotations

import hashlib
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...agents.conversations import why_not
from ...notify.documents import document
from ...placement.reaper import Reaper
from ...state.events import EventLog
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ..agent.continuation import continue_or_restart
from ..agent.run import AgentRun

log = Logger(__name__)

GIT_SECONDS = 10.0  # a `git status` that takes longer says nothing: no nudge on its word
MTIMES = 2000  # changed files whose modification times are read, at most
NUDGE = "Report your progress now, or finish and print your markers."


class StallSteps:
    """The steps taken with each silent agent of one pool (each at most once per run)."""

    def __init__(
        self,
        events: EventLog,
        reaper: Reaper,
        tell: Callable[[dict[str, Any]], None] = lambda payload: None,
    ) -> None:
        self.events = events
        self.reaper = reaper  # ends a nudged try's process group, holding its next try till then
        self.tell = tell
        self._nudged: set[AgentRun] = set()
        self._asked: set[AgentRun] = set()
        # Its workspace looked at (off the loop) at half the step's time, then at the step's.
        self._looks: dict[AgentRun, list[Look]] = {}

    def check(self, run: AgentRun, now: float) -> bool:
        """Take the step due for ``run`` at ``now`` (wall clock), if one is; True when taken."""
        policy = run.launch.lane.stall
        if not policy.on or run.state is not AgentState.RUNNING:
            return False
        # A nudge stops it: only where its next try can go on with its conversation.
        nudge = policy.nudge_minutes > 0 and run not in self._nudged and continuable(run)
        ask = policy.ask_minutes > 0 and run not in self._asked
        due = policy.nudge_minutes * 60 if nudge else policy.ask_minutes * 60 if ask else 0.0
        silent = now - run.last_sign_of_life()
        if not due or silent < due / 2:
            self._looks.pop(run, None)
            return False
        looks = self._looks.setdefault(run, [])
        if not looks or (silent >= due and len(looks) == 1):
            looks.append(Look(run.launch.cwd))
            return False
        if len(looks) == 1 or not all(look.done.is_set() for look in looks):
            return False
        first, second = self._looks.pop(run)
        if first.digest != second.digest:
            run.resumed_wall = now  # its files changed: the silence starts again
            return False
        took = self._nudge if nudge else self._ask
        took(run, int(silent // 60), spoken(silent))
        return True

    def _nudge(self, run: AgentRun, minutes: int, silence: str) -> None:
        """Stopped, and its next try continues its conversation told to report or finish."""
        self._nudged.add(run)
        self.reaper.start(run.launch.session, run.pid, time.monotonic())
        conversation = run.conversation
        run.renew(self.events, "agent_nudged", silent_minutes=minutes)
        run.reruns += 1  # its stopped try kept as attempt-<k>.rerun<n> once its processes end
        reason = f"you have been silent for {silence}"
        run.launch, run.fresh_because = continue_or_restart(run.launch, conversation, reason, NUDGE)
        log.warning("silent agent nudged", agent=run.id, silent_minutes=minutes)
        self._told(run, f"silent for {silence}: stopped and nudged to report or finish")

    def _ask(self, run: AgentRun, minutes: int, silence: str) -> None:
        """A person is told and asked to look; the agent runs on to its budget."""
        self._asked.add(run)
        wave = run.launch.wave.number
        self.events.emit("agent_silent", wave, run.id, silent_minutes=minutes)
        log.warning("silent agent: a person is asked to look", agent=run.id, minutes=minutes)
        self._told(
            run,
            f"silent for {silence}{' after a nudge' if run in self._nudged else ''}: "
            f'look at it, tell it more (wave rerun {run.id} --continue "…") or stop it '
            f"(wave stop --agent {run.id})",
        )

    def _told(self, run: AgentRun, reason: str) -> None:
        lane = run.launch.lane.name
        command = f"wave logs {run.id} --lane {lane}"
        wave = run.launch.wave.number
        self.tell(
            document("stalled", lane, wave=wave, agent=run.id, reason=reason, command=command)
        )


def spoken(seconds: float) -> str:
    """``seconds`` as a person says them: "20 minutes", "1 minute", "45 seconds"."""
    if seconds < 60:
        return f"{int(seconds)} seconds"
    minutes = int(seconds // 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def continuable(run: AgentRun) -> bool:
    """Whether a try of ``run`` stopped now could go on with its conversation."""
    launch = run.launch
    return bool(run.conversation) and why_not(launch.executor, launch.command.argv) is None


class Look:
    """Its checkout's digest, taken on a thread of its own (`git status` may take seconds;
    the loop only looks whether it is done)."""

    def __init__(self, cwd: Path) -> None:
        self.digest: str | None = None
        self.done = threading.Event()
        threading.Thread(target=self._take, args=(cwd,), name="wave-look", daemon=True).start()

    def _take(self, cwd: Path) -> None:
        try:
            self.digest = workspace_digest(cwd)
        finally:
            self.done.set()


def workspace_digest(cwd: Path) -> str | None:
    """What its checkout's files look like to git (changed, added, removed), hashed; None
    when git cannot say in time (no nudge is taken on a workspace no one could read)."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            cwd=cwd,
            capture_output=True,
            timeout=GIT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    digest = hashlib.sha256(done.stdout)
    # A file edited again keeps its status line: its modification time says it moved.
    for entry in done.stdout.split(b"\0")[:MTIMES]:
        if len(entry) > 3:  # "XY path" (a rename's second name has no status: not found)
            try:
                path = cwd / entry[3:].decode("utf-8", "surrogateescape")
                digest.update(str(path.lstat().st_mtime_ns).encode())
            except (OSError, ValueError):
                continue
    return digest.hexdigest()
