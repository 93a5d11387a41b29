"""The one place that talks to tmux, on the lane's private socket.

Each call is one `tmux -L SOCKET -f /dev/null ...` client process. libtmux's object model (the
tests' servers use it) is not imported: ~40 ms of a launch, for command lines and their output.

Sessions are always targeted as ``=name`` (exact match): ``-t w1-A1`` would also match ``w1-A10``.
Every argument tmux expands as a format (``new-session -s`` and ``-c``) goes through ``literal``:
a repository path holding ``#(cmd)`` must name a folder, not run ``cmd``.

The server's pid is recorded whenever tmux answers, so that a server whose socket file was
removed (a /tmp cleaner) is told apart from a server that is gone: it is asked to recreate
its socket (SIGUSR1), and a failed call is "unknown", never "every session is gone".
"""

from __future__ import annotations

import itertools
import os
import resource
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence

from ..errors import TmuxError, TmuxMissing
from ..sanitize import is_secret
from .base import PaneInfo as PaneInfo  # re-exported: tmux's view of an agent


class TmuxUnreachable(TmuxError):
    """The lane's tmux server runs (its pid is alive) but cannot be reached on its socket."""


# Panes keep little scrollback: output.log is the record and scrollback is the memory cost.
HISTORY_LIMIT = 200
NOFILE_TARGET = 8192
SOCKET_RECOVERY_SECONDS = 1.0  # how long a server asked to recreate its socket is waited on
SERVER_EXIT_SECONDS = 2.0  # how long a server whose socket is gone may take to exit
EXITING = "server exited unexpectedly"  # what a client says that met its server exiting


def literal(text: str) -> str:
    """``text`` for an argument tmux expands as a format: ``#`` doubled, so nothing in it runs."""
    return text.replace("#", "##")


