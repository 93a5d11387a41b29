"""Whether the base an agent's finished work stands on moved in a way that makes that work
stale (``isolation: worktree``). The base moving is not enough: the person merging the wave's
own branch (as wave tells them to) moves it by the agents' own work, which stays good. A move
makes the work stale when it changed a file other than as the wave's result has it: wave
cannot tell which files an agent read, so any such change may have changed its input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...definitions.model import AgentDef
from ...errors import WaveError
from ...sanitize import strip_controls
from ...state.layout import StateLayout
from ...state.logs import Logger
from ...worktrees.isolation import Isolation

log = Logger(__name__)
_SHA = re.compile(r"[0-9a-f]{40}")
EARLIER_RUNS = 16  # the earlier runs of a wave whose bases a finished work may stand on
SHOWN_FILES = 3


def earlier_bases(layout: StateLayout, wave: int) -> list[str]:
    """The bases the runs of ``wave`` started from, latest first: the run now in its folder,
    then those set aside (each ``isolation.json`` read as hostile)."""
    folder = layout.wave_dir(wave)
    aside = sorted(folder.parent.glob(f"{folder.name}.*"), key=_mtime, reverse=True)
    found: list[str] = []
    for run in [folder, *aside[:EARLIER_RUNS]]:
        base = _recorded_base(run / "isolation.json")
        if base and base not in found:
            found.append(base)
    return found


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _recorded_base(path: Path) -> str | None:
    try:
        if path.is_symlink() or path.stat().st_size > 1 << 20:
            return None
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    base = found.get("base") if isinstance(found, dict) else None
    return base if isinstance(base, str) and _SHA.fullmatch(base) else None


class BaseMoves:
    """The moves from the bases earlier runs started from to the base a new run starts from
    (``now``), judged for each agent; git is asked once per base and branch."""

    def __init__(self, isolation: Isolation, wave: int, now: str, earlier: Sequence[str]) -> None:
        self.isolation = isolation
        self.wave = wave
        self.now = now
        self.earlier = [b for b in earlier if b != now]
        self._changed: dict[str, set[str] | None] = {}
        self._foreign: dict[str, set[str] | None] = {}
        self._said: dict[str, str | None] = {}  # one reason a base: the first agent it names

    def stale(self, agent: AgentDef, bases: Iterable[str]) -> str | None:
        """Why the agent's work, made on each of ``bases``, is stale on the base now (None:
        it is not)."""
        for base in dict.fromkeys(bases):
            if base != self.now and (why := self._why(agent, base)):
                return why
        return None

    def _why(self, agent: AgentDef, base: str) -> str | None:
        if base not in self._said:
            self._said[base] = self._judge(agent, base)
        return self._said[base]

    def _judge(self, agent: AgentDef, base: str) -> str | None:
        foreign = self._foreign_changes(base)
        if foreign is None:
            return f"the base moved since {agent.id} ran (the commit it started from is gone)"
        if not foreign:
            return None
        hit = sorted(foreign)
        shown = ", ".join(strip_controls(f) for f in hit[:SHOWN_FILES])
        more = f" and {len(hit) - SHOWN_FILES} more" if len(hit) > SHOWN_FILES else ""
        return f"the base moved since {agent.id} ran ({shown}{more} changed)"

    def _foreign_changes(self, base: str) -> set[str] | None:
        """The files that differ between ``base`` and the base now, other than as the wave's
        own result (its integration branch) has them (None: ``base`` is gone)."""
        if base not in self._foreign:
            changed = self._diff(base, self.now)
            if changed is None or not changed:
                self._foreign[base] = changed
            else:
                foreign = changed
                for result in self._results():  # a file as any run's result has it is the wave's
                    theirs = self._diff(result, self.now)
                    foreign = foreign if theirs is None else foreign & theirs
                self._foreign[base] = foreign
        return self._foreign[base]

    def _results(self) -> list[str]:
        """The wave's results: its integration branch, and those of earlier runs (set aside
        as ``wave/<lane>/runs/<stamp>/wave-<n>``), latest first."""
        name = self.isolation.integration_branch(self.wave)
        runs = f"refs/heads/wave/{self.isolation.lane}/runs/"
        try:
            done = self.isolation.main().run(
                "for-each-ref",
                "--sort=-committerdate",
                "--format=%(objectname) %(refname)",
                runs,
                check=False,
            )
        except (OSError, WaveError):
            return []
        found = [self.isolation.sha(name)]
        for line in done.stdout.splitlines() if done.returncode == 0 else []:
            sha, _, ref = line.partition(" ")
            if ref.endswith(f"/{name.rsplit('/', 1)[-1]}") and _SHA.fullmatch(sha):
                found.append(sha)
        return [s for s in found[: EARLIER_RUNS + 1] if s]

    def _diff(self, old: str, new: str) -> set[str] | None:
        """The paths whose content differs between two commits (None: one is not there)."""
        key = f"{old}..{new}"
        if key not in self._changed:
            self._changed[key] = self._ask_git(old, new)
        return self._changed[key]

    def _ask_git(self, old: str, new: str) -> set[str] | None:
        try:
            if self.isolation.sha(old) is None or self.isolation.sha(new) is None:
                return None
            done = self.isolation.main().run(
                "diff", "--name-only", "--no-renames", "-z", old, new, "--", check=False
            )
        except (OSError, WaveError) as exc:
            log.warning("could not compare bases", old=old[:12], new=new[:12], error=str(exc))
            return None
        if done.returncode != 0:
            return None
        return {p for p in done.stdout.split("\0") if p}
