"""The file desk: agents of a wave that share files claim them before editing.

State lives in SQLite (``desk.sqlite3`` in the state dir). Every change runs in one
``BEGIN IMMEDIATE`` transaction, so claims from many processes at once are serialised: exactly
one agent is granted a free file and the others queue in a single, gap-free order.

Every connection, the launcher's included, keeps the rollback journal (``desk.sqlite3-journal``)
and truncates it after a change instead of deleting it: a sandboxed agent reaches the desk
through the two files bound into its sandbox, and a file bound in cannot be removed (nor made
anew beside a hidden state dir). One connection that deleted the journal would cut every
sandboxed agent off the desk.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError, WaveError
from ..state.events import utc_now
from ..state.fsutil import check_regular_or_missing, ensure_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS holders (
    wave INTEGER NOT NULL, path TEXT NOT NULL, agent TEXT NOT NULL, intent TEXT NOT NULL,
    since TEXT NOT NULL, PRIMARY KEY (wave, path));
CREATE TABLE IF NOT EXISTS queue (
    wave INTEGER NOT NULL, path TEXT NOT NULL, agent TEXT NOT NULL, intent TEXT NOT NULL,
    seq INTEGER NOT NULL, since TEXT NOT NULL, PRIMARY KEY (wave, path, agent));
CREATE TABLE IF NOT EXISTS handovers (
    id INTEGER PRIMARY KEY AUTOINCREMENT, wave INTEGER NOT NULL, path TEXT NOT NULL,
    from_agent TEXT NOT NULL, to_agent TEXT, note TEXT NOT NULL, at TEXT NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0);
"""
# Kept and truncated, never deleted: see the module's docstring.
JOURNAL_MODE = "truncate"


class DeskRefused(WaveError):
    """A desk request that would deadlock or that only the holder may make."""

    exit_code = 2


class DeskBroken(WaveError):
    """The desk's database cannot be read or written (corrupt, or not a database)."""


class DeskTimeout(WaveError):
    exit_code = 1


@dataclass(frozen=True)
class ClaimResult:
    outcome: str  # granted | held | queued
    path: str
    holder: str
    holder_intent: str = ""
    position: int = 0
    joined: bool = False  # queued just now (not a re-claim that keeps its place)


@dataclass(frozen=True)
class Handover:
    path: str
    from_agent: str
    to_agent: str | None
    note: str
    at: str


@dataclass
class Mine:
    held: list[tuple[str, str]] = field(default_factory=list)  # (path, intent)
    queued: list[tuple[str, int, str]] = field(default_factory=list)  # (path, position, holder)


