"""What an agent left running, read from /proc: its process group's live members (a zombie has
finished, whoever reaps it) and every process that carries its token in its environment
(``WAVE_AGENT_TOKEN``, set by run.sh and inherited by all it starts, whatever their session
or group: a ``setsid`` daemon, a ``tmux new -d``, a dev server).

A process caught in its exec shows no environment yet (nor a command line): its token is
unknown for that instant. Asked whether a token is still carried, a fresh scan looks again,
and a process still caught there counts as yes for now: the agent is asked about again, not
taken for gone while what it left finishes starting.

One scan of /proc answers every question asked within SCAN_SECONDS, so ending 200 agents
at once costs a few scans, not 200. Where there is no /proc, ``killpg(pgid, 0)`` answers for
the group and no token is found. The launcher also becomes a child subreaper where Linux
allows it: orphans of its agents are reparented to it instead of to a PID 1 that may never
reap them, and it reaps them (``reap_adopted``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field

TOKEN_VAR = b"WAVE_AGENT_TOKEN="
# What a process caught mid-exec is listed under: no token holds a NUL byte (the environment
# is NUL-separated), so none is ever mistaken for it.
EXECING = b"\0"
SCAN_SECONDS = 0.1
PR_SET_CHILD_SUBREAPER = 36
PROC = "/proc"
PF_KTHREAD = 0x00200000  # a kernel thread: no environment, never an agent's
ENVIRON_LIMIT = 1 << 20  # an environment bigger than this is not read past it


@dataclass(eq=False)  # one live object: compared by identity, not by its fields
class ProcessTable:
    """One scan of /proc: the live processes by group, and the orphans left to us to reap."""

    taken: float
    groups: dict[int, int] = field(default_factory=dict)  # pgid -> live (not zombie) members
    live: dict[int, int] = field(default_factory=dict)  # every live pid -> its group
    adopted_zombies: list[int] = field(default_factory=list)  # ours to reap
    _tagged: dict[bytes, list[int]] | None = None

    def tagged(self, panes: Collection[int] = ()) -> dict[bytes, list[int]]:
        """token -> live pids; the environments are read on the first question only (most
        rounds ask about groups alone). Not read: the processes in the group of a running
        pane (``panes``: the pids tmux gave), most of a fleet's. A process that left its
        agent's group (setsid, a daemon) leads a group of its own, which no pane's is; a
        pane whose leader is gone is read (its pid may be another process's by now). Processes
        caught mid-exec are listed under EXECING."""
        if self._tagged is None:
            leaders = {pid for pid in panes if self.live.get(pid) == pid}
            self._tagged = {}
            for pid, group in self.live.items():
                if group not in leaders and (token := _token(str(pid))) is not None:
                    self._tagged.setdefault(token, []).append(pid)
        return self._tagged


_table: ProcessTable | None = None


def process_table(fresh: bool = False) -> ProcessTable | None:
    """The process table as /proc shows it now (or within SCAN_SECONDS); None when this
    machine has no /proc."""
    global _table
    now = time.monotonic()
    if not fresh and _table is not None and now - _table.taken < SCAN_SECONDS:
        return _table
    try:
        names = os.listdir(PROC)
    except OSError:
        return None
    me, my_session = os.getpid(), os.getsid(0)
    table = ProcessTable(now)
    for name in names:
        if not name.isdigit():
            continue
        stat = _stat(name)
        if stat is None:
            continue
        state, ppid, pgid, session, flags = stat
        if flags & PF_KTHREAD:
            continue
        if state == "Z":
            if ppid == me and session != my_session:
                table.adopted_zombies.append(int(name))
            continue
        table.groups[pgid] = table.groups.get(pgid, 0) + 1
        table.live[int(name)] = pgid
    _table = table
    return table


def forget() -> None:
    """The next question scans again (after a signal was sent)."""
    global _table
    _table = None


def _stat(pid: str) -> tuple[str, int, int, int, int] | None:
    """(state, ppid, pgid, session, flags) of ``pid``: the fields after the command name,
    which may itself hold spaces and parentheses."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        state = fields[0].decode()
        return state, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[6])
    except (OSError, IndexError, ValueError):
        return None


def _read(pid: str, name: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``/proc/<pid>/<name>`` (None: gone, or not ours to read)."""
    try:
        with open(f"{PROC}/{pid}/{name}", "rb") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _token(pid: str) -> bytes | None:
    """The agent token in the environment of ``pid`` (None: none, or not ours to read;
    EXECING: caught mid-exec). An empty read is read again: one opened just before an exec
    reads empty after it. Empty twice, with an empty command line too, is an exec under
    way (a process started with no environment still has its command line)."""
    data = _read(pid, "environ", ENVIRON_LIMIT)
    if data == b"":
        data = _read(pid, "environ", ENVIRON_LIMIT)
        if data == b"" and _read(pid, "cmdline", 1) == b"":
            return EXECING
    if not data:
        return None
    if data.startswith(TOKEN_VAR):
        start = len(TOKEN_VAR)
    else:
        at = data.find(b"\0" + TOKEN_VAR)
        if at < 0:
            return None
        start = at + 1 + len(TOKEN_VAR)
    end = data.find(b"\0", start)
    return data[start : end if end >= 0 else len(data)]


def group_alive(pgid: int) -> bool:
    """Whether a process of the group led by ``pgid`` still runs (zombies do not). While its
    leader runs, that is the answer: the scan of every process (a fifth of the launcher's
    loop in a 200-agent burst) is for groups whose leader is gone."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    leader = _stat(str(pgid))
    if leader is not None and leader[0] != "Z" and leader[2] == pgid:
        return True
    table = process_table()
    return True if table is None else table.groups.get(pgid, 0) > 0


def tagged(token: str, panes: Collection[int] = ()) -> list[int]:
    """The live processes that carry ``token``, in whatever session or group (but those of a
    running pane's group: ``ProcessTable.tagged``)."""
    table = process_table()
    return [] if table is None else list(table.tagged(panes).get(token.encode(), ()))


def carried(token: str, panes: Collection[int] = ()) -> bool:
    """Whether a live process carries ``token`` (as ``tagged``). When none does but one was
    caught mid-exec, a fresh scan looks again (the exec is most likely over); one still
    caught there keeps the answer yes, to be asked again, rather than an agent taken for
    gone while what it left finishes starting."""
    for fresh in (False, True):
        if fresh:
            forget()
        table = process_table()
        if table is None:
            return False
        found = table.tagged(panes)
        if token.encode() in found:
            return True
        if EXECING not in found:
            return False
    return True


def signal_tagged(token: str, signum: int, panes: Collection[int] = ()) -> int:
    """Send ``signum`` to every live process carrying ``token``; how many were signalled."""
    sent = 0
    for pid in tagged(token, panes):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
            sent += 1
    if sent:
        forget()
    return sent


def become_subreaper() -> bool:
    """Orphans of what this process starts come to it, not to PID 1 (Linux 3.4+)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def reap_adopted() -> int:
    """Reap the finished orphans reparented to this subreaper: zombie children of another
    session (what wave itself starts stays in its own session and is waited on by its
    caller). Returns how many. A ``waitid`` peek first: with no child finished, no scan."""
    try:
        if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return 0
    except ChildProcessError:
        return 0  # no child at all
    table = process_table()
    reaped = 0
    for pid in table.adopted_zombies if table is not None else ():
        with contextlib.suppress(ChildProcessError, OSError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped += 1
    if table is not None:
        table.adopted_zombies.clear()
    return reaped
