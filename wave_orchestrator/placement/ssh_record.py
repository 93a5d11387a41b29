"""Where an agent's try runs on its SSH host, kept in its folder here (``host.json``): a
launcher that comes back (``--resume``) finds the session on the host and follows it again,
bringing its output from where the dead launcher stopped and its work back when it ends.

The file is under the state directory, so it is read as hostile: only the host's name (one of
the lane's), the worktree (a folder of the lane's worktrees), the branch (one of wave's) and a
bounded number are taken from it; every path on the host is worked out again here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..state.fsutil import read_json, write_json_atomic
from .ssh_host import Followed
from .ssh_ship import Relocation

if TYPE_CHECKING:
    from .ssh_host import Host

RECORD = "host.json"
BRANCH_RE = re.compile(r"wave/[A-Za-z0-9_.-]{1,64}/[A-Za-z0-9_.-]{1,80}")


class HostRecord(NamedTuple):
    host: str
    local_cwd: str  # its worktree here ("" for a shared checkout)
    branch: str  # "" for a shared checkout
    log_base: int  # how long its output.log here was when the try started


def followed_again(
    agent_dir: Path, host: Host, worktrees: Path, roots: Sequence[Path], repo: Path
) -> tuple[Followed, int] | None:
    """How to follow again a try its record says runs on ``host``, and from which offset of
    its log (what the dead launcher brought here); None without a record wave wrote."""
    record = read_record(agent_dir, {host.name}, worktrees)
    if record is None or host.root is None:
        return None
    cwd = record.local_cwd or str(repo)
    followed = followed_on(host.root, host.spec.shared_path, roots, agent_dir, cwd, record.branch)
    return followed, max(0, log_size(agent_dir) - record.log_base)


def followed_on(
    host_root: str, shared: bool, roots: Sequence[Path], agent_dir: Path, cwd: str, branch: str
) -> Followed:
    """A try on a host: its folder and worktree there (this machine's paths moved under the
    host's root; the same paths on a host that shares this checkout), and here."""
    where = Relocation(roots, host_root)
    if shared:
        return Followed(agent_dir, str(agent_dir), cwd, cwd, branch, False)
    return Followed(agent_dir, where.path(agent_dir), where.path(cwd), cwd, branch, True)


def log_size(agent_dir: Path) -> int:
    """How long its output.log here is (0 before it has one)."""
    log = agent_dir / "output.log"
    return log.stat().st_size if log.exists() else 0


def write_record(agent_dir: Path, record: HostRecord) -> None:
    write_json_atomic(agent_dir / RECORD, record._asdict())


def read_record(agent_dir: Path, hosts: set[str], worktrees: Path) -> HostRecord | None:
    """The record, when every field is one wave could have written; else None."""
    raw: Any = None
    with contextlib.suppress(OSError, ValueError):
        raw = read_json(agent_dir / RECORD)
    if not isinstance(raw, dict):
        return None
    host, cwd, branch, base = (raw.get(k) for k in ("host", "local_cwd", "branch", "log_base"))
    if not isinstance(host, str) or host not in hosts:
        return None
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < 1 << 40:
        return None
    if not isinstance(cwd, str) or not isinstance(branch, str):
        return None
    if cwd and Path(cwd).parent != worktrees:  # one of the lane's worktrees, nothing else
        return None
    if (branch and not BRANCH_RE.fullmatch(branch)) or bool(cwd) != bool(branch):
        return None
    return HostRecord(host, cwd, branch, base)