class Desk:
    """One lane's desk, seen from one wave."""

    def __init__(self, db_path: Path, repo: Path, wave: int) -> None:
        self.db_path = db_path
        self.repo = repo.resolve()
        self.wave = wave
        ensure_dir(db_path.parent)  # a read-only or full state dir: a message, not a trace
        for suffix in ("", "-journal", "-wal", "-shm"):  # sqlite would follow a link
            check_regular_or_missing(db_path.with_name(db_path.name + suffix))
        with contextlib.closing(self._connect()) as db:
            try:
                db.executescript(SCHEMA)
            except sqlite3.Error as exc:
                raise DeskBroken(f"the desk {self.db_path} cannot be used: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.db_path, timeout=60, isolation_level=None)
            db.execute("PRAGMA busy_timeout = 60000")
            mode = db.execute(f"PRAGMA journal_mode = {JOURNAL_MODE}").fetchone()
        except sqlite3.Error as exc:
            raise DeskBroken(f"the desk {self.db_path} cannot be opened: {exc}") from exc
        if mode is None or str(mode[0]).lower() != JOURNAL_MODE:
            db.close()
            said = "none" if mode is None else str(mode[0])[:20]
            raise DeskBroken(
                f"the desk {self.db_path} keeps journal mode {said!r} and cannot be given "
                f"{JOURNAL_MODE!r}: another process holds it open in that mode"
            )
        return db

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One immediate (write-locked) transaction: the unit of atomicity across processes."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise DeskBroken(f"the desk {self.db_path} failed: {exc}") from exc
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def normalise(self, raw: str) -> str:
        """`./a`, `/repo/a` and `a` are one file: a path relative to the repository (a relative
        path is taken relative to the repository, wherever the command runs)."""
        if not raw.strip() or "\x00" in raw:
            raise UsageError("give a file path")
        given = Path(raw).expanduser()
        absolute = Path(os.path.normpath(given if given.is_absolute() else self.repo / given))
        resolved = Path(os.path.realpath(absolute.parent)) / absolute.name
        if resolved == self.repo or not resolved.is_relative_to(self.repo):
            raise UsageError(f"{raw!r} is not a file inside the repository {self.repo}")
        return resolved.relative_to(self.repo).as_posix()

    # -- requests -------------------------------------------------------------------------------
    def claim(self, agent: str, raw_path: str, intent: str = "") -> ClaimResult:
        path = self.normalise(raw_path)
        with self._tx() as db:
            row = db.execute(
                "SELECT agent, intent FROM holders WHERE wave=? AND path=?", (self.wave, path)
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO holders VALUES (?, ?, ?, ?, ?)",
                    (self.wave, path, agent, intent, utc_now()),
                )
                db.execute(
                    "DELETE FROM queue WHERE wave=? AND path=? AND agent=?",
                    (self.wave, path, agent),
                )
                return ClaimResult("granted", path, agent, intent)
            holder, holder_intent = row
            if holder == agent:
                db.execute(
                    "UPDATE holders SET intent=? WHERE wave=? AND path=?", (intent, self.wave, path)
                )
                return ClaimResult("held", path, agent, intent)
            mine = db.execute(
                "SELECT seq FROM queue WHERE wave=? AND path=? AND agent=?",
                (self.wave, path, agent),
            ).fetchone()
            joined = mine is None
            if mine is None:  # join the end of the queue; a re-claim keeps its place
                seq = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM queue WHERE wave=? AND path=?",
                    (self.wave, path),
                ).fetchone()[0]
                db.execute(
                    "INSERT INTO queue VALUES (?, ?, ?, ?, ?, ?)",
                    (self.wave, path, agent, intent, seq, utc_now()),
                )
            else:
                seq = mine[0]
                db.execute(
                    "UPDATE queue SET intent=? WHERE wave=? AND path=? AND agent=?",
                    (intent, self.wave, path, agent),
                )
            position = db.execute(
                "SELECT COUNT(*) FROM queue WHERE wave=? AND path=? AND seq<=?",
                (self.wave, path, seq),
            ).fetchone()[0]
            return ClaimResult("queued", path, holder, holder_intent, position, joined)

    def handover(self, agent: str, raw_path: str, note: str) -> Handover:
        path = self.normalise(raw_path)
        with self._tx() as db:
            row = db.execute(
                "SELECT agent FROM holders WHERE wave=? AND path=?", (self.wave, path)
            ).fetchone()
            if row is None or row[0] != agent:
                holder = f"{row[0]} holds it" if row else "nobody holds it"
                raise DeskRefused(f"only the holder may hand over {path} ({holder})")
            return self._pass_on(db, path, agent, note)

    def _pass_on(self, db: sqlite3.Connection, path: str, agent: str, note: str) -> Handover:
        """Give ``path`` to the first in its queue, or release it; log the handover."""
        nxt = db.execute(
            "SELECT agent, intent FROM queue WHERE wave=? AND path=? ORDER BY seq LIMIT 1",
            (self.wave, path),
        ).fetchone()
        db.execute("DELETE FROM holders WHERE wave=? AND path=?", (self.wave, path))
        to_agent = None
        if nxt is not None:
            to_agent, intent = nxt
            db.execute(
                "DELETE FROM queue WHERE wave=? AND path=? AND agent=?", (self.wave, path, to_agent)
            )
            db.execute(
                "INSERT INTO holders VALUES (?, ?, ?, ?, ?)",
                (self.wave, path, to_agent, intent, utc_now()),
            )
        at = utc_now()
        db.execute(
            "INSERT INTO handovers (wave, path, from_agent, to_agent, note, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (self.wave, path, agent, to_agent, note, at),
        )
        return Handover(path, agent, to_agent, note, at)

    def mine(self, agent: str) -> Mine:
        out = Mine()
        with contextlib.closing(self._connect()) as db:
            out.held = list(
                db.execute(
                    "SELECT path, intent FROM holders WHERE wave=? AND agent=? ORDER BY path",
                    (self.wave, agent),
                )
            )
            for path, seq in db.execute(
                "SELECT path, seq FROM queue WHERE wave=? AND agent=? ORDER BY path",
                (self.wave, agent),
            ).fetchall():
                position = db.execute(
                    "SELECT COUNT(*) FROM queue WHERE wave=? AND path=? AND seq<=?",
                    (self.wave, path, seq),
                ).fetchone()[0]
                holder = db.execute(
                    "SELECT agent FROM holders WHERE wave=? AND path=?", (self.wave, path)
                ).fetchone()
                out.queued.append((path, position, holder[0] if holder else "nobody"))
        return out

    def blocking(self, agent: str) -> list[tuple[str, list[str]]]:
        """Files ``agent`` holds that others are queued for: it must hand them over first."""
        with contextlib.closing(self._connect()) as db:
            rows = db.execute(
                "SELECT h.path, q.agent FROM holders h "
                "JOIN queue q ON q.wave=h.wave AND q.path=h.path "
                "WHERE h.wave=? AND h.agent=? ORDER BY h.path, q.seq",
                (self.wave, agent),
            ).fetchall()
        out: dict[str, list[str]] = {}
        for path, waiting in rows:
            out.setdefault(path, []).append(waiting)
        return list(out.items())

    def take_handover(self, agent: str) -> Handover | None:
        """The oldest handover to ``agent`` not yet delivered, of a file it still holds."""
        with self._tx() as db:
            row = db.execute(
                "SELECT h.id, h.path, h.from_agent, h.note, h.at FROM handovers h "
                "JOIN holders o ON o.wave=h.wave AND o.path=h.path AND o.agent=h.to_agent "
                "WHERE h.wave=? AND h.to_agent=? AND h.delivered=0 ORDER BY h.id DESC LIMIT 1",
                (self.wave, agent),
            ).fetchone()
            if row is None:
                return None
            # Older undelivered handovers of the same file are superseded by this one.
            db.execute(
                "UPDATE handovers SET delivered=1 WHERE wave=? AND to_agent=? AND path=? AND id<=?",
                (self.wave, agent, row[1], row[0]),
            )
            return Handover(row[1], row[2], agent, row[3], row[4])

    def wait(self, agent: str, timeout: float | None = None, interval: float = 0.2) -> Handover:
        """Block until a file is handed to ``agent``. Refused at once while ``agent`` holds a file
        someone else waits for, so two agents can never wait on each other."""
        blocking = self.blocking(agent)
        if blocking:
            files = "; ".join(f"{path} ({', '.join(who)} waiting)" for path, who in blocking)
            raise DeskRefused(f"hand over first: you hold files others are queued for: {files}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            got = self.take_handover(agent)
            if got is not None:
                return got
            if not self.mine(agent).queued:
                got = self.take_handover(agent)  # it may have come while we looked
                if got is not None:
                    return got
                raise DeskRefused("nothing to wait for: you are not queued for any file")
            if deadline is not None and time.monotonic() >= deadline:
                raise DeskTimeout(f"no file was handed to {agent} within {timeout:g}s")
            time.sleep(interval)

    def release_all(self, agent: str, note: str) -> list[Handover]:
        """When an agent finishes: hand over all it holds (with ``note``) and leave every queue."""
        with self._tx() as db:
            db.execute("DELETE FROM queue WHERE wave=? AND agent=?", (self.wave, agent))
            paths = [
                r[0]
                for r in db.execute(
                    "SELECT path FROM holders WHERE wave=? AND agent=?", (self.wave, agent)
                ).fetchall()
            ]
            return [self._pass_on(db, path, agent, note) for path in paths]

    def claimed_paths(self) -> set[str]:
        """Every path of this wave someone held or handed over (a checkout that happened)."""
        with contextlib.closing(self._connect()) as db:
            held = db.execute("SELECT path FROM holders WHERE wave=?", (self.wave,)).fetchall()
            passed = db.execute("SELECT path FROM handovers WHERE wave=?", (self.wave,)).fetchall()
        return {r[0] for r in [*held, *passed]}

    def reset(self) -> None:
        """A wave that starts over starts with an empty desk (its log included)."""
        with self._tx() as db:
            for table in ("holders", "queue", "handovers"):
                db.execute(f"DELETE FROM {table} WHERE wave=?", (self.wave,))

    def status(self) -> dict[str, object]:
        with contextlib.closing(self._connect()) as db:
            holders = [
                dict(zip(("path", "agent", "intent", "since"), r, strict=True))
                for r in db.execute(
                    "SELECT path, agent, intent, since FROM holders WHERE wave=? ORDER BY path",
                    (self.wave,),
                )
            ]
            queues: dict[str, list[dict[str, object]]] = {}
            for path, who, intent, since in db.execute(
                "SELECT path, agent, intent, since FROM queue WHERE wave=? ORDER BY path, seq",
                (self.wave,),
            ):
                queues.setdefault(path, []).append(
                    {
                        "agent": who,
                        "intent": intent,
                        "since": since,
                        "position": len(queues.get(path, [])) + 1,
                    }
                )
            log = [
                dict(zip(("path", "from", "to", "note", "at"), r, strict=True))
                for r in db.execute(
                    "SELECT path, from_agent, to_agent, note, at FROM handovers "
                    "WHERE wave=? ORDER BY id",
                    (self.wave,),
                )
            ]
        return {"wave": self.wave, "holders": holders, "queues": queues, "handovers": log}
