"""A placement that runs no process: an agent "runs" in simulated time, as its ``Script``
says, and ends the way a real wrapper does (its status file written, its pane dead), so the
pool learns of it by the same file event, poll or liveness check as of a real one."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fakes.clock import FakeClock
from wave_orchestrator.placement.base import AgentJob, HereDefaults, PaneInfo, start_each
from wave_orchestrator.state.fsutil import write_json_atomic


@dataclass(frozen=True)
class Script:
    """How one fake agent behaves once started."""

    runs_for: float | None = 1.0  # simulated seconds until its wrapper exits; None: until killed
    code: int = 0
    writes_status: bool = True  # as the wrapper does, just before it exits
    file_event: bool = True  # the watcher sees its status appear (else polling must find it)
    lingers_for: float = 0.0  # its wrapper runs on this long after its status (last output)
    output_every: float | None = None  # it prints this often: its log's mtime moves
    ignores_term: bool = False  # SIGTERM does nothing: only SIGKILL ends it


@dataclass
class FakeAgent:
    """One started attempt: what it was given, and whether its wrapper still runs."""

    job: AgentJob
    pid: int
    script: Script
    started: float  # simulated monotonic time
    running: bool = True
    ended: float | None = None


@dataclass
class FakePlacement(HereDefaults):
    """Records every start, signal and removal with its simulated time; ``file_event`` is the
    watcher's sink (agent id, file name), set by whoever builds the pool."""

    clock: FakeClock
    script_for: Callable[[str], Script] = lambda session: Script()
    kind: str = "fake"  # neither "local" (a burst on a thread) nor "slurm"
    queues: bool = False
    unreachable_since: float | None = None
    agents: dict[int, FakeAgent] = field(default_factory=dict)  # by pid
    panes: dict[str, PaneInfo] = field(default_factory=dict)
    starts: list[tuple[float, str]] = field(default_factory=list)
    signals: list[tuple[float, str, int]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    running: int = 0
    most_running: int = 0  # the most agents running at one time
    file_event: Callable[[str, str], None] = lambda agent_id, name: None
    _pids: Iterator[int] = field(default_factory=lambda: itertools.count(10_000))

    # -- the Placement protocol -----------------------------------------------------------
    def check(self) -> None:
        return None

    def start(self, job: AgentJob) -> int | None:
        pid = next(self._pids)
        agent = self.agents[pid] = FakeAgent(
            job, pid, self.script_for(job.session), self.clock.mono
        )
        self.panes[job.session] = PaneInfo(job.session, False, None, pid)
        self.starts.append((self.clock.mono, job.session))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        if agent.script.runs_for is not None:
            self.clock.after(agent.script.runs_for, lambda: self._exit(agent))
        if agent.script.output_every is not None:
            self.clock.after(agent.script.output_every, lambda: self._print(agent))
        return pid

    def start_many(self, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        return start_each(self, jobs)

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        """The live table (read, never kept, by its callers): built as agents come and go,
        not per call, so the fake costs the loop nothing a real list-panes would not."""
        return self.panes

    def remove(self, names: Iterable[str]) -> None:
        for name in names:
            self.removed.append(name)
            if (pane := self.panes.pop(name, None)) is not None and pane.pid in self.agents:
                self._end(self.agents[pane.pid], -signal.SIGHUP, dead_pane=False)

    def signal(self, handle: int, signum: int) -> bool:
        agent = self.agents.get(handle)
        self.signals.append((self.clock.mono, agent.job.session if agent else "?", signum))
        if agent is None or not agent.running:
            return False
        if signum != signal.SIGTERM or not agent.script.ignores_term:
            self._end(agent, 128 + signum)
        return True

    def alive(self, handle: int) -> bool:
        agent = self.agents.get(handle)
        return agent is not None and agent.running

    def wrapper_running(self, handle: int) -> bool:
        return self.alive(handle)

    def attach_argv(self, session: str, output_log: Path) -> list[str]:
        return ["true", session]

    def command_line(self, job: AgentJob) -> list[str]:
        return list(job.argv)

    # -- what the fake agents do ----------------------------------------------------------
    def kills(self, session: str) -> list[tuple[float, int]]:
        """The signals sent to ``session``: (simulated time, signal number)."""
        return [(at, signum) for at, name, signum in self.signals if name == session]

    def _exit(self, agent: FakeAgent) -> None:
        """Its wrapper ends on its own: status first (as run.sh writes it), then the pane."""
        if not agent.running:
            return
        script, job = agent.script, agent.job
        if script.writes_status:
            launch = json.loads((job.agent_dir / "launch.json").read_text())
            status = {
                "agent": job.agent_dir.name,
                "attempt": launch["attempt"],
                "code": script.code,
                "tries": 1,
            }
            write_json_atomic(job.agent_dir / "status.json", status)
            if script.file_event:
                self.file_event(job.agent_dir.name, "status.json")
        if script.lingers_for > 0:
            self.clock.after(script.lingers_for, lambda: self._end(agent, script.code))
        else:
            self._end(agent, script.code)

    def _print(self, agent: FakeAgent) -> None:
        if not agent.running or agent.script.output_every is None:
            return
        agent.job.output_log.touch()
        wall = self.clock.time()
        os.utime(agent.job.output_log, (wall, wall))
        self.clock.after(agent.script.output_every, lambda: self._print(agent))

    def _end(self, agent: FakeAgent, code: int, dead_pane: bool = True) -> None:
        if not agent.running:
            return
        agent.running, agent.ended = False, self.clock.mono
        self.running -= 1
        session = agent.job.session
        if dead_pane and session in self.panes:
            self.panes[session] = PaneInfo(session, True, code, agent.pid)
