"""Whether bubblewrap works on this machine, asked once per process: the binary is there and
starts a sandbox like an agent's (its own process ids and /proc, no capabilities). When it
does not, the answer names the one command or setting that fixes it: a missing package,
Ubuntu's AppArmor rule against unprivileged user namespaces, a kernel that forbids them, a
container started without the rights to make one.

One subprocess at most, with a timeout; the kernel settings that explain a failure are files
under /proc/sys, read only when it failed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..errors import WaveError

PROBE_SECONDS = 5.0
# The options every agent's sandbox uses that need the kernel's consent.
PROBE_OPTIONS = (
    "--unshare-pid",
    "--unshare-ipc",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
)
SYSCTL = Path("/proc/sys")
INSTALL = "sudo apt-get install bubblewrap (or run scripts/setup.sh, which installs it)"
APPARMOR_PROFILE = (
    "or allow bwrap alone: an AppArmor profile /etc/apparmor.d/bwrap with "
    "`profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }`, loaded with "
    "`sudo apparmor_parser -r /etc/apparmor.d/bwrap`"
)


class SandboxUnavailable(WaveError):
    """``sandbox: bubblewrap`` asked for where bubblewrap cannot run: the agent fails with
    what is wrong and what fixes it."""


class Probe(NamedTuple):
    """What was found: ``ok``, else the problem and its fix, each one line."""

    ok: bool
    bwrap: str | None = None  # the binary, when found
    problem: str = ""
    fix: str = ""

    @property
    def message(self) -> str:
        if self.ok:
            return f"bubblewrap works here ({self.bwrap})"
        return f"bubblewrap cannot run here: {self.problem}; fix: {self.fix}"

    def require(self) -> str:
        """The binary, or ``SandboxUnavailable`` saying why not and what fixes it."""
        if not self.ok or self.bwrap is None:
            raise SandboxUnavailable(self.message)
        return self.bwrap


_CACHE: dict[str | None, Probe] = {}


def probe(bwrap: str | None = None, *, fresh: bool = False) -> Probe:
    """Whether ``bwrap`` (default: ``$WAVE_BWRAP``, else the one on PATH) works here; asked
    once per process and binary (``fresh``: ask again, as `wave doctor` does after a person
    fixed it)."""
    if fresh or bwrap not in _CACHE:
        _CACHE[bwrap] = check(bwrap or find_bwrap(), run_probe, read_sysctl, os.geteuid())
    return _CACHE[bwrap]


def find_bwrap() -> str | None:
    """``$WAVE_BWRAP`` (a bubblewrap built elsewhere, or none: a path that is not there), else
    ``bwrap`` on PATH."""
    given = os.environ.get("WAVE_BWRAP")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("bwrap")


def run_probe(bwrap: str) -> tuple[int, str]:
    """Start a trivial sandbox: its exit status and what bwrap said on stderr."""
    try:
        done = subprocess.run(
            [bwrap, *PROBE_OPTIONS, "--", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, f"no answer in {PROBE_SECONDS:g} s"
    except OSError as exc:
        return -1, str(exc)
    return done.returncode, done.stderr.decode("utf-8", "replace").strip()


def read_sysctl(name: str) -> str | None:
    """A kernel setting (``kernel.unprivileged_userns_clone``), None when this kernel has
    no such setting."""
    try:
        return (SYSCTL / name.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def check(
    bwrap: str | None,
    run: Callable[[str], tuple[int, str]],
    sysctl: Callable[[str], str | None],
    euid: int,
) -> Probe:
    """The verdict, from the binary found, a run of it and the kernel's settings (passed in:
    each failure's message is tested without the machine that has it)."""
    if bwrap is None:
        return Probe(False, None, "bubblewrap (bwrap) is not installed", INSTALL)
    code, said = run(bwrap)
    if code == 0:
        return Probe(True, bwrap)
    said = " ".join(said.split())[:300] or f"exit status {code}"
    if euid != 0:
        if sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
            return Probe(
                False,
                bwrap,
                f"AppArmor forbids unprivileged user namespaces (Ubuntu 24.04 and later; bwrap "
                f"said: {said})",
                "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (kept across "
                "reboots in /etc/sysctl.d/60-userns.conf), " + APPARMOR_PROFILE,
            )
        if sysctl("kernel.unprivileged_userns_clone") == "0":
            return Probe(
                False,
                bwrap,
                f"the kernel forbids unprivileged user namespaces (bwrap said: {said})",
                "sudo sysctl -w kernel.unprivileged_userns_clone=1 (kept across reboots in "
                "/etc/sysctl.d/60-userns.conf)",
            )
        if sysctl("user.max_user_namespaces") == "0":
            return Probe(
                False,
                bwrap,
                f"user namespaces are turned off (user.max_user_namespaces is 0; bwrap said: "
                f"{said})",
                "sudo sysctl -w user.max_user_namespaces=15000",
            )
    if "permission" in said.lower() or "not permitted" in said.lower():
        return Probe(
            False,
            bwrap,
            f"this machine does not let bwrap make namespaces and mounts (a container "
            f"without the rights to; bwrap said: {said})",
            "start the container with the rights to (docker/podman: --cap-add SYS_ADMIN "
            "--security-opt seccomp=unconfined --security-opt apparmor=unconfined, or "
            "--privileged), or set sandbox: auto to run its agents unsandboxed",
        )
    return Probe(
        False,
        bwrap,
        f"bwrap failed (bwrap said: {said})",
        f"run `{bwrap} --ro-bind / / true` to see why, or set sandbox: auto to run agents "
        "unsandboxed",
    )


def effective_mode(mode: str, found: Probe) -> tuple[str, str | None]:
    """What a sandbox setting comes to here: (``bubblewrap`` or ``none``, the warning to give
    once at launch when ``auto`` falls back). ``bubblewrap`` where it cannot run raises."""
    if mode == "none":
        return "none", None
    if found.ok:
        return "bubblewrap", None
    if mode == "auto":
        return "none", f"sandbox: auto runs its agents unsandboxed: {found.message}"
    raise SandboxUnavailable(found.message)
