"""Turns a validated wave into launch plans and writes what each launch needs (prompt, run.sh).

Live launches and dry runs share this code, so a dry run shows exactly what would run.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...agents.conversations import launch_argv, new_id
from ...agents.executors import ExecutorCommand, build_command, model_for
from ...definitions.model import AgentDef, LaneDef, RateLimitPolicy, WaveDef
from ...governor.accounts import account_of
from ...sanitize import REDACTED, redact_value, secret_name
from ...state.layout import AgentPaths, StateLayout, agent_token, session_name, socket_name
from .confine import Confinement, Worktree, agent_env, confinement
from .programs import agent_path_env, missing_at_start, next_executor

if TYPE_CHECKING:
    from ...agents.context7_docs import AgentDocs, Prefetcher
    from ...agents.skills_projection import SkillProjection
    from ...placement.base import AgentJob
    from ...sandbox.bwrap import Bind


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
    sandbox: Confinement | None = None  # None: it runs unsandboxed
    orchestrator_id: str = ""  # the launcher that starts it ("" in a dry run)
    skills: SkillProjection | None = None  # its skill bundles on this executor (None: none)
    docs: AgentDocs | None = None  # library docs from Context7 (None: the lane has none)
    conversation: str = ""  # the id wave gives a new conversation (claude), else ""
    continues: str = ""  # the conversation this try continues ("": it starts afresh)
    continuation: str = ""  # then its whole prompt: why it stopped, and to go on

    @property
    def argv(self) -> list[str]:
        """The CLI's command line for this try: a new conversation, or one continued."""
        return launch_argv(self.executor, self.command.argv, self.conversation, self.continues)

    def fresh(self, dry_run: bool = False) -> AgentLaunch:
        """This launch as a new conversation (claude refuses an id already used)."""
        conversation = new_id(self.executor, dry_run)
        return replace(self, conversation=conversation, continues="", continuation="")

    def continued(self, conversation: str, note: str) -> AgentLaunch:
        """This launch continuing ``conversation``, told only ``note`` (its task it has)."""
        return replace(self, conversation=conversation, continues=conversation, continuation=note)

    @property
    def context7_mode(self) -> str:
        """How its library docs came (agents.context7_docs.MODES), once its prompt is written."""
        return (self.docs.mode or "none") if self.docs is not None else "none"

    @property
    def sandbox_label(self) -> str:
        """Its sandbox in a word or two, as status, the console and the records show it."""
        if self.sandbox is None:
            return "none"
        if self.sandbox.refused:
            return "bubblewrap (cannot run here)"
        return "bubblewrap" if self.sandbox.settings.network else "bubblewrap, no network"

    @property
    def retry_argv(self) -> list[str]:
        """The argv of run.sh's later tries: a new claude conversation goes on with ``--resume``
        (claude refuses a ``--session-id`` it has used); else [] (every try is the first's)."""
        if self.executor != "claude" or not self.conversation or self.continues:
            return []
        return launch_argv(self.executor, self.command.argv, "", self.conversation)

    def confined(
        self, live: bool = True, argv: list[str] | None = None
    ) -> tuple[list[str], list[Bind]]:
        """The argv run.sh starts (``argv``, else this try's), and the sandbox's options (none
        when unsandboxed)."""
        argv = self.argv if argv is None else argv
        if self.sandbox is None or (self.sandbox.refused and not live):
            return argv, []  # a dry run shows a refused sandbox in the preview
        env = agent_env(self.env)
        binds = self.sandbox.binds(self.executor, argv[0], env, live)
        return self.sandbox.command(binds, argv), binds

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
            "argv": [shown(arg) for arg in self.argv],
            "sandbox": self.sandbox_preview(),
            **({"skills": self.skills.record()} if self.skills is not None else {}),
            "context7": self.docs.preview() if self.docs is not None else {"mode": "none"},
            # redact_env's rule, with each value looked through once for all the agents
            "env": {k: REDACTED if secret_name(k) else shown(v) for k, v in self.env.items()},
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

    def sandbox_preview(self) -> dict[str, object]:
        """The sandbox as a dry run shows it: the exact bwrap argv and each option's reason."""
        if self.sandbox is None:
            return {"mode": "none"}
        if self.sandbox.refused:
            return {"mode": "bubblewrap", "refused": self.sandbox.refused}
        from ...sandbox.bwrap import describe

        argv, binds = self.confined(live=False)
        return {
            "mode": "bubblewrap",
            "network": self.sandbox.settings.network,
            "argv": [shown(arg) for arg in argv],
            "options": describe(binds),
        }


@functools.lru_cache(maxsize=4096)
def shown(value: str) -> str:
    """``redact_value``, remembered: a lane's agents share most values (its PATH, repository
    and state dir), and looking through a long one takes tens of microseconds."""
    return redact_value(value)


