"""The launcher's own record of what it launched and saw end: the one store wave takes its
decisions from (reuse of finished work, ``--resume``, ``depends_on_lanes``, accounts parked on a
usage limit).

Everything under ``.wave/`` is written by agents too (a status file, a run state, governor.json
are files in the repository they work in), so none of it decides alone. The ledger lives in a
per-user folder outside the repository (``$XDG_STATE_HOME/wave/ledger/``, mode 0700), one
append-only JSON-lines file per repository and lane, written only by the launcher holding the
lane's lock. It is read as hostile all the same: every record checked and bounded, a torn or
odd line skipped, the last valid record of a key the one that counts.

While agents run with the person's own rights they can still reach this folder; it moves the
decisions out of the folder they are told to work in, and a sandbox can hide it from them.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..names import AGENT_ID_RE, LANE_NAME_RE
from .fsutil import ensure_dir, json_text, write_atomic
from .jsonl import append_line, read_jsonl
from .lifecycle import TERMINAL, AgentState
from .logs import get_logger


def _log() -> Any:
    """This module's logger, made when first needed (structlog loads in a few ms)."""
    return get_logger(module=__name__)


LEDGER_VERSION = 1
COMPACT_AT = 4 * 1024 * 1024  # a ledger this big is rewritten with its last records only
MAX_WAVE = 10_000
MAX_ATTEMPT = 1_000_000
MAX_USD = 1e9
LAUNCHED, REJECTED = "launched", "rejected"  # started, not seen ending; failed by its gate
# What the launcher records when it could not see how an agent ended (its session or job gone
# from view, its status unreadable): a status written later by the agent's wrapper may say.
UNSEEN_ENDS = (LAUNCHED, AgentState.SESSION_MISSING.value, AgentState.STATUS_UNREADABLE.value)
OUTCOMES = frozenset({LAUNCHED, REJECTED, *(s.value for s in TERMINAL)})
WAVE_STATES = frozenset({"running", "completed", "failed", "blocked", "cancelled"})
_DIGEST_RE = re.compile(r"[0-9a-f]{64}")
_SLUG_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def ledger_home() -> Path:
    """``$XDG_STATE_HOME/wave/ledger``, else ``~/.local/state/wave/ledger``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "wave" / "ledger"


def ledger_path(repo: Path, lane: str) -> Path:
    """``<home>/<repository name>-<sha256(path)[:16]>/<lane>.jsonl``: one file per repository
    and lane, named so a person can tell which is which."""
    if not LANE_NAME_RE.fullmatch(lane):
        raise ValueError(f"invalid lane name {lane!r}")
    resolved = repo.resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:16]
    slug = _SLUG_RE.sub("-", resolved.name)[:40].strip(".-") or "repo"
    return ledger_home() / f"{slug}-{digest}" / f"{lane}.jsonl"


class AgentEntry(NamedTuple):
    """The last thing the launcher recorded of one agent of one wave."""

    attempt: int
    outcome: str  # "launched" until the launcher saw it end; then how it ended
    fingerprint: str | None
    at: float


@dataclass
class LedgerView:
    """What a ledger says, read back: the last valid record of each key."""

    agents: dict[tuple[int, str], AgentEntry] = field(default_factory=dict)
    waves: dict[int, str] = field(default_factory=dict)
    governor: dict[str, Any] | None = None  # the governor's last saved decisions

    def agent(self, wave: int, agent_id: str) -> AgentEntry | None:
        return self.agents.get((wave, agent_id))

    def wave_state(self, wave: int) -> str | None:
        return self.waves.get(wave)


class Ledger:
    """The writer, held by the launcher that holds the lane's lock. A record that cannot be
    written is logged and lost: a decision taken later without it falls back to the safe side
    (the work runs again, the dependency waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.broken = False  # a write failed: what the ledger says may be incomplete
        self.view: LedgerView | None = None  # what it said when this launcher opened it

    @classmethod
    def for_lane(cls, repo: Path, lane: str) -> Ledger:
        return cls(ledger_path(repo, lane))

    def open(self, compact: bool = True) -> LedgerView | None:
        """Make the folder (0700), compact an overgrown file (only under the lane's lock),
        and read it back (None: no ledger yet, this lane's first run under a launcher that
        keeps one)."""
        try:
            _private_folders(self.path.parent)
            size = self.path.stat().st_size if self.path.exists() else 0
        except OSError as exc:
            _log().warning("ledger unusable", path=str(self.path), error=str(exc))
            self.broken = True
            return None
        self.view = view = read_ledger(self.path)
        if view is not None and compact and size > COMPACT_AT:
            self._compact(view)
        return view

    def agents(self, wave: int, entries: Iterable[tuple[str, int, str | None, str]]) -> None:
        """Agents launched or ended, as ``(id, attempt, fingerprint, outcome)``: one write
        for a whole burst."""
        self._write(
            {
                "kind": "agent",
                "wave": wave,
                "agent": agent,
                "attempt": attempt,
                "fingerprint": fp or None,
                "outcome": outcome,
            }
            for agent, attempt, fp, outcome in entries
        )

    def wave_state(self, wave: int, state: str) -> None:
        self._write([{"kind": "wave", "wave": wave, "state": state}])

    def governor(self, decisions: Mapping[str, Any]) -> None:
        self._write([{"kind": "governor", **decisions}])

    def _write(self, records: Iterable[Mapping[str, Any]]) -> None:
        now = round(time.time(), 3)
        text = "".join(
            json_text({"v": LEDGER_VERSION, **r, "at": now}, separators=(",", ":")) + "\n"
            for r in records
        )
        if not text:
            return
        try:
            append_line(self.path, text)
        except OSError as exc:
            self.broken = True
            _log().warning("ledger record not written", path=str(self.path), error=str(exc))

    def _compact(self, view: LedgerView) -> None:
        """Rewrite the file with the records that still count (atomically: a crash leaves
        the old file whole)."""
        lines = [
            {
                "kind": "agent",
                "wave": w,
                "agent": a,
                "attempt": e.attempt,
                "fingerprint": e.fingerprint,
                "outcome": e.outcome,
                "at": e.at,
            }
            for (w, a), e in sorted(view.agents.items())
        ]
        lines += [{"kind": "wave", "wave": w, "state": s} for w, s in sorted(view.waves.items())]
        if view.governor is not None:
            lines.append({"kind": "governor", **view.governor})
        text = "".join(json_text({"v": LEDGER_VERSION, **r}) + "\n" for r in lines)
        with contextlib.suppress(OSError):
            write_atomic(self.path, text, mode=0o600)


def _private_folders(folder: Path) -> None:
    """The ledger's folders exist, are real folders (not links), are their owner's and only
    theirs (0700)."""
    ensure_dir(folder)
    home = ledger_home()
    for path in (home, folder) if folder.parent == home else (folder,):
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(f"{path} is not a real folder")
        if st.st_uid != os.getuid():
            raise OSError(f"{path} belongs to another user")
        if st.st_mode & 0o077:
            os.chmod(path, 0o700)


def read_ledger(path: Path) -> LedgerView | None:
    """The ledger at ``path`` read back as hostile (None when there is none)."""
    if not path.exists() and not path.is_symlink():
        return None
    view = LedgerView()
    for record in read_jsonl(path):
        _take(view, record)
    return view


def _take(view: LedgerView, record: dict[str, Any]) -> None:
    kind, wave = record.get("kind"), _int(record.get("wave"), 1, MAX_WAVE)
    if kind == "agent" and wave is not None:
        agent, outcome = record.get("agent"), _word(record.get("outcome"))
        attempt = _int(record.get("attempt"), 1, MAX_ATTEMPT)
        if not (isinstance(agent, str) and AGENT_ID_RE.fullmatch(agent)):
            return
        if attempt is None or outcome not in OUTCOMES:
            return
        fp = record.get("fingerprint")
        fp = fp if isinstance(fp, str) and _DIGEST_RE.fullmatch(fp) else None
        view.agents[(wave, agent)] = AgentEntry(attempt, outcome, fp, _epoch(record.get("at")))
    elif kind == "wave" and wave is not None and _word(record.get("state")) in WAVE_STATES:
        view.waves[wave] = str(record["state"])
    elif kind == "governor":
        view.governor = {k: v for k, v in record.items() if k not in ("v", "kind", "at")}


def _word(value: Any) -> str:
    """A short string field, else "" (a list or a mapping is no word, nor hashable)."""
    return value if isinstance(value, str) and len(value) <= 64 else ""


def _int(value: Any, low: int, high: int) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return value if ok else None


def _epoch(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and 0 <= number < 1e11:
            return number
    return 0.0


def success_doubt(view: LedgerView | None, wave: int, agent: str, fingerprint: str) -> str | None:
    """Why an earlier success of ``agent`` cannot be reused (None: the launcher saw it end
    completed, launched with ``fingerprint``)."""
    if view is None:
        return "no launcher record of earlier runs (this lane's ledger starts with this run)"
    entry = view.agent(wave, agent)
    if entry is None:
        return "the launcher has no record of it"
    if entry.outcome != AgentState.COMPLETED.value:
        return f"the launcher saw it end {entry.outcome}"
    if entry.fingerprint != fingerprint:
        return "what shapes its work changed"
    return None


def end_doubt(
    view: LedgerView | None, wave: int, agent: str, attempt: int, state: str
) -> str | None:
    """Why a dead launcher's agent, whose status file says it ended ``state`` in
    ``attempt``, is not taken as ended so (None: the ledger agrees, or recorded the launch
    and the agent ended while no launcher watched)."""
    if view is None:
        return "no launcher record of earlier runs (this lane's ledger starts with this run)"
    entry = view.agent(wave, agent)
    if entry is None or entry.attempt != attempt:
        return f"no launcher launched its attempt {attempt}"
    if entry.outcome not in (*UNSEEN_ENDS, state):
        return f"the launcher saw it end {entry.outcome}, its status.json says {state}"
    return None
