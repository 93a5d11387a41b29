"""One SSH host of a lane, followed: its slots, its agents, and one look at it every half
second over its shared connection, which brings each agent's output and status files here.

A look lists the panes of the lane's tmux server on the host and, for each agent wave follows
there, what its ``output.log`` grew by and its ``status.json`` and ``backoff.json``; those are
written into the agent's folder here (never through a link), where the launcher's file events
see them as they see a local agent's. A status is written only once the log that precedes it
is all here. A host that stops answering is told once, waited for ``host_timeout``, and then
its agents are reported lost; a host that answers again takes agents again.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from ..definitions.model import SshHostDef
from ..state.fsutil import open_regular, write_atomic
from ..state.logs import Logger
from .ssh_client import SshClient
from .ssh_remote import (
    LOG_CHUNK,
    LOOK,
    SOCKET_RE,
    Look,
    Pane,
    look_limit,
    read_look,
    script,
)

log = Logger(__name__)

LOOK_SECONDS = 0.5  # how often a host is looked at: an agent's end is here within a second
LOOK_TIMEOUT = 20.0  # a look that takes longer counts as no answer
HUNTED_LIMIT = 512  # ended sessions searched for by name in one look, at most
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Followed(NamedTuple):
    """An agent wave follows on a host: its folder here and there, and its worktree there."""

    local_dir: Path
    host_dir: str
    cwd: str  # where it works on the host
    local_cwd: str  # where it works here
    branch: str  # its branch ("" when it works in a shared checkout)
    mirrored: bool  # its files are brought back (not on a shared filesystem)


class Host:
    """A host's state, shared by the launcher's threads and its follower thread."""

    def __init__(
        self,
        index: int,
        spec: SshHostDef,
        client: SshClient,
        timeout_seconds: float,
        socket: str = "",
    ) -> None:
        """``socket``: the lane's tmux socket name, the first half of its agents' tokens
        (what they leave running is found by them); with none, nothing is searched for."""
        self.index, self.spec, self.client = index, spec, client
        self.timeout_seconds = timeout_seconds
        self.socket = socket if SOCKET_RE.fullmatch(socket) else ""
        self.root: str | None = None  # <workdir>/<repo tag> there, once prepared
        self.can_scan = True  # what its agents leave running can be searched for (as it says)
        self.lock = threading.Lock()
        self.followed: dict[str, Followed] = {}
        self.slots: set[str] = set()  # the sessions that hold one of its max_agents
        self.offsets: dict[str, int] = {}  # session -> bytes of its output.log brought back
        self.asked: dict[str, int] = {}  # session -> bytes of its `wave` requests taken
        self.partial: dict[str, bytes] = {}  # session -> a request line not whole yet
        # (its folder there, session, one request line): what runs its `wave` commands
        self.on_request: Callable[[str, str, bytes], None] = lambda *_: None
        self.written: dict[tuple[str, str], bytes] = {}  # what each mirrored file last was
        self.panes: dict[str, Pane] = {}
        # session -> what its ended agent left running, as the last look found; each is
        # searched for again by the next look, its pane gone or not, until none is left
        self.leftovers: Mapping[str, tuple[int, ...]] = {}
        self.looked_at = -1.0  # monotonic: when the last answered look began
        self.started: dict[str, tuple[float, int]] = {}  # session -> (when, pane pid) started
        self.silent_since: float | None = None  # wall clock: it stopped answering
        self.lost = False  # silent past host_timeout: its agents were reported lost
        self.doomed: set[str] = set()  # sessions to kill when it answers again
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def answering(self) -> bool:
        return self.silent_since is None

    def room(self) -> int:
        with self.lock:
            return max(0, self.spec.max_agents - len(self.slots)) if self.answering else 0

    def follow(self, session: str, followed: Followed, offset: int | None = None) -> None:
        """Follow a new try of an agent; or, with ``offset``, a try a launcher that came back
        takes over: its log brought back from there (what the dead one brought), its pane
        as the last look saw it."""
        with self.lock:
            self.followed[session] = followed
            self.slots.add(session)
            self.offsets[session] = offset or 0
            self.asked.setdefault(session, 0)  # a new try keeps its folder's requests file
            for name in ("status.json", "backoff.json"):
                self.written.pop((session, name), None)
            if offset is None:  # a new try: its session's old pane is not its own
                self.panes.pop(session, None)
            elif (pane := self.panes.get(session)) is not None and pane.dead:
                # Ended while no launcher looked: it ends here once a look brought its files.
                self.panes[session] = pane._replace(dead=False, status=None)

    def reserve(self, session: str) -> None:
        """One of its slots taken for a start in flight (the start follows, or releases it)."""
        with self.lock:
            self.slots.add(session)
            self.started.pop(session, None)  # an earlier try's: its pane is not this one

    def started_now(self, session: str, pid: int) -> None:
        with self.lock:
            self.started[session] = (time.monotonic(), pid)

    def panes_seen(self) -> dict[str, Pane]:
        """Its panes as the last look saw them, with the sessions started since that look
        began as running (a look does not see what did not exist yet)."""
        with self.lock:
            panes = dict(self.panes)
            for name, (when, pid) in self.started.items():
                if name not in panes and when >= self.looked_at:
                    panes[name] = Pane(name, False, None, pid)
        return panes

    def session_of(self, pid: int) -> str | None:
        """The session whose pane runs ``pid``: a live pane's, then the one wave started with
        it (known after its pane is gone), then a dead pane's (a pid reused on the host is
        never taken for an ended agent's)."""
        with self.lock:
            panes = self.panes.items()
            for name, pane in panes:
                if pane.pid == pid and not pane.dead:
                    return name
            for name, (_, started) in self.started.items():
                if started == pid:
                    return name
            return next((name for name, pane in panes if pane.pid == pid), None)

    def pane(self, session: str, pid: int) -> Pane | None:
        """The pane of ``session`` as the last look saw it, if it is the one running ``pid``."""
        with self.lock:
            pane = self.panes.get(session)
        return pane if pane is not None and pane.pid == pid else None

    def left_running(self, session: str) -> bool:
        """Whether the last look found processes its ended agent left running."""
        with self.lock:
            return bool(self.leftovers.get(session))

    def token(self, session: str) -> str:
        """The agent's ``WAVE_AGENT_TOKEN`` ("" when the lane's socket is not known)."""
        return f"{self.socket}/{session}" if self.socket else ""

    def release(self, session: str) -> None:
        with self.lock:
            self.slots.discard(session)
            self.followed.pop(session, None)

    # -- the follower -----------------------------------------------------------------------
    def start_following(self, warn: Callable[[str], None]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(warn,), name=f"ssh-{self.name}", daemon=True
            )
            self._thread.start()

    def stop_following(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=LOOK_TIMEOUT + 5)

    def _run(self, warn: Callable[[str], None]) -> None:
        while not self._stop.is_set():
            try:
                self.look(warn)
            except Exception as exc:  # the follower must outlive one bad answer
                log.warning("host look failed", host=self.name, error=str(exc))
            self._stop.wait(LOOK_SECONDS)

    def look(self, warn: Callable[[str], None]) -> bool:
        """One look; False when the host did not answer."""
        if self.root is None:
            return False
        with self.lock:
            asked = [
                (name, f.host_dir, self.offsets.get(name, 0))
                for name, f in self.followed.items()
                if f.mirrored
            ]
            # ended agents whose leftovers the last look found, and followed ones whose
            # session went without a look seeing it end (its server killed by the agent)
            gone = (n for n, (at, _) in self.started.items() if at < self.looked_at)
            vanished = {n for n in gone if n in self.followed and n not in self.panes}
            hunted = sorted(vanished.union(self.leftovers))[:HUNTED_LIMIT]
            args = [
                word
                for name, folder, at in asked
                for word in (name, folder, f"{at}:{self.asked.get(name, 0)}")
            ]
        began = time.monotonic()
        answer = self.client.run(
            script(LOOK, self.root, self.socket, str(len(hunted)), *hunted, *args),
            timeout=LOOK_TIMEOUT,
            limit=look_limit(len(asked)),
        )
        names = [name for name, _, _ in asked]
        seen = read_look(answer.out, names, hunted) if answer.code == 0 else None
        if seen is None:
            self._silent(warn)
            return False
        self._answered(warn)
        self._take(seen, began, {name: at for name, _, at in asked})
        return True

    def _silent(self, warn: Callable[[str], None]) -> None:
        now = time.time()
        if self.silent_since is None:
            self.silent_since = now
            since = time.strftime("%H:%M", time.localtime(now))
            warn(f"host {self.name} not answering since {since}: its agents are kept")
        elif not self.lost and now - self.silent_since >= self.timeout_seconds:
            self.lost = True
            minutes = self.timeout_seconds / 60
            warn(f"host {self.name} lost after {minutes:g} min: its agents end host-lost")

    def _answered(self, warn: Callable[[str], None]) -> None:
        if self.silent_since is None:
            return
        self.silent_since, self.lost = None, False
        warn(f"host {self.name} answers again: it takes agents again")
        with self.lock:
            doomed, self.doomed = list(self.doomed), set()
        if doomed:  # sessions removed while it was silent
            from .ssh_remote import KILL

            assert self.root is not None
            self.client.run(script(KILL, self.root, *doomed), timeout=LOOK_TIMEOUT)

    def _take(self, seen: Look, began: float, asked: dict[str, int] | None = None) -> None:
        """Bring the look's output and files here; note the panes."""
        with self.lock:
            followed = dict(self.followed)
        caught_up: set[str] = set()
        for name, f in followed.items():
            now_at = self.offsets.get(name, 0)
            if asked is not None and asked.get(name) != now_at:
                continue  # a new try began since the look asked: what it saw is the old one's
            offset, data = seen.logs.get(name, (now_at, b""))
            if data and offset == now_at and self._append(f.local_dir / "output.log", data):
                with self.lock:
                    if self.offsets.get(name) == now_at:  # not a new try meanwhile
                        self.offsets[name] = offset + len(data)
            if len(data) < LOG_CHUNK:
                caught_up.add(name)
        for name, (offset, data) in seen.requests.items():
            self._requests(name, offset, data, followed.get(name))
        for name in caught_up:  # a backoff the wrapper ended there ends here too
            if (name, "backoff.json") in self.written and (name, "backoff.json") not in seen.files:
                with contextlib.suppress(OSError):
                    os.unlink(followed[name].local_dir / "backoff.json")
                del self.written[(name, "backoff.json")]
        for (name, file), data in seen.files.items():
            where = followed.get(name)
            if where is None or name not in caught_up or self.written.get((name, file)) == data:
                continue
            if (name, file) not in self.written and (where.local_dir / file).exists():
                continue  # an end decided here (a person's stop, a budget) is never replaced
            with contextlib.suppress(OSError, UnicodeDecodeError):
                write_atomic(where.local_dir / file, data.decode("utf-8"), mode=0o644)
                self.written[(name, file)] = data
        panes = dict(seen.panes)
        for name, f in followed.items():  # an end shows once what it wrote is here
            if f.mirrored and name not in caught_up and (pane := panes.get(name)) and pane.dead:
                panes[name] = pane._replace(dead=False, status=None)
        with self.lock:
            self.panes, self.looked_at, self.leftovers = panes, began, seen.leftovers
            for name in list(self.slots):  # ended, or gone since it started: its slot is free
                if name not in self.started:
                    continue  # its start is in flight: what a look shows is an earlier try
                pane, (when, pid) = seen.panes.get(name), self.started[name]
                ended = pane is not None and pane.dead and pane.pid == pid
                if ended or (pane is None and when < began):
                    self.slots.discard(name)

    def _requests(self, name: str, offset: int, data: bytes, where: Followed | None) -> None:
        """New bytes of an agent's `wave` requests: each whole line handed on, once."""
        if where is None or offset != self.asked.get(name, 0) or not data:
            return
        self.asked[name] = offset + len(data)
        lines = (self.partial.pop(name, b"") + data).split(b"\n")
        if lines[-1]:
            self.partial[name] = lines[-1][: 1 << 20]
        for line in lines[:-1]:
            if line:
                self.on_request(where.host_dir, name, line)

    @staticmethod
    def _append(path: Path, data: bytes) -> bool:
        try:
            fd = open_regular(path, _APPEND)
        except OSError:
            return False
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return True
