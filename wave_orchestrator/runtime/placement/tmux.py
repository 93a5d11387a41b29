"""The one place that talks to tmux, through libtmux, on the lane's private socket.

Sessions are always targeted as ``=name`` (exact match): ``-t w1-A1`` would also match ``w1-A10``.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import libtmux

from ...errors import TmuxError
from ...sanitize import is_secret

# Panes keep little scrollback: output.log is the record and scrollback is the memory cost.
HISTORY_LIMIT = 200
NOFILE_TARGET = 8192


@dataclass(frozen=True)
class PaneInfo:
    session: str
    dead: bool
    dead_status: int | None
    pid: int | None


def raise_fd_limit() -> None:
    """A tmux server holds a descriptor per session; it inherits our limit when we start it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = NOFILE_TARGET if hard == resource.RLIM_INFINITY else min(NOFILE_TARGET, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class TmuxServer:
    """A tmux server on one private socket, started with no user config."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self._server = libtmux.Server(socket_name=socket, config_file="/dev/null")

    def _run(self, *args: str, check: bool = True) -> list[str]:
        result = self._server.cmd(*args)
        if check and result.returncode != 0:
            raise TmuxError(
                f"tmux {args[0]} failed on socket {self.socket}: {' '.join(result.stderr)}"
            )
        return list(result.stdout)

    def is_running(self) -> bool:
        return bool(self._server.is_alive())

    def start_session(
        self,
        name: str,
        argv: Sequence[str],
        cwd: str,
        *,
        env: Mapping[str, str] | None = None,
        keep_pane: bool = True,
    ) -> None:
        """One tmux invocation: server options, then the detached session running ``argv``.

        Agent panes stay after their process exits (``remain-on-exit``) so a person can still
        read them; the launcher's and dashboard's panes go away with their process.
        """
        raise_fd_limit()
        extra_env = [arg for k, v in (env or {}).items() for arg in ("-e", f"{k}={v}")]
        args = [
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
            ";",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "200",
            "-y",
            "50",
            "-c",
            cwd,
            *extra_env,
            *argv,
        ]
        if not keep_pane:
            args += [";", "set-option", "-w", "-t", f"={name}:", "remain-on-exit", "off"]
        self._run(*args)

    def panes(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every session's first pane, in one cheap ``list-panes`` call; {} when no server runs.

        With ``strict``, any other failure raises TmuxError: a liveness check must not read
        a failed call as "every session is gone".
        """
        result = self._server.cmd(
            "list-panes",
            "-a",
            "-F",
            "#{session_name}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}",
        )
        if result.returncode != 0:
            error = " ".join(result.stderr)
            if strict and "no server running" not in error and "error connecting" not in error:
                raise TmuxError(f"tmux list-panes failed on socket {self.socket}: {error}")
            return {}
        out: dict[str, PaneInfo] = {}
        for line in result.stdout:
            parts = line.split("\t")
            if len(parts) != 5 or parts[0] in out:
                continue
            name, dead, status, signum, pid = parts
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
        return self._server.cmd("has-session", "-t", f"={name}").returncode == 0

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
            self._server.kill()

    def attach_argv(self, name: str) -> list[str]:
        return ["tmux", "-L", self.socket, "attach-session", "-t", f"={name}"]


# -- secrets (issue 10, class 11) ------------------------------------------------------------
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


def process_group_alive(pid: int) -> bool:
    """Whether any process of the group led by ``pid`` is still there."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
