"""The programs an agent runs: its PATH and private bin folder, which programs a launch needs
and which are missing, and the next executor to fall back to.

A launch checks all of this before it starts anything, so an agent that could not find its
CLI is a line at the start, not a failure minutes later.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...agents.executors import build_command
from ...definitions.model import AgentDef, LaneDef, WaveDef
from ...definitions.repository.paths import normalise_repo_path
from ...self_command import python_module_argv
from ...state.fsutil import ensure_dir, write_atomic

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


def required_programs(waves: Iterable[WaveDef]) -> list[tuple[str, str, str]]:
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
                *missing_programs(required_programs(waves), path_env, lane.repo),
                *uncommitted_programs(lane, waves, path_env),
            ]
        )
    )


def uncommitted_programs(lane: LaneDef, waves: Iterable[WaveDef], path_env: str) -> list[str]:
    """``isolation: worktree``: each agent whose program is a relative path that is in the main
    checkout (``missing_programs`` reports it otherwise) but will not be where run.sh starts
    (unless a ``setup.command`` runs, which may make it): the agent's worktree, made from the
    base commit, with ``setup.copy`` copied in; for a closure agent, the integration worktree,
    made from it without copies."""
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


# Why a program that is not committed at the base is not where run.sh starts, and the fix.
_NOT_IN_WORKTREE = (
    "isolation: worktree starts from it",
    "commit it, or list it in setup.copy",
)
_NOT_IN_INTEGRATION = (
    "the integration worktree, where closure agents run, starts from it and gets no setup.copy",
    "commit it",
)


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
        where, fix = _NOT_IN_INTEGRATION if agent.is_closure else _NOT_IN_WORKTREE
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
