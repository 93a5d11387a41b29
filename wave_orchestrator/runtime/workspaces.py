"""Where each agent of a wave works: the shared checkout (``isolation: shared``), or its own
git worktree (``isolation: worktree``), with its work committed when it ends, the agent
branches merged into the wave's integration branch after the implementation agents, closure
agents on that branch, and the worktrees removed (branches kept) when the wave ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..definitions.model import AgentDef, LaneDef, WaveDef
from ..errors import WaveError
from ..state.fsutil import read_json, write_json_atomic
from ..state.layout import StateLayout
from ..state.lifecycle import AgentState
from ..worktrees.isolation import INTEGRATION, AgentTree, Isolation, Setup

if TYPE_CHECKING:  # for annotations only: a dry run, which describes worktrees, loads neither
    from ..closure.gates import GateResult
    from ..state.events import EventLog
    from .agent_run import AgentRun


class Workspaces:
    """One wave's workspaces; every method is a no-op in a shared checkout."""

    def __init__(
        self, lane: LaneDef, layout: StateLayout, wave: WaveDef, log: Any, keep: bool = False
    ) -> None:
        self.lane = lane
        self.wave = wave
        self.log = log
        self.keep = keep  # --keep-worktrees
        self.enabled = wave.isolation.worktree
        self.iso = Isolation(lane.repo, layout.worktrees, lane.name)
        self.record = layout.wave_dir(wave.number) / "isolation.json"
        self.base = ""
        self.trees: dict[str, AgentTree] = {}
        self.setup = Setup(wave.isolation.setup_copy, wave.isolation.setup_command)

    def begin(self, resume: bool) -> None:
        """Record the base commit (a resumed launcher reuses the recorded one)."""
        if not self.enabled:
            return
        if resume:
            try:
                recorded = read_json(self.record)
            except (OSError, ValueError):
                recorded = None
            base = recorded.get("base") if isinstance(recorded, dict) else None
            if isinstance(base, str) and len(base) == 40:
                self.base = base
                return
        self.base = self.iso.base(self.wave.isolation.base)
        write_json_atomic(self.record, {"base": self.base, "ref": self.wave.isolation.base})

    def describe(self, agent: AgentDef) -> dict[str, str] | None:
        """Where the agent would work, for a dry run: path, branch and base; creates nothing."""
        if not self.enabled:
            return None
        if not self.base:
            try:
                self.base = self.iso.base(self.wave.isolation.base)
            except WaveError as exc:
                self.base = f"(unresolved: {exc})"
        closure = agent.is_closure
        name = INTEGRATION if closure else agent.id
        branch = (
            self.iso.integration_branch(self.wave.number)
            if closure
            else (self.iso.branch(self.wave.number, agent.id))
        )
        return {"path": str(self.iso.path(self.wave.number, name)), "branch": branch,
                "base": self.base}  # fmt: skip

    def workdir(self, agent: AgentDef) -> Path | None:
        """The folder the agent runs in: its worktree, the integration worktree for closure
        agents, or None for the shared checkout."""
        if not self.enabled:
            return None
        if agent.is_closure:
            return self.iso.path(self.wave.number, INTEGRATION)
        tree = self.iso.prepare(self.wave.number, agent.id, self.base, self.setup)
        self.trees[agent.id] = tree
        return tree.path

    def try_workdir(self, agent: AgentDef) -> tuple[Path | None, str]:
        """``workdir``, or why it could not be made (a failing ``setup.command``, a folder in
        the way): that agent fails without starting, the wave goes on."""
        try:
            return self.workdir(agent), ""
        except WaveError as exc:
            return None, f"could not prepare its worktree: {exc}"

    def fail_unstarted(self, run: AgentRun, detail: str, events: EventLog) -> None:
        run.to(AgentState.FAILED)
        run.detail = detail
        events.emit("agent_finished", self.wave.number, run.id, status="failed", detail=detail)
        self.log.warning("agent finished", agent=run.id, status="failed", detail=detail)

    def root_for(self, agent: AgentDef) -> Path:
        """Where the agent's deliverables and report are looked for."""
        return self.workdir_path(agent) or self.lane.repo

    def workdir_path(self, agent: AgentDef) -> Path | None:
        if not self.enabled:
            return None
        name = INTEGRATION if agent.is_closure else agent.id
        return self.iso.path(self.wave.number, name)

    def commit(self, run: AgentRun) -> None:
        """Commit what the agent left uncommitted on its branch, success or not: nothing lost."""
        path = self.workdir_path(run.launch.agent)
        if path is None or not path.exists():
            return
        message = f"wave: {run.id} attempt {run.launch.attempt}"
        try:
            sha = self.iso.commit(path, message, self.setup.copy)
        except WaveError as exc:
            self.log.warning("could not commit the agent's work", agent=run.id, error=str(exc))
            return
        if sha:
            self.log.info(f"committed {run.id}'s work", agent=run.id, commit=sha[:12])

    def integrate(
        self, gate: GateResult, agents: Sequence[AgentDef], latest: Mapping[str, AgentRun]
    ) -> None:
        """Merge the agents' branches into the integration branch, in wave-file order; each
        branch that conflicts fails the gate with ``merge-conflict`` naming both agents."""
        if not self.enabled:
            return
        trees = [
            self.trees.get(a.id)
            or AgentTree(
                a.id,
                self.iso.path(self.wave.number, a.id),
                self.iso.branch(self.wave.number, a.id),
                self.base,
            )
            for a in agents
            if a.id in latest
        ]
        result = self.iso.integrate(self.wave.number, self.base, trees)
        for c in result.conflicts:
            who = f"{c.agent} and {c.other}" if c.other else c.agent
            files = ", ".join(c.files) or "(files unknown)"
            gate.fail("merge-conflict", f"{who} changed the same lines of {files}", c.agent)
            gate.notes.append(
                f"Your branch {self.iso.branch(self.wave.number, c.agent)} did not merge into "
                f"{result.branch}" + (f" after {c.other}'s" if c.other else "")
                + f": conflicting files {files}. The conflicting hunks:\n{c.hunks}"
            )  # fmt: skip

    def finish(self, completed: bool, remove: bool = True) -> str:
        """At wave end: fast-forward or say how to merge; remove worktrees unless kept."""
        if not self.enabled:
            return ""
        message = ""
        if completed:
            message = self.iso.finish(self.wave.number, self.base, self.lane.merge == "ff")
        if remove and not self.keep:
            for name in [*(a.id for a in self.wave.agents if not a.is_closure), INTEGRATION]:
                path = self.iso.path(self.wave.number, name)
                try:
                    if path.exists() and not self.iso.remove(path):
                        self.log.warning("worktree kept: it has uncommitted work", path=str(path))
                except WaveError as exc:
                    self.log.warning("could not remove a worktree", path=str(path), error=str(exc))
        return message