class Planner:
    """Plans the attempts of one lane's agents. What is the same for every agent (the PATH
    they get, the tmux socket, the lane's folders) is worked out once, not once per agent."""

    def __init__(self, lane: LaneDef, layout: StateLayout, orchestrator_id: str = "") -> None:
        self.lane = lane
        self.layout = layout
        self.orchestrator_id = orchestrator_id
        self.path_env = agent_path_env(layout.agent_bin)
        self._state_dir, self._repo = str(lane.state_dir), str(lane.repo)
        # On SSH hosts an agent gets the host's own PATH and environment, not this machine's.
        self.remote = lane.placement.remote
        self._env_file = None if layout.dry_run or self.remote else layout.agent_env
        self._bin_dir = layout.agent_bin
        self._accounts = layout.accounts
        self._prefetcher: Prefetcher | None = None
        self._warmed: set[int] = set()  # the waves whose docs are being fetched

    @functools.cached_property
    def socket(self) -> str:
        """The lane's tmux socket: its name digests the resolved repository path."""
        return socket_name(self.lane.name, self.lane.repo)

    def plan(
        self,
        wave: WaveDef,
        agent: AgentDef,
        attempt: int = 1,
        executor: str | None = None,
        *,
        briefing: str = "",
        retry_context: str = "",
        workdir: Path | None = None,
        fingerprint: str = "",
        worktree: Worktree | None = None,
    ) -> AgentLaunch:
        """One attempt of ``agent`` on ``executor`` (default: its own); ``briefing`` and
        ``retry_context`` go into its prompt, ``worktree`` (or a bare ``workdir``) is where
        it works when it has a worktree of its own."""
        workdir = worktree.path if worktree is not None else workdir
        lane, executor_id = self.lane, executor or agent.executor.id
        sandbox = (  # bubblewrap confines agents on this machine only: not on SSH hosts
            None
            if self.remote
            else confinement(agent, wave, self.layout, lane.repo, worktree, lane.shared_files)
        )
        confined = sandbox is not None and not sandbox.refused
        paths = self.layout.agent(wave.number, agent.id)
        # Resolved for the executor it runs on: a fallback gets that executor's skills.
        skills = None
        if lane.skills is not None:  # a lane with no skills never loads their projection
            from ...agents.skills_projection import project_skills

            skills = project_skills(
                lane.skills, agent, executor_id, paths.skills, agent.executor.env
            )
        command = build_command(
            agent.executor, executor_id, agent.id, confined, skills.argv() if skills else ()
        )
        session, socket = session_name(wave.number, agent.id), self.socket
        # The agent's env may set PATH (wave's bin still goes first), but never the WAVE_* facts.
        own_path = agent.executor.env.get("PATH")
        env = {
            **agent.executor.env,
            "PATH": self.path_env if own_path is None else agent_path_env(self._bin_dir, own_path),
            "WAVE_LANE": lane.name,
            "WAVE_NUMBER": str(wave.number),
            "WAVE_WAVE": str(wave.number),
            "WAVE_AGENT_ID": agent.id,
            "WAVE_ROLE": agent.role,
            "WAVE_ATTEMPT": str(attempt),
            "WAVE_STATE_DIR": self._state_dir,
            "WAVE_PROMPT_FILE": str(paths.prompt),
            "WAVE_REPO": self._repo,
            "WAVE_EXECUTOR": executor_id,
            **({"WAVE_WORKTREE": str(workdir)} if workdir else {}),
            **({"WAVE_ORCHESTRATOR_ID": self.orchestrator_id} if self.orchestrator_id else {}),
            **(skills.env() if skills is not None else {}),
            **command.env,
            # Inherited by all the agent starts: what it leaves running is found and ended by it.
            "WAVE_AGENT_TOKEN": agent_token(socket, session),
        }
        if self.remote and own_path is None:
            del env["PATH"]
        budget, timeout = agent.executor.budget_minutes, lane.defaults.timeout_minutes
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
            deadline_minutes=min(timeout, budget) if budget else timeout,
            rate_limit=lane.defaults.rate_limit,
            briefing=briefing,
            retry_context=retry_context,
            env_file=self._env_file,
            bin_dir=self._bin_dir,
            workdir=workdir,
            fingerprint=fingerprint,
            accounts_dir=self._accounts,
            sandbox=sandbox,
            orchestrator_id=self.orchestrator_id,
            skills=skills,
            docs=self._docs_for(wave, agent),
            conversation=new_id(executor_id, self.layout.dry_run),
        )

    def _docs_for(self, wave: WaveDef, agent: AgentDef) -> AgentDocs | None:
        """The agent's library docs: their fetch, with the rest of its wave's, starts now
        (a dry run and a lane without Context7 fetch nothing, nor load what fetches)."""
        settings = self.lane.context7
        if settings is None:
            return None
        from ...agents.context7_docs import AgentDocs, Prefetcher

        if not settings.enabled or agent.context7 is None or self.layout.dry_run:
            mode = "disabled" if not settings.enabled else ("" if agent.context7 else "none")
            return AgentDocs(agent.context7, mode)
        if self._prefetcher is None:
            from ...state.events import EventLog

            events = EventLog(self.layout.events)
            events.best_effort, events.orchestrator_id = True, self.orchestrator_id
            self._prefetcher = Prefetcher(settings, self.layout.context7_cache, events)
        if wave.number not in self._warmed:  # closure agents' docs ready when their stage is
            self._warmed.add(wave.number)
            for other in wave.agents:
                if other.context7 is not None:
                    self._prefetcher.request(other.context7)
        return self._prefetcher.docs_for(agent.context7, wave.number, agent.id)

    def next_executor(self, agent: AgentDef, history: list[str]) -> str:
        """After a failure: the next fallback not yet tried and installed, else the same one."""
        return next_executor(agent, history, self.path_env, self.lane.repo)

    def missing_at_start(self, waves: Sequence[WaveDef]) -> list[str]:
        """Each program an agent of ``waves`` would not find where run.sh starts it."""
        return missing_at_start(self.lane, waves, self.path_env)


def plan_agent(
    lane: LaneDef,
    layout: StateLayout,
    wave: WaveDef,
    agent: AgentDef,
    attempt: int = 1,
    executor: str | None = None,
) -> AgentLaunch:
    """One agent's plan where no ``Planner`` is at hand (a test, a one-off tool)."""
    return Planner(lane, layout).plan(wave, agent, attempt, executor)
