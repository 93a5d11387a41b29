"""The one place wave talks to OpenSSH: the system ``ssh`` client, so the person's config,
agent, keys and ``known_hosts`` apply as they do for them (a lane may name a config of its
own, passed as ``-F``). One multiplexed connection per host (ControlMaster), never a password
prompt (BatchMode), host keys as ``known_hosts`` says (StrictHostKeyChecking is never turned
off); every word of a remote command is quoted on its own, and what a host answers is hostile
input like an agent's files."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, NamedTuple

from ..definitions.sections.ssh import DESTINATION_RE
from ..errors import PlacementError

CONNECT_SECONDS = 10  # a host that does not answer a new connection in this long is not there
PERSIST_SECONDS = 120  # the shared connection outlives its last use this long
ANSWER_LIMIT = 1 << 20  # what wave reads of a host's answer to one command, at most


class SshError(PlacementError):
    """A host could not be reached, or refused: its words, cleaned, in the message."""


class SshHost(NamedTuple):
    """One host of a lane's ``ssh.hosts``: its name in wave, and how ssh reaches it."""

    name: str
    destination: str
    config: Path | None = None  # the lane's own ssh config (-F), else the person's


class Answer(NamedTuple):
    code: int
    out: str
    err: str


class SshClient:
    """Commands on one host over its one shared connection (the master starts with the first
    command and is ended by ``close``)."""

    def __init__(self, host: SshHost, control_dir: Path | None) -> None:
        """``control_dir``: where its shared connection's socket lives; None: every command
        connects on its own (a person's command, which never leaves a connection behind)."""
        if not DESTINATION_RE.fullmatch(host.destination):
            raise SshError(f"host {host.name}: {host.destination!r} is no ssh destination")
        self.host = host
        self.control_dir = control_dir

    def base(self, tty: bool = False) -> list[str]:
        """``ssh`` and its options, up to and with the destination. A person's terminal
        (``tty``) never leaves a shared connection of its own running after it."""
        argv = ["ssh"]
        if self.host.config is not None:
            argv += ["-F", str(self.host.config)]
        if self.control_dir is None:
            shared = ["ControlMaster=no", "ControlPath=none"]
        elif tty:
            shared = ["ControlMaster=no", f"ControlPath={self.control_dir}/%C"]
        else:
            private_folder(self.control_dir)
            shared = [
                "ControlMaster=auto",
                f"ControlPath={self.control_dir}/%C",
                f"ControlPersist={PERSIST_SECONDS}",
            ]
        argv += [
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={CONNECT_SECONDS}",
            *(word for option in shared for word in ("-o", option)),
            "-o",
            "ServerAliveInterval=15",
            "-t" if tty else "-T",
            "--",
            self.host.destination,
        ]
        return argv

    def argv(self, remote: Sequence[str], tty: bool = False) -> list[str]:
        """The local argv that runs ``remote`` (its words) on the host: the remote shell gets
        them quoted one by one, so no word of an agent's or a lane's is ever run as code."""
        return [*self.base(tty), " ".join(shlex.quote(word) for word in remote)]

    def run(
        self,
        remote: Sequence[str],
        stdin: str | bytes | None = None,
        timeout: float = 60,
        limit: int = ANSWER_LIMIT,
    ) -> Answer:
        """``remote`` on the host: its exit code and what it printed (bounded, decoded as
        text). Exit 255 is ssh's own: the host could not be reached or refused."""
        data = stdin.encode() if isinstance(stdin, str) else stdin or b""
        try:
            done = bounded_run(self.argv(remote), data, timeout, limit)
        except OSError as exc:
            raise SshError(f"ssh could not be run: {exc}") from exc
        if done is None:
            return Answer(255, "", f"no answer from {self.host.name} in {timeout:g} s")
        code, out, err = done
        if code is None:
            return Answer(255, "", f"host {self.host.name} answered past {limit} bytes")
        return Answer(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def git_ssh_command(self) -> str:
        """``GIT_SSH_COMMAND`` for git's own pushes and fetches to the host: the same options
        and the same shared connection as every other command (git adds the destination)."""
        return " ".join(shlex.quote(word) for word in self.base()[:-2])

    def git_url(self, path: str) -> str:
        """The URL of a repository at ``path`` on the host, as git over ssh takes it."""
        return f"ssh://{self.host.destination}{path if path.startswith('/') else '/' + path}"

    def connected(self) -> bool:
        """Whether the shared connection to the host is up."""
        if self.control_dir is None:
            return False
        check = [*self.base()[:-2], "-O", "check", "--", self.host.destination]
        return subprocess.run(check, capture_output=True, timeout=15).returncode == 0

    def close(self) -> None:
        """End the shared connection (nothing of it is left running)."""
        if self.control_dir is None:
            return
        stop = [*self.base()[:-2], "-O", "exit", "--", self.host.destination]
        subprocess.run(stop, capture_output=True, timeout=15)

    def missing(self, programs: Sequence[str]) -> list[str]:
        """Which of ``programs`` the host's login shell does not find (tmux, git, a CLI)."""
        script = 'for p in "$@"; do command -v -- "$p" >/dev/null 2>&1 || echo "$p"; done'
        answer = self.run(["sh", "-c", script, "sh", *programs])
        if answer.code != 0:
            raise SshError(f"host {self.host.name}: {said(answer)}")
        lacking = set(answer.out.split())
        return [p for p in programs if p in lacking]


def control_prefix(tag: str, lane: str) -> str:
    """How a launch's connection folders of a checkout's lane are named: the lane digested,
    as a socket's whole path must fit in ~100 bytes."""
    import hashlib

    return f"wave-ssh-{tag}-{hashlib.sha1(lane.encode()).hexdigest()[:6]}-"


def private_folder(path: Path) -> None:
    """``path`` made owner-only, or found so: a folder of this user's, mode 0700, no link (a
    socket in a folder someone else made first would carry wave's commands to them)."""
    import os
    import stat

    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or mode & 0o077:
        raise SshError(f"{path} is not a private folder of this user's: its sockets not used")


def end_stale_connections(parent: Path, prefix: str, keep: Path) -> None:
    """End the shared connections a dead launcher left (folders ``prefix*`` in ``parent``,
    ours, real folders, not ``keep``), and remove their folders."""
    import os
    import stat

    for folder in parent.glob(prefix + "*"):
        try:
            info = folder.lstat()
        except OSError:
            continue
        if folder == keep or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        for _ in range(5):  # a master that was still starting shows its socket a moment later
            if not folder.is_dir():
                break
            with contextlib.suppress(OSError):
                for entry in folder.iterdir():
                    if entry.is_socket():  # the master's socket: `-O exit` ends it
                        end = ["ssh", "-o", f"ControlPath={entry}", "-O", "exit", "--", "x"]
                        with contextlib.suppress(OSError, subprocess.SubprocessError):
                            subprocess.run(end, capture_output=True, timeout=15, check=False)
                    entry.unlink()
                folder.rmdir()
                break
            time.sleep(0.1)


def said(answer: Answer) -> str:
    """A host's own words for a failure, one clean line (it is hostile input)."""
    from ..sanitize import one_line

    words = one_line(answer.err or answer.out)[:300]
    return words or f"exit {answer.code}"


def bounded_run(
    argv: Sequence[str], data: bytes, timeout: float, limit: int
) -> tuple[int | None, bytes, bytes] | None:
    """``argv`` with ``data`` on its stdin: its exit code, its output (at most ``limit``
    bytes) and its errors (at most ANSWER_LIMIT). What a host sends is read only up to those
    bounds: one that says more is killed there (its code None), never read into memory whole.
    None when it did not end within ``timeout``."""
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    got = (bytearray(), bytearray())
    flooded = threading.Event()

    def drain(fd: int, buf: bytearray, cap: int) -> None:
        while chunk := os.read(fd, 1 << 16):
            if len(buf) + len(chunk) > cap:  # more than it may say: stopped here
                flooded.set()
                proc.kill()
                return
            buf += chunk

    def feed(stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError):  # it ended (or was killed) before reading it all
            stream.write(data)
        with contextlib.suppress(OSError):
            stream.close()

    threads = [
        threading.Thread(target=drain, args=(proc.stdout.fileno(), got[0], limit), daemon=True),
        threading.Thread(
            target=drain, args=(proc.stderr.fileno(), got[1], ANSWER_LIMIT), daemon=True
        ),
        threading.Thread(target=feed, args=(proc.stdin,), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    finally:
        for thread in threads:
            thread.join()
        proc.stdout.close()
        proc.stderr.close()
    return (None if flooded.is_set() else proc.returncode), bytes(got[0]), bytes(got[1])
