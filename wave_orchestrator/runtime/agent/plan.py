"""Turns a validated wave into launch plans and writes what each launch needs (prompt, run.sh).

Live launches and dry runs share this code, so a dry run shows exactly what would run.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...agents.executors import ExecutorCommand, build_command, model_for
from ...agents.prompts import compose_prompt
from ...agents.wrapper import WrapperSpec, render_run_script
from ...definitions.model import AgentDef, LaneDef, RateLimitPolicy, WaveDef
from ...definitions.repository.paths import normalise_repo_path
from ...governor.accounts import account_of
from ...sanitize import redact_env, redact_value
from ...self_command import python_module_argv
from ...state.fsutil import check_regular_or_missing, ensure_dir, write_atomic
from ...state.layout import AgentPaths, StateLayout, agent_token, session_name, socket_name

if TYPE_CHECKING:
    from ...placement.base import AgentJob

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# What agents may run of ours; module to run when the console script is not installed.
AGENT_COMMANDS = {
    "wave": "wave_orchestrator",
    "wave-demo-agent": "wave_orchestrator.agents.demo_agent",
}


def agent_path_env(bin_dir: Path | None = None, user_path: str | None = None) -> str:
    """PATH for agents: the private ``bin_dir`` (only `wave` and the demo agent), then the
    user's PATH as the launcher received it. Never wave's virtualenv: an agent's `python3` and
    `pip` must be the user's."""
    current = user_path if user_path is not None else os.environ.get("PATH", DEFAULT_PATH)
    if bin_dir is None:
        return current
    parts = [str(bin_dir)] + [p for p in current.split(os.pathsep) if p and p != str(bin_dir)]
    return os.pathsep.join(parts)


@functools.cache
def scripts_dir() -> Path:
    """Where this interpreter's console scripts are: next to it in a virtualenv or pipx (the
    usual case, seen without sysconfig, which takes ms to load), else where sysconfig says
    (`pip install --user`)."""
    here = Path(sys.executable).parent
    if (here / "wave").is_file():
        return here
    import sysconfig

    return Path(sysconfig.get_path("scripts") or here)


def ensure_agent_bin(bin_dir: Path) -> None:
    """Make ``bin_dir`` hold `wave` and `wave-demo-agent` (links to our console scripts, or
    small shims running this interpreter when they are not installed)."""
    scripts = scripts_dir()
    ensure_dir(bin_dir)
    for name, module in AGENT_COMMANDS.items():
        link, target = bin_dir / name, scripts / name
        tmp = bin_dir / f".{name}.{os.getpid()}"
        if target.is_file() and os.access(target, os.X_OK):
            if link.is_symlink() and os.readlink(link) == str(target):
                continue
            tmp.unlink(missing_ok=True)
            os.symlink(target, tmp)
            os.replace(tmp, link)
        else:
            shim = f'#!/bin/sh\nexec {shlex.join(python_module_argv(module))} "$@"\n'
            if not link.is_symlink() and link.is_file() and link.read_text() == shim:
                continue
            if link.is_symlink():  # our own link from a run that had the console scripts
                link.unlink()
            write_atomic(link, shim, mode=0o755)


