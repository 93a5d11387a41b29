"""Where each agent of a wave works: the shared checkout (``isolation: shared``), or its own
git worktree (``isolation: worktree``): made when it is about to start (from its dependencies'
work when it has any), its work committed when it ends, the agent branches merged into the
wave's integration branch after the implementation agents, closure agents on that branch,
and the worktrees removed (branches kept) when the wave ends.

``prepare`` and ``settle`` run git and may take long (a big commit, a slow setup command):
the agent pool calls them on its worker thread, never on its main loop.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...definitions.model import AgentDef, LaneDef, WaveDef
from ...errors import WaveError
from ...state.fsutil import read_json, write_json_atomic
from ...state.layout import StateLayout
from ...state.logs import Logger
from ...worktrees.isolation import INTEGRATION, AgentTree, Isolation, Setup
from ..agent.confine import Worktree

log = Logger(__name__)
_SHA = re.compile(r"[0-9a-f]{40}")

if TYPE_CHECKING:  # for annotations only: a dry run, which describes worktrees, loads neither
    from ...closure.gates import GateResult
    from ..agent.run import AgentRun


class Workspaces:
    """One wave's workspaces; every method is a no-op in a shared checkout."""

    def __init__(
        self,
        lane: LaneDef,
        layout: StateLayout,
        wave: WaveDef,
        keep: bool = False,
        bring_back: Callable[[str, str], None] | None = None,
    ) -> None:
        self.lane = lane
        self.wave = wave
        self.keep = keep  # --keep-worktrees
        self.bring_back = bring_back  # the placement's: what an agent did on a host, here
        self.enabled = wave.isolation.worktree
        self.layout = layout
        self.isolation = Isolation(lane.repo, layout.worktrees, lane.name)
        self.record = layout.wave_dir(wave.number) / "isolation.json"
        self.earlier_record: Path | None = None  # the run before's, once its folder is set aside
        self.base = ""
        self.starts: dict[str, str] = {}  # agent id -> the commit its branch started from
        self.reused: set[str] = set()  # agents whose branch an earlier run made
        self.kept: set[Path] = set()  # worktrees whose work could not be committed
        self.setup = Setup(wave.isolation.setup_copy, wave.isolation.setup_command)
        self._lock = threading.Lock()  # the record is written from the pool's git worker

    def begin(self, resume: bool, reused: Sequence[str] = ()) -> None:
        """Record the base commit. A resumed launcher reuses the recorded one and what is
        there; a new run moves the earlier run's branches aside (but those of the ``reused``
        agents, whose work stands) and starts from the base."""
        if not self.enabled:
            return
        if resume:
            recorded = self._read(self.record)
            base = recorded.get("base")
            if isinstance(base, str) and len(base) == 40:
                self.base = base
                starts = recorded.get("agents")
                self.starts = {k: v for k, v in (starts or {}).items() if isinstance(v, str)}
                return
        from ...worktrees.branches import start_fresh  # only a live worktree launch

        self.base = self._base(say=True)
        self.reused = set(reused)
        self.starts = self._earlier_starts(self.reused)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        ids = [a.id for a in self.wave.implementation_agents]
        tip = self._tip()
        for line in start_fresh(
            self.isolation, self.wave.number, ids, stamp, tip, self.base, reused
        ):
            level = "warning" if "did not make" in line else "info"
            log.at(level, line)
        self._save()

    def _earlier_starts(self, reused: set[str]) -> dict[str, str]:
        """Where each reused agent's branch started in the run that made it, so `wave diff`
        shows its work and not an empty change from its own tip."""
        earlier = self._read(self.earlier_record or self.record).get("agents")
        if not isinstance(earlier, dict):
            return {}
        return {
            k: v
            for k, v in earlier.items()
            if k in reused
            and isinstance(v, str)
            and _SHA.fullmatch(v)
            and self.isolation.sha(v) == v
        }

    def reuse_base(self) -> str:
        """What a new run's agents would start from, part of their fingerprint ("" in a
        shared checkout)."""
        return self._base() if self.enabled else ""

    def has_branch(self, agent_id: str) -> bool:
        """Whether the agent's work of an earlier run is still there to reuse."""
        return not self.enabled or self.isolation.exists(
            self.isolation.branch(self.wave.number, agent_id)
        )

    def _base(self, say: bool = False) -> str:
        """The commit the wave's agents start from: the wave's ``base`` when it names one,
        else HEAD; but when an earlier wave of the lane completed and its work is not in HEAD
        yet (merge: none, or a fast-forward that could not be made), that wave's branch, so
        that wave 2 builds on wave 1's work (and merging wave 2's branch takes both)."""
        ref = self.wave.isolation.base
        head = self.isolation.base(ref)
        earlier = None if ref is not None else self._earlier_wave()
        if earlier is None:
            return head
        number, branch, tip = earlier
        if self.isolation.contains(tip, head):
            return head  # in your branch already
        n = self.wave.number
        if self.isolation.contains(head, tip):
            if say:
                log.info(f"wave {n} starts from {branch}: wave {number}'s work, not yet merged")
            return tip
        if say:
            log.warning(
                f"wave {n} starts from your branch without wave {number}'s work: {branch} and "
                f"your branch have both moved since; merge {branch} to build on it"
            )
        return head

    def _earlier_wave(self) -> tuple[int, str, str] | None:
        """(number, branch, tip) of the latest earlier wave of the lane that completed in
        worktrees, by the launcher's run-state record."""
        waves = self._read(self.layout.run_state).get("waves")
        if not isinstance(waves, dict):
            return None
        done = [
            int(k)
            for k, v in waves.items()
            if isinstance(k, str)
            and k.isdigit()
            and len(k) < 6
            and int(k) < self.wave.number
            and isinstance(v, dict)
            and v.get("state") == "completed"
        ]
        for number in sorted(done, reverse=True):
            branch = self.isolation.integration_branch(number)
            if (tip := self.isolation.sha(branch)) is not None:
                return number, branch, tip
        return None

    def _read(self, path: Path) -> dict[str, Any]:
        try:
            found = read_json(path)
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _save(self) -> None:
        with self._lock:
            write_json_atomic(
                self.record,
                {"base": self.base, "ref": self.wave.isolation.base, "agents": dict(self.starts)},
            )

    def _tip(self) -> str | None:
        """The commit wave last left this wave's integration branch at."""
        tip = self._read(self.layout.branch_record).get(str(self.wave.number))
        return tip if isinstance(tip, str) and len(tip) == 40 else None

    def _set_tip(self, sha: str) -> None:
        with self._lock:
            tips = self._read(self.layout.branch_record)
            tips[str(self.wave.number)] = sha
            write_json_atomic(self.layout.branch_record, tips)

    def dependencies(self, agent: AgentDef) -> list[tuple[str, str]]:
        """(agent, branch) of each implementation agent it depends on, in wave-file order."""
        return [
            (a.id, self.isolation.branch(self.wave.number, a.id))
            for a in self.wave.implementation_agents
            if a.id in agent.depends_on
        ]

    def describe(self, agent: AgentDef) -> dict[str, str] | None:
        """Where the agent would work, for a dry run: path, branch and base; creates nothing."""
        if not self.enabled:
            return None
        if not self.base:
            try:
                self.base = self._base()
            except WaveError as exc:
                self.base = f"(unresolved: {exc})"
        closure = agent.is_closure
        name = INTEGRATION if closure else agent.id
        branch = (
            self.isolation.integration_branch(self.wave.number)
            if closure
            else (self.isolation.branch(self.wave.number, agent.id))
        )
        found = {
            "path": str(self.isolation.path(self.wave.number, name)),
            "branch": branch,
            "base": self.base,
        }
        if deps := [d for d, _ in self.dependencies(agent)]:
            found["merged_from"] = ", ".join(deps)
        return found

    def workdir_path(self, agent: AgentDef) -> Path | None:
        """The folder the agent runs in: its worktree, the integration worktree for closure
        agents, or None for the shared checkout."""
        if not self.enabled:
            return None
        name = INTEGRATION if agent.is_closure else agent.id
        return self.isolation.path(self.wave.number, name)

    def worktree(self, agent: AgentDef) -> Worktree | None:
        """Its worktree as the launcher names it (path, repository, branch), for its plan and
        its sandbox; None in the shared checkout."""
        path = self.workdir_path(agent)
        if path is None:
            return None
        number = self.wave.number
        closure = agent.is_closure
        iso = self.isolation
        branch = iso.integration_branch(number) if closure else iso.branch(number, agent.id)
        return Worktree(path, iso.common, branch)

    def root_for(self, agent: AgentDef) -> Path:
        """Where the agent's deliverables and report are looked for."""
        return self.workdir_path(agent) or self.lane.repo

    def needs_prepare(self, agent: AgentDef) -> bool:
        return self.enabled and not agent.is_closure

    def prepare(self, agent: AgentDef) -> str:
        """Make (or reuse) the agent's worktree, from its dependencies' work; "" when ready,
        else why not (a failing setup, a folder in the way, a conflict among dependencies):
        that agent fails without starting, the wave goes on."""
        try:
            tree = self.isolation.prepare(
                self.wave.number, agent.id, self.base, self.setup, self.dependencies(agent)
            )
        except WaveError as exc:
            if str(exc).startswith("merge-conflict"):
                return str(exc)
            return f"could not prepare its worktree: {exc}"
        # The first start of this run stands: a retry's or a reused agent's worktree is made
        # again from its branch, whose tip is its own work, not where that work began.
        if agent.id not in self.starts and agent.id not in self.reused:
            self.starts[agent.id] = tree.start
            self._save()
        return ""

    def settle(self, run: AgentRun) -> str:
        """Commit what the agent left uncommitted on its branch, success or not: "" when its
        work is safe, else why not (the agent fails with it; the worktree is kept)."""
        agent = run.launch.agent
        path = self.workdir_path(agent)
        if path is None:
            return ""
        closure = agent.is_closure
        branch = (
            self.isolation.integration_branch(self.wave.number)
            if closure
            else self.isolation.branch(self.wave.number, agent.id)
        )
        message = f"wave: {run.id} attempt {run.launch.attempt}"
        try:
            if self.bring_back is not None:
                self.bring_back(run.launch.session, run.id)
            if not path.exists():
                return f"its worktree {path} is gone: wave could not commit its work"
            keep_out = () if closure else self.setup.copy
            sha = self.isolation.commit(path, message, keep_out, branch=branch)
            if closure:
                self._set_tip(self.isolation.tree(path).out("rev-parse", "HEAD"))
        except WaveError as exc:
            self.kept.add(path)
            log.warning("could not commit the agent's work", agent=run.id, error=str(exc))
            return f"its work could not be committed: {exc}"
        if sha:
            log.info(f"committed {run.id}'s work", agent=run.id, commit=sha[:12])
        return ""

    def integrate(
        self, gate: GateResult, agents: Sequence[AgentDef], latest: Mapping[str, AgentRun]
    ) -> None:
        """Merge the agents' branches into the integration branch, in wave-file order; each
        branch that conflicts fails the gate with ``merge-conflict`` naming both agents."""
        if not self.enabled:
            return
        from ...worktrees.integration import integrate

        n = self.wave.number
        trees = [
            AgentTree(a.id, self.isolation.path(n, a.id), self.isolation.branch(n, a.id), self.base)
            for a in agents
            if a.id in latest
        ]
        result = integrate(self.isolation, n, self.base, trees, self._tip())
        if result.moved:
            log.warning(result.moved)
        self._set_tip(result.tip)
        for c in result.conflicts:
            branch = self.isolation.branch(n, c.agent)
            if c.missing:
                gate.fail("branch-missing", f"{c.agent}'s branch {branch} is gone", c.agent)
                gate.notes.append(f"Your branch {branch} was deleted; commit your work on it.")
                continue
            who = f"{c.agent} and {c.other}" if c.other else c.agent
            files = ", ".join(c.files) or "(files unknown)"
            gate.fail("merge-conflict", f"{who} changed the same lines of {files}", c.agent)
            gate.notes.append(
                f"Your branch {branch} did not merge into {result.branch}"
                + (f" after {c.other}'s" if c.other else "")
                + f": conflicting files {files}. The conflicting hunks:\n{c.hunks}"
            )

    def keep_report(self, report: str | None) -> str | None:
        """A closure report inside a worktree about to be removed is copied under the wave's
        state folder; returns where ``wave status`` should point (unchanged otherwise)."""
        if not self.enabled or not report or self.keep:
            return report
        inside = self.isolation.path(self.wave.number, INTEGRATION)
        source = Path(report)
        if not source.is_relative_to(inside) or not source.is_file() or source.is_symlink():
            return report
        if not source.resolve().is_relative_to(inside.resolve()):  # a linked folder on the way
            return report
        target = self.layout.kept_reports(self.wave.number) / source.relative_to(inside)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target, follow_symlinks=False)
        except OSError as exc:
            log.warning("closure report not kept", report=report, error=str(exc))
            return report
        return str(target)

    def _keep_summaries_reports(self) -> None:
        """Each closure agent's report is copied out of the integration worktree before it
        goes, and its summary points at the copy (`wave summary` names a file that exists)."""
        from .summaries import repoint_report

        for agent in self.wave.agents:
            if agent.is_closure:
                repoint_report(
                    self.layout.agent(self.wave.number, agent.id).summary, self.keep_report
                )

    def finish(self, completed: bool, remove: bool = True) -> str:
        """At wave end: fast-forward or say how to merge; remove worktrees unless kept."""
        if not self.enabled:
            return ""
        message = ""
        if completed:
            from ...worktrees.integration import finish

            message = finish(self.isolation, self.wave.number, self.base, self.lane.merge == "ff")
        if remove and not self.keep:
            self._keep_summaries_reports()
            for name in [*(a.id for a in self.wave.agents if not a.is_closure), INTEGRATION]:
                path = self.isolation.path(self.wave.number, name)
                try:
                    if path in self.kept or (path.exists() and not self.isolation.remove(path)):
                        log.warning(
                            "worktree kept: it holds work wave did not commit", path=str(path)
                        )
                except WaveError as exc:
                    log.warning("could not remove a worktree", path=str(path), error=str(exc))
        return message
