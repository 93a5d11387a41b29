"""One attempt of one agent as the launcher tracks it: its state, pid, deadline and result."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..agents.usage import CliRetryFollower
from ..state.lifecycle import AgentState, check_transition
from .planner import AgentLaunch


@dataclass
class AgentRun:
    """One attempt of one agent, as the launcher tracks it."""

    launch: AgentLaunch
    state: AgentState = AgentState.PENDING
    launched_mono: float | None = None
    launched_wall: float | None = None
    deadline: float | None = None
    finished_wall: float | None = None
    code: int | None = None
    tries: int = 0
    rate_limited: int = 0
    detail: str = ""
    pid: int | None = None
    seen_backoff_try: int = 0
    executors: list[str] = field(default_factory=list)
    backing_off: bool = False  # the wrapper sleeps on a rate limit (backoff.json)
    foreign_status: bool = False  # a status file of another attempt was seen (and ignored)
    cli: CliRetryFollower = field(init=False)  # the CLI's own retries (claude's api_retry)

    def __post_init__(self) -> None:
        self.cli = CliRetryFollower(self.launch.executor, self.launch.paths.output_log)

    @property
    def id(self) -> str:
        return self.launch.agent.id

    @property
    def active(self) -> bool:
        return self.state in (AgentState.RUNNING, AgentState.RATE_LIMITED)

    def to(self, state: AgentState) -> None:
        check_transition(self.state, state)
        self.state = state

    @property
    def state_note(self) -> str | None:
        """What a rate-limited agent waits on when it is the CLI's own retry loop."""
        limited = self.state is AgentState.RATE_LIMITED and not self.backing_off
        return self.cli.current.describe() if limited and self.cli.current else None

    @property
    def duration_ms(self) -> int:
        if self.launched_wall is None:
            return 0
        end = self.finished_wall or time.time()
        return int((end - self.launched_wall) * 1000)


def describe_budget(minutes: float) -> str:
    return f"{minutes:g}m" if minutes >= 1 else f"{minutes * 60:g}s"