def find_program(program: str, path_env: str, repo: Path) -> str | None:
    """Where ``program`` is, as run.sh will find it: a relative path with a slash
    (``agents/desk.sh``) from the repository root, where run.sh starts; a bare name on PATH."""
    if program in AGENT_COMMANDS:  # ours: ensure_agent_bin puts it first on every agent's PATH
        return program
    if "/" in program and not os.path.isabs(program):
        candidate = repo / program
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which(program, path=path_env)


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
    bin_dir: Path | None = None  # the private bin folder first on the agent's PATH
    retry_context: str = ""  # on a retry: why this agent runs again
    coordination: str = ""  # at launch: the agent's inbox and the wave's shared summary
    workdir: Path | None = None  # its own git worktree (isolation: worktree), else the repo
    fingerprint: str = ""  # what shapes its work, recorded in launch.json (runtime.reuse)
    accounts_dir: Path | None = None  # where each account's shared backoff file is

    @property
    def cwd(self) -> Path:
        return self.workdir or self.lane.repo

    def job(self) -> AgentJob:
        """What the placement is asked to start: run.sh, its budget and its resources."""
        where = self.agent.placement
        from ...placement.base import AgentJob  # for a live launch: not for a dry run

        return AgentJob(
            session=self.session,
            argv=["bash", str(self.paths.run_script)],
            cwd=str(self.cwd),
            agent_dir=self.paths.dir,
            output_log=self.paths.output_log,
            budget_minutes=self.deadline_minutes,
            cpus=where.cpus,
            mem=where.mem,
        )

    @property
    def model(self) -> str | None:
        return model_for(self.agent.executor, self.executor)

    @functools.cached_property
    def account(self) -> str | None:
        """The account its usage counts against (governor.accounts); a lane account only on
        the executor it is a login of (a fallback executor uses its own)."""
        named = self.agent.executor.account if self.executor == self.agent.executor.id else None
        return account_of(self.executor, named, self.agent.executor.env, os.environ)

    @property
    def account_backoff(self) -> Path | None:
        """The file every wrapper of its account reads before a try, and writes when rate
        limited: one backoff per account (named by a digest: an account may hold a path)."""
        if self.account is None or self.accounts_dir is None:
            return None
        return self.accounts_dir / f"{hashlib.sha256(self.account.encode()).hexdigest()[:16]}"

    def preview(self) -> dict[str, object]:
        return {
            "agent": self.agent.id,
            "wave": self.wave.number,
            "role": self.agent.role,
            "attempt": self.attempt,
            "executor": self.executor,
            "model": self.model,
            "account": self.account,
            "argv": [redact_value(arg) for arg in self.command.argv],
            "env": redact_env(self.env),
            "session": self.session,
            "socket": self.socket,
            "deadline_minutes": self.deadline_minutes,
            "cwd": str(self.cwd),
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
    retry_context: str = "",
    workdir: Path | None = None,
    fingerprint: str = "",
) -> AgentLaunch:
    executor_id = executor or agent.executor.id
    command = build_command(agent.executor, executor_id, agent.id)
    paths = layout.agent(wave.number, agent.id)
    session, socket = session_name(wave.number, agent.id), socket_name(lane.name, lane.repo)
    # The agent's env may set PATH (wave's bin still goes first), but never the WAVE_* facts.
    own_path = agent.executor.env.get("PATH")
    env = {
        **agent.executor.env,
        "PATH": (
            agent_path_env(layout.agent_bin, own_path)
            if own_path is not None
            else path_env or agent_path_env(layout.agent_bin)
        ),
        "WAVE_LANE": lane.name,
        "WAVE_NUMBER": str(wave.number),
        "WAVE_WAVE": str(wave.number),
        "WAVE_AGENT_ID": agent.id,
        "WAVE_ROLE": agent.role,
        "WAVE_ATTEMPT": str(attempt),
        "WAVE_STATE_DIR": str(lane.state_dir),
        "WAVE_PROMPT_FILE": str(paths.prompt),
        "WAVE_REPO": str(lane.repo),
        "WAVE_EXECUTOR": executor_id,
        **({"WAVE_WORKTREE": str(workdir)} if workdir else {}),
        **command.env,
        # Inherited by all the agent starts: what it leaves running is found and ended by it.
        "WAVE_AGENT_TOKEN": agent_token(socket, session),
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
        session=session,
        socket=socket,
        deadline_minutes=deadline,
        rate_limit=lane.defaults.rate_limit,
        briefing=briefing,
        retry_context=retry_context,
        env_file=None if layout.dry_run else layout.agent_env,
        bin_dir=layout.agent_bin,
        workdir=workdir,
        fingerprint=fingerprint,
        accounts_dir=layout.accounts,
    )


def materialize(
    launch: AgentLaunch, write: Callable[..., object] = write_atomic, *, with_bin: bool = True
) -> None:
    """Write prompt.md and run.sh for one launch (and nothing else). A dry run passes
    ``write_if_changed``, to leave alone what an earlier dry run wrote the same, and makes the
    private bin folder once for all its agents (``with_bin=False``)."""
    prompt = compose_prompt(
        launch.lane,
        launch.wave,
        launch.agent,
        launch.attempt,
        launch.briefing,
        launch.retry_context,
        launch.coordination,
    )
    ensure_dir(launch.paths.dir)
    paths = launch.paths
    for path in (paths.output_log, paths.status, paths.backoff):  # the wrapper writes these
        check_regular_or_missing(path)  # through a link it would write outside the state dir
    if with_bin and launch.bin_dir is not None:
        ensure_agent_bin(launch.bin_dir)
    if (shared := launch.account_backoff) is not None:
        ensure_dir(shared.parent)
    write(launch.paths.prompt, prompt)
    spec = WrapperSpec(
        lane=launch.lane.name,
        wave=launch.wave.number,
        agent=launch.agent.id,
        attempt=launch.attempt,
        repo=str(launch.cwd),
        agent_dir=str(launch.paths.dir),
        prompt_file=str(launch.paths.prompt),
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
        argv=launch.command.argv,
        env=launch.env,
        rate_limit=launch.rate_limit,
        env_file=str(launch.env_file) if launch.env_file else None,
        model=launch.model,
        account=launch.account,
        account_backoff=str(shared) if shared else None,
    )
    # Owner-only: run.sh holds the agent's env in clear text (the preview redacts it).
    write(launch.paths.run_script, render_run_script(spec), mode=0o700)


