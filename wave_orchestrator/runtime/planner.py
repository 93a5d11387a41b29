"""Turns a validated wave into launch plans and writes what each launch needs (prompt, run.sh).

Live launches and dry runs share this code, so a dry run shows exactly what would run.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..agents.executors import ExecutorCommand, build_command, model_for
from ..agents.prompts import compose_prompt
from ..agents.wrapper import WrapperSpec, render_run_script
from ..definitions.model import AgentDef, LaneDef, RateLimitPolicy, WaveDef
from ..state.fsutil import write_atomic
from ..state.layout import AgentPaths, StateLayout, session_name, socket_name

SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


def agent_path_env() -> str:
    """PATH for agents: our own scripts folder first, so `wave` (and the demo agent) resolve
    even when the virtualenv is not activated."""
    scripts = sysconfig.get_path("scripts") or str(Path(sys.executable).parent)
    current = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    parts = [scripts] + [p for p in current.split(os.pathsep) if p and p != scripts]
    return os.pathsep.join(parts)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: ("***" if SECRET_NAME_RE.search(k) else v) for k, v in env.items()}


@dataclass(frozen=True)
class AgentLaunch:
    """Everything needed to start one attempt of one agent on one executor."""

    lane: LaneDef
    wave: WaveDef
    agent: AgentDef
    attempt: int
    executor: str
    command: ExecutorCommand
    env: Mapping[str, str]
    paths: AgentPaths
    session: str
    socket: str
    deadline_minutes: float
    rate_limit: RateLimitPolicy
    briefing: str = ""  # for closure agents: the wave's agents and their results
    env_file: Path | None = None  # the launcher's environment (none in a dry run)

    @property
    def model(self) -> str | None:
        return model_for(self.agent.executor, self.executor)

    def preview(self) -> dict[str, object]:
        return {
            "agent": self.agent.id,
            "wave": self.wave.number,
            "role": self.agent.role,
            "attempt": self.attempt,
            "executor": self.executor,
            "model": self.model,
            "argv": list(self.command.argv),
            "env": redact_env(self.env),
            "session": self.session,
            "socket": self.socket,
            "deadline_minutes": self.deadline_minutes,
            "rate_limit": {
                "tries": self.rate_limit.tries,
                "base_delay_seconds": self.rate_limit.base_delay_seconds,
                "max_delay_seconds": self.rate_limit.max_delay_seconds,
                "jitter_seconds": self.rate_limit.jitter_seconds,
                "patterns": list(self.rate_limit.patterns),
                "usage_limit_patterns": list(self.rate_limit.usage_limit_patterns),
            },
        }


def plan_agent(
    lane: LaneDef,
    layout: StateLayout,
    wave: WaveDef,
    agent: AgentDef,
    attempt: int = 1,
    executor: str | None = None,
    path_env: str | None = None,
    briefing: str = "",
) -> AgentLaunch:
    executor_id = executor or agent.executor.id
    command = build_command(agent.executor, executor_id, agent.id)
    paths = layout.agent(wave.number, agent.id)
    # The agent's env may set PATH, but never the WAVE_* facts below.
    env = {
        "PATH": path_env or agent_path_env(),
        **agent.executor.env,
        "WAVE_LANE": lane.name,
        "WAVE_NUMBER": str(wave.number),
        "WAVE_AGENT_ID": agent.id,
        "WAVE_ROLE": agent.role,
        "WAVE_ATTEMPT": str(attempt),
        "WAVE_STATE_DIR": str(lane.state_dir),
        "WAVE_PROMPT_FILE": str(paths.prompt),
        "WAVE_REPO": str(lane.repo),
        "WAVE_EXECUTOR": executor_id,
        **command.env,
    }
    budget = agent.executor.budget_minutes
    deadline = (
        min(lane.defaults.timeout_minutes, budget) if budget else lane.defaults.timeout_minutes
    )
    return AgentLaunch(
        lane=lane,
        wave=wave,
        agent=agent,
        attempt=attempt,
        executor=executor_id,
        command=command,
        env=env,
        paths=paths,
        session=session_name(wave.number, agent.id),
        socket=socket_name(lane.name, lane.repo),
        deadline_minutes=deadline,
        rate_limit=lane.defaults.rate_limit,
        briefing=briefing,
        env_file=None if layout.dry_run else layout.agent_env,
    )


def materialize(launch: AgentLaunch) -> None:
    """Write prompt.md and run.sh for one launch (and nothing else)."""
    prompt = compose_prompt(launch.lane, launch.wave, launch.agent, launch.attempt, launch.briefing)
    launch.paths.dir.mkdir(parents=True, exist_ok=True)
    write_atomic(launch.paths.prompt, prompt)
    spec = WrapperSpec(
        lane=launch.lane.name,
        wave=launch.wave.number,
        agent=launch.agent.id,
        attempt=launch.attempt,
        repo=str(launch.lane.repo),
        agent_dir=str(launch.paths.dir),
        prompt_file=str(launch.paths.prompt),
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
        argv=launch.command.argv,
        env=launch.env,
        rate_limit=launch.rate_limit,
        env_file=str(launch.env_file) if launch.env_file else None,
    )
    # Owner-only: run.sh holds the agent's env in clear text (the preview redacts it).
    write_atomic(launch.paths.run_script, render_run_script(spec), mode=0o700)


def missing_programs(launches: Iterable[tuple[str, str, str]], path_env: str) -> list[str]:
    """Each (agent, executor, program) whose program is not on PATH, as a user-facing line."""
    missing = []
    for agent_id, executor, program in launches:
        if shutil.which(program, path=path_env) is None:
            missing.append(
                f"agent {agent_id}: executor {executor} needs `{program}`, not found on PATH"
            )
    return missing


def required_programs(lane: LaneDef, waves: Iterable[WaveDef]) -> list[tuple[str, str, str]]:
    """(agent, executor, program) for every executor a wave may need, fallbacks included."""
    out = []
    for wave in waves:
        for agent in wave.agents:
            for ex in (agent.executor.id, *agent.executor.fallbacks):
                program = build_command(agent.executor, ex, agent.id).program
                out.append((f"w{wave.number}/{agent.id}", ex, program))
    return out