def _new_session(name: str, cwd: str, command: Sequence[str]) -> list[str]:
    """A detached session printing its server's and pane's pids; name and folder literal."""
    head = ["new-session", "-d", "-P", "-F", "#{pid}\t#{pane_pid}", "-x", "200", "-y", "50"]
    return [*head, "-s", literal(name), "-c", literal(cwd), *command]


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has finished, whoever reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _is_tmux_server(pid: int, socket: str) -> bool:
    """Whether ``pid`` is still the tmux server of ``socket`` (not a process, nor another
    server, that took its pid since): tmux keeps the command line that started it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read().split(b"\0")
    except OSError:
        return process_running(pid)
    name = socket.encode()
    on_socket = b"-L" + name in args or any(
        a == b"-L" and b == name for a, b in itertools.pairwise(args)
    )
    return bool(args) and b"tmux" in args[0] and on_socket and process_running(pid)


def raise_fd_limit() -> None:
    """A tmux server holds a descriptor per session; it inherits our limit when we start it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = NOFILE_TARGET if hard == resource.RLIM_INFINITY else min(NOFILE_TARGET, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def running_sessions(socket: str) -> set[str]:
    """Sessions whose first pane still runs, from one `tmux` call and no TmuxServer: for
    `wave status`, which must start fast, and finds nothing (not an error) where none runs."""
    if shutil.which("tmux") is None:
        return set()
    argv = ["tmux", "-f", "/dev/null", "-L", socket, "list-panes", "-a", "-F"]
    try:
        done = subprocess.run(
            [*argv, "#{session_name}\t#{pane_dead}"],
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    rows = (line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    return {name for name, dead in rows if dead != "1"}


TMUX_MISSING = (
    "tmux is not installed (or not on PATH); wave runs every agent in a tmux session. Install it: "
    "`sudo apt-get install tmux` (Debian, Ubuntu), `sudo dnf install tmux` (Fedora), "
    "`brew install tmux` (macOS). `wave validate`, `wave launch --dry-run` and `wave status` "
    "work without it."
)


class TmuxServer:
    """A tmux server on one private socket, started with no user config."""

    def __init__(self, socket: str) -> None:
        if shutil.which("tmux") is None:
            raise TmuxMissing(TMUX_MISSING)
        self.socket = socket
        self.server_pid: int | None = None  # learnt from every answer tmux gives
        tmpdir = os.environ.get("TMUX_TMPDIR") or "/tmp"
        self.socket_path = os.path.join(tmpdir, f"tmux-{os.getuid()}", socket)

    def cmd(self, *args: str) -> subprocess.CompletedProcess[str]:
        """One tmux client call (a `;` in ``args`` separates commands): its exit code and
        output; a tmux that cannot be run at all is a TmuxError."""
        argv = ["tmux", "-L", self.socket, "-f", "/dev/null", *args]
        try:
            return subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="backslashreplace",
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except OSError as exc:
            raise TmuxError(f"tmux could not be run: {exc}") from exc

    def _run(self, *args: str, check: bool = True) -> list[str]:
        result = self.cmd(*args)
        if check and result.returncode != 0:
            error = " ".join(result.stderr.split())
            raise TmuxError(f"tmux {args[0]} failed on socket {self.socket}: {error}")
        return result.stdout.splitlines()

    def is_running(self) -> bool:
        return self.cmd("list-sessions").returncode == 0

    def server_alive(self) -> bool:
        """Whether the server this object last heard from still runs, socket or not."""
        return self.server_pid is not None and _is_tmux_server(self.server_pid, self.socket)

    def recover_socket(self) -> bool:
        """Ask a live server whose socket file is gone to recreate it (tmux does so on SIGUSR1);
        True when the socket is there again."""
        if not self.server_alive():
            return False
        if not os.path.lexists(self.socket_path):
            assert self.server_pid is not None
            try:
                os.makedirs(os.path.dirname(self.socket_path), mode=0o700, exist_ok=True)
                os.kill(self.server_pid, signal.SIGUSR1)
            except OSError:
                return False
            deadline = time.monotonic() + SOCKET_RECOVERY_SECONDS
            while not self._socket_listening() and time.monotonic() < deadline:
                time.sleep(0.02)
        return self._socket_listening()

    def _exited_since(self) -> bool:
        """Whether the server, its socket gone, was on its way out (its last session just
        removed: tmux removes its socket, then exits) and has exited: a new one may start."""
        deadline = time.monotonic() + SERVER_EXIT_SECONDS
        while self.server_alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        self.server_pid = None
        return True

    def _socket_listening(self) -> bool:
        """Whether the socket takes connections: tmux binds it (the file appears) a moment
        before it listens, and a client in between hears "no server running"."""
        if not self._socket_present():
            return False
        import socket  # only a server that lost its socket is asked: not at every start-up

        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            probe.connect(self.socket_path)
        except (ConnectionRefusedError, FileNotFoundError, TimeoutError):
            return False
        except OSError:
            return True  # a path too long for a socket address: tmux itself will tell
        finally:
            probe.close()
        return True

    def _socket_present(self) -> bool:
        try:
            return stat.S_ISSOCK(os.lstat(self.socket_path).st_mode)
        except OSError:
            return False

    def shutdown_if_unreachable(self) -> bool:
        """End a server that runs but can no longer be reached on its socket, by its pid, so
        that no server is left behind; True when one was ended."""
        if not self.server_alive() or self.recover_socket():
            return False
        assert self.server_pid is not None
        try:
            os.kill(self.server_pid, signal.SIGTERM)
        except OSError:
            return False
        return True

    def start_session(
        self,
        name: str,
        argv: Sequence[str],
        cwd: str,
        *,
        env: Mapping[str, str] | None = None,
        keep_pane: bool = True,
    ) -> int | None:
        """One tmux invocation: server options, then the detached session running ``argv``;
        returns the pane's pid (its process group: the wrapper and what it starts).

        Agent panes stay after their process exits (``remain-on-exit``) so a person can still
        read them; the launcher's and dashboard's panes go away with their process. The name
        and folder are formats to tmux; ``argv`` and ``-e`` values are passed as they are.
        """
        extra_env = [arg for k, v in (env or {}).items() for arg in ("-e", f"{k}={v}")]
        args = _new_session(name, cwd, [*extra_env, *argv])
        if not keep_pane:
            args += [";", "set-option", "-w", "-t", f"={name}:", "remain-on-exit", "off"]
        try:
            out = self._run(*self._server_options(), ";", *args)
        except TmuxError as exc:  # met the server as it exited (its last session just gone)
            if EXITING not in str(exc) or not self._exited_since():
                raise
            out = self._run(*self._server_options(), ";", *args)  # a new one starts
        return self._pane_pids(out)[-1] if out else None

    def start_sessions(
        self, sessions: Sequence[tuple[str, Sequence[str], str]]
    ) -> list[int | None]:
        """Agent sessions ``(name, argv, cwd)`` started by one tmux invocation (one client
        process for a whole burst, not one each); the pane pids of those tmux started, in
        order. tmux stops at the first that fails: the list is then shorter, and the caller
        starts the rest one by one to learn each one's error."""
        args = [a for name, argv, cwd in sessions for a in (";", *_new_session(name, cwd, argv))]
        return self._pane_pids(self._run(*self._server_options(), *args, check=False))

    def _server_options(self) -> list[str]:
        raise_fd_limit()
        if self.server_alive() and not self.recover_socket() and not self._exited_since():
            # Starting a second server beside the first would run agents twice.
            raise TmuxUnreachable(
                f"the tmux server (pid {self.server_pid}) lost its socket {self.socket_path}"
            )
        return [
            "start-server",
            ";",
            *forget_secrets_args(),
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "set-option",
            "-g",
            "history-limit",
            str(HISTORY_LIMIT),
        ]

    def _pane_pids(self, lines: Sequence[str]) -> list[int | None]:
        """What each new-session printed (``#{pid}<tab>#{pane_pid}``); the server's pid kept."""
        pids: list[int | None] = []
        for line in lines:
            server_pid, _, pane_pid = line.partition("\t")
            if server_pid.isdigit():
                self.server_pid = int(server_pid)
            pids.append(int(pane_pid) if pane_pid.isdigit() else None)
        return pids

    def panes(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every session's first pane, in one cheap ``list-panes`` call; {} when no server runs.

        A server that runs but lost its socket is asked to recreate it first. With ``strict``,
        any failure but "no server" raises TmuxError (TmuxUnreachable when the server is alive
        without a socket): a liveness check must not read a failed call as "all gone".
        """
        fields = "#{session_name}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}"
        args = ("list-panes", "-a", "-F", fields + "\t#{pane_pid}\t#{pid}")
        result = self.cmd(*args)
        if result.returncode != 0 and self.server_alive() and self.recover_socket():
            result = self.cmd(*args)
        if result.returncode != 0:
            error = " ".join(result.stderr.split())
            if strict and self.server_alive() and not self._socket_present():
                raise TmuxUnreachable(
                    f"tmux server pid {self.server_pid} does not answer on {self.socket_path}: "
                    f"{error}"
                )
            transient = strict and self.server_alive()  # its socket is there: try again later
            if transient or (
                strict and "no server running" not in error and "error connecting" not in error
            ):
                raise TmuxError(f"tmux list-panes failed on socket {self.socket}: {error}")
            return {}
        out = self._pane_infos(result.stdout)
        if any(info.dead and info.dead_status is None for info in out.values()):
            # tmux 3.3 may miss a pane's SIGCHLD, so its exit status never comes, until another
            # child of the server ends: one does (run-shell waits for it), then the panes again
            again = self.cmd("run-shell", "true", ";", *args)
            out = self._pane_infos(again.stdout) if again.returncode == 0 else out
        return out

    def _pane_infos(self, listed: str) -> dict[str, PaneInfo]:
        """``list-panes`` lines read, the server's pid noted."""
        out: dict[str, PaneInfo] = {}
        for line in listed.splitlines():
            parts = line.split("\t")
            if len(parts) != 6 or parts[0] in out:
                continue
            name, dead, status, signum, pid, server_pid = parts
            if server_pid.isdigit():
                self.server_pid = int(server_pid)
            # A process killed by a signal has no exit status: report it as a shell would.
            code = int(status) if status.lstrip("-").isdigit() else None
            if code is None and signum.isdigit():
                code = 128 + int(signum)
            out[name] = PaneInfo(
                session=name,
                dead=dead == "1",
                dead_status=code,
                pid=int(pid) if pid.isdigit() else None,
            )
        return out

    def has_session(self, name: str) -> bool:
        return self.cmd("has-session", "-t", f"={name}").returncode == 0

    def kill_sessions(self, names: Iterable[str]) -> None:
        """Kill sessions by exact name in one tmux call; names already gone are ignored."""
        live = set(self.panes())
        args: list[str] = []
        for name in names:
            if name in live:
                args += ["kill-session", "-t", f"={name}", ";"]
        if args:
            self._run(*args[:-1], check=False)

    def kill_server(self) -> None:
        if self.is_running():
            self.cmd("kill-server")
        else:
            self.shutdown_if_unreachable()

    def attach_argv(self, name: str) -> list[str]:
        return ["tmux", "-L", self.socket, "attach-session", "-t", f"={name}"]


# -- secrets ---------------------------------------------------------------------------------
def forget_secrets_args() -> list[str]:
    """`set-environment -g -u NAME ;` for each secret in our environment. A tmux server keeps
    the environment of whoever started it and gives it to every later session (and to
    `tmux show-environment -g`); agents read their keys from their owner-only env file."""
    return [
        arg
        for name, value in os.environ.items()
        if is_secret(name, value)
        for arg in ("set-environment", "-g", "-u", name, ";")
    ]


def signal_process_group(pid: int, signum: int) -> bool:
    """Signal the pane's process group (the wrapper and the CLI under it); False if gone."""
    try:
        os.killpg(pid, signum)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