def missing_programs(
    launches: Iterable[tuple[str, str, str]], path_env: str, repo: Path
) -> list[str]:
    """Each (agent, executor, program) whose program is not found, as a user-facing line."""
    missing, found = [], {}  # each program looked for once, though most agents share it
    for agent_id, executor, program in launches:
        if program not in found:
            found[program] = find_program(program, path_env, repo)
        if found[program] is None:
            where = f"in {repo}" if "/" in program and not os.path.isabs(program) else "on PATH"
            missing.append(
                f"agent {agent_id}: executor {executor} needs `{program}`, not found {where}"
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


def missing_at_start(lane: LaneDef, waves: Sequence[WaveDef], path_env: str) -> list[str]:
    """What a launch checks before it starts anything: each program an agent would not find
    where run.sh starts it, one line each, once."""
    return list(
        dict.fromkeys(
            [
                *missing_programs(required_programs(lane, waves), path_env, lane.repo),
                *uncommitted_programs(lane, waves, path_env),
            ]
        )
    )


def uncommitted_programs(lane: LaneDef, waves: Iterable[WaveDef], path_env: str) -> list[str]:
    """``isolation: worktree``: each agent whose program is a relative path that is in the main
    checkout (``missing_programs`` reports it otherwise) but will not be where run.sh starts
    (unless a ``setup.command`` runs, which may make it):
    the agent's worktree, made from the base commit, with ``setup.copy`` copied in; for a
    closure agent, the integration worktree, made from it without copies."""
    out: list[str] = []
    for wave in waves:
        if not wave.isolation.worktree or wave.isolation.setup_command:
            continue  # a setup command may make it (npm ci, a build): the agent's run tells
        needs = [
            (agent, ex, program, rel)
            for agent in wave.agents
            for ex in (agent.executor.id, *agent.executor.fallbacks)
            if (program := build_command(agent.executor, ex, agent.id).program)
            and (rel := repo_relative_program(program)) is not None
            and find_program(program, path_env, lane.repo)
        ]
        if needs:  # git is loaded only for a worktree wave with a program in the repository
            out += _not_at_base(lane, wave, needs)
    return out


def repo_relative_program(program: str) -> str | None:
    """``./agent.sh`` as the repository path ``agent.sh``; None for a name looked up on PATH,
    an absolute path, or one that leaves the repository."""
    if "/" not in program or os.path.isabs(program):
        return None
    return normalise_repo_path(program)


def _not_at_base(
    lane: LaneDef, wave: WaveDef, needs: list[tuple[AgentDef, str, str, str]]
) -> list[str]:
    from ...worktrees.git import GitError, git, resolve_commit

    try:
        base = resolve_commit(lane.repo, wave.isolation.base or "HEAD")
    except GitError:  # no repository, or no such base: preparing the worktrees says so
        return []
    committed: dict[str, bool] = {}
    copies = [c.rstrip("/") for c in wave.isolation.setup_copy]
    out = []
    for agent, ex, program, rel in needs:
        if not agent.is_closure and any(rel == c or rel.startswith(c + "/") for c in copies):
            continue
        if rel not in committed:
            try:
                found = git(lane.repo, "cat-file", "-e", f"{base}:{rel}", check=False)
                committed[rel] = found.returncode == 0
            except GitError:
                committed[rel] = True  # git cannot tell: the agent's start will
        if committed[rel]:
            continue
        where, fix = (
            ("the integration worktree, where closure agents run, starts from it and gets no "
             "setup.copy", "commit it")
            if agent.is_closure
            else ("isolation: worktree starts from it", "commit it, or list it in setup.copy")
        )  # fmt: skip
        out.append(
            f"agent w{wave.number}/{agent.id}: executor {ex} needs `{program}`, which is not "
            f"committed at base {base[:12]} ({where}): {fix}"
        )
    return out


def next_executor(agent: AgentDef, history: list[str], path_env: str, repo: Path) -> str:
    """After a failure: the next fallback not yet tried and installed, else the same one."""
    for candidate in agent.executor.fallbacks:
        if candidate in history:
            continue
        program = build_command(agent.executor, candidate, agent.id).program
        if find_program(program, path_env, repo):
            return candidate
    return history[-1]
