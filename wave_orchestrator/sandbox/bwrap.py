"""The exact ``bwrap`` command line for one agent: every option with the reason it is there.

The file system is read-only but for the agent's own work. bwrap applies its options in
order, a later mount over an earlier one, so the order here is the policy:

1. the process: no capabilities (even as root: nothing can be remounted writable), its own
   process ids (it can neither signal nor trace anything outside), no terminal to push keys
   into, gone when its wrapper goes, and no network when ``network: false``;
2. the whole file system read-only, a minimal ``/dev``, its own ``/proc`` and a private
   ``/tmp`` (the tmux sockets in the real one are out of reach);
3. a private, empty HOME with only what its CLI needs bound in (login, settings, caches) and
   the folders of the programs it runs, read-only;
4. its workspace: the repository's working files (``isolation: shared``) or its worktree
   with the parts of the git directory a commit writes (``isolation: worktree``);
5. the lane's ``writable``/``readable``/``hidden`` paths, the wider first;
6. what is never the agent's, over everything above: wave's state (the lane's state dir,
   ``.wave/``, the launcher's ledger), the git hooks and config; then the agent's own bits
   of that state bound back in (its folder read-only, its coordination channel writable);
7. the hidden folders made read-only, so a write there is refused rather than lost.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple


class Bind(NamedTuple):
    """One bwrap option with its operands (a mount's source and target, a variable's name and
    value) and why it is there, in a person's words."""

    flag: str
    source: str | None = None
    target: str | None = None
    reason: str = ""

    def argv(self) -> list[str]:
        return [self.flag, *(x for x in (self.source, self.target) if x is not None)]


class Entry(NamedTuple):
    """A path bound at ``target`` from ``source`` (the same path, or a copy made for this
    agent), writable or not, and why."""

    target: Path
    source: Path
    writable: bool
    reason: str
    optional: bool = True  # bound only if the source exists when the sandbox starts
    # What ``prepare`` makes when the source is missing: None nothing, "/" a folder, else a
    # file with this text (a CLI's settings, bound read-only, must exist to be bound).
    missing: str | None = None


class Extra(NamedTuple):
    """One path of the lane's ``writable``/``readable``/``hidden`` lists, resolved."""

    kind: str  # writable | readable | hidden
    path: Path
    given: str  # as the lane file wrote it
    folder: bool = True  # for a hidden path: a folder (an empty one over it) or a file


@dataclass(frozen=True)
class WorktreeGit:
    """An agent's git worktree and the parts of the main repository's git directory a commit
    in it writes: its ``worktrees/<name>`` folder and the objects. Its HEAD is detached when
    it starts (the launcher carries its commits onto its branch when it ends), so no branch
    file, its own or another's, is within its reach."""

    path: Path
    admin_dir: Path  # <common>/worktrees/<name>: its HEAD, index, logs/HEAD
    common_dir: Path  # the main repository's git directory
    branch: str  # the short name: wave/<lane>/w<n>-<agent>


@dataclass(frozen=True)
class SandboxPlan:
    """Everything the command line is built from, every path already resolved and decided
    (``plan.plan_sandbox`` gathers it): building from it reads nothing."""

    repo: Path
    cwd: Path
    home: Path
    network: bool = True
    git_dir: Path | None = None  # the main repository's git directory
    git_hooks: tuple[Path, ...] = ()  # the hook folders git would run (hidden)
    git_config: Path | None = None  # the repository's git config (read-only)
    worktree: WorktreeGit | None = None  # None: isolation shared, the repository itself
    hidden_state: tuple[Path, ...] = ()  # wave's: the lane's state dir, .wave/, the ledger's
    own: tuple[Entry, ...] = ()  # the agent's bits of that state, bound back in
    home_entries: tuple[Entry, ...] = ()  # its CLI's login, settings and caches
    startup_files: tuple[Path, ...] = ()  # shell startup files in HOME: empty, read-only
    empty_file: Path | None = None  # an empty regular file, their source
    programs: tuple[Path, ...] = ()  # folders of programs it runs that HOME or /tmp hide
    read_only: tuple[tuple[Path, str], ...] = ()  # inside its workspace, but not its own
    private_dirs: tuple[tuple[Path, str], ...] = ()  # empty and private: a runtime dir
    sockets: tuple[tuple[Path, str], ...] = ()  # sockets that would give it root
    extras: tuple[Extra, ...] = ()
    setenv: tuple[tuple[str, str], ...] = ()
    unsetenv: tuple[str, ...] = ()


PROCESS = (
    Bind("--die-with-parent", reason="ends with its wrapper: nothing of it outlives run.sh"),
    Bind("--new-session", reason="no controlling terminal: it cannot type into one (TIOCSTI)"),
    Bind(
        "--unshare-pid",
        reason="its own process ids: it cannot signal or trace the launcher, another agent "
        "or any process of yours",
    ),
    Bind("--unshare-ipc", reason="its own System V IPC and message queues"),
    Bind("--cap-drop", "ALL", reason="no capabilities, even as root: nothing can be remounted"),
)
NO_NETWORK = Bind("--unshare-net", reason="network: false: no network at all, loopback only")


def build_binds(plan: SandboxPlan) -> list[Bind]:
    """The options for ``plan``, in the order bwrap must apply them."""
    out = list(PROCESS)
    if not plan.network:
        out.append(NO_NETWORK)
    out += _base(plan)
    out += _home(plan)
    out += _workspace(plan)
    out += _extras(plan.extras)
    out += _protected(plan)
    out += _own(plan)
    out += _sealed(plan)
    out.append(Bind("--chdir", None, str(plan.cwd), "where it works"))
    out += [
        Bind("--setenv", name, value, _ENV_REASONS.get(name, "")) for name, value in plan.setenv
    ]
    out += [
        Bind("--unsetenv", name, None, f"{name}: nothing it names is there")
        for name in plan.unsetenv
    ]
    return out


_ENV_REASONS = {
    "TMPDIR": "temporary files go to its private /tmp",
    "WAVE_SANDBOX": "tells wave's commands (and the agent) that it runs sandboxed",
}


def _base(plan: SandboxPlan) -> list[Bind]:
    out = [
        Bind("--ro-bind", "/", "/", "the whole file system, read-only"),
        Bind("--dev", None, "/dev", "a minimal /dev: null, zero, random, tty, shm"),
        Bind("--proc", None, "/proc", "/proc of its own process ids"),
        Bind(
            "--tmpfs", None, "/tmp", "a private /tmp: the real one (tmux's sockets) is out of reach"
        ),
    ]
    out += [Bind("--tmpfs", None, str(p), why) for p, why in plan.private_dirs]
    out += [Bind("--ro-bind", "/dev/null", str(p), why) for p, why in plan.sockets]
    return out


def _home(plan: SandboxPlan) -> list[Bind]:
    out = [
        Bind(
            "--tmpfs",
            None,
            str(plan.home),
            "a private HOME: your files (~/.ssh, ~/.aws, shell startup files, other "
            "repositories) are not there, and what it writes there is gone when it ends",
        )
    ]
    if plan.empty_file is not None:
        out += [
            Bind(
                "--ro-bind",
                str(plan.empty_file),
                str(p),
                "a shell startup file: empty and read-only, so a write to it is refused",
            )
            for p in plan.startup_files
        ]
    out += [_entry(e) for e in plan.home_entries]
    out += [_ro(p, "a program it runs lives here (read-only)") for p in plan.programs]
    return out


def _entry(e: Entry) -> Bind:
    flag = "--bind" if e.writable else "--ro-bind"
    return Bind(flag + ("-try" if e.optional else ""), str(e.source), str(e.target), e.reason)


def _workspace(plan: SandboxPlan) -> list[Bind]:
    if plan.worktree is None:
        out = [_rw(plan.repo, "the repository's working files (isolation: shared)")]
        if plan.git_dir is not None:
            why = "git's directory, read-only: under isolation: shared an agent does not commit"
            out.append(_ro(plan.git_dir, why))
    else:
        out = [_ro(plan.repo, "the main checkout, read-only: it works in its worktree")]
    out += [_ro(p, why) for p, why in plan.read_only]
    return out


def _extras(extras: Iterable[Extra]) -> list[Bind]:
    """The lane's paths, the wider first so that a narrower one inside it wins; one path in
    two lists (an agent's own list over an inherited one) ends closed: hidden over readable
    over writable."""
    rank = {"writable": 0, "readable": 1, "hidden": 2}
    out = []
    for e in sorted(extras, key=lambda e: (len(e.path.parts), rank[e.kind])):
        p, why = str(e.path), f"sandbox.{e.kind}: {e.given}"
        if e.kind == "writable":
            out.append(Bind("--bind-try", p, p, why))
        elif e.kind == "readable":
            out.append(Bind("--ro-bind-try", p, p, why))
        elif e.folder:
            out.append(Bind("--tmpfs", None, p, why))
        else:
            out.append(Bind("--ro-bind", "/dev/null", p, why))
    return out


def _protected(plan: SandboxPlan) -> list[Bind]:
    why = "wave's own state, hidden: other agents, the run state, the launcher's records"
    out = [Bind("--tmpfs", None, str(p), why) for p in plan.hidden_state]
    why = "git hooks, hidden: no hook runs in it, none can be planted for you"
    out += [Bind("--tmpfs", None, str(p), why) for p in plan.git_hooks]
    if plan.git_config is not None:
        why = "git's config, read-only: no hook path, filter or alias can be planted"
        out.append(_ro(plan.git_config, why))
    return out


def _own(plan: SandboxPlan) -> list[Bind]:
    out = []
    tree = plan.worktree
    if tree is not None:
        admin, objects = tree.admin_dir, tree.common_dir / "objects"
        out += [
            _rw(tree.path, "its worktree (isolation: worktree)"),
            _ro(tree.path / ".git", "its worktree's link to the repository, read-only"),
            _rw(objects, "git's objects: its commits are written here"),
            _rw(
                admin,
                f"its worktree's git folder: HEAD (detached: wave moves {tree.branch} to its "
                "commits when it ends), index, the HEAD reflog",
            ),
            _ro(admin / "gitdir", "where git finds its worktree, read-only", "-try"),
            _ro(admin / "commondir", "where git finds the repository, read-only", "-try"),
            _ro(admin / "config.worktree", "its worktree's git config, read-only", "-try"),
        ]
    out += [_entry(e) for e in plan.own]
    return out


def _rw(path: Path, why: str, suffix: str = "") -> Bind:
    return Bind("--bind" + suffix, str(path), str(path), why)


def _ro(path: Path, why: str, suffix: str = "") -> Bind:
    return Bind("--ro-bind" + suffix, str(path), str(path), why)


def _sealed(plan: SandboxPlan) -> list[Bind]:
    """The hidden folders made read-only last, after everything bound inside them: a write
    there is refused (and shows in the agent's log), not kept in memory and lost."""
    folders = [*plan.hidden_state, *plan.git_hooks]
    folders += [e.path for e in plan.extras if e.kind == "hidden" and e.folder]
    return [Bind("--remount-ro", None, str(p), "hidden, and read-only") for p in folders]


def to_argv(binds: Iterable[Bind], command: Sequence[str], bwrap: str = "bwrap") -> list[str]:
    """``bwrap <options> -- <command>``: the agent's own argv, sandboxed."""
    out = [bwrap]
    for b in binds:
        out += b.argv()
    return [*out, "--", *command]


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one line for a shell script, every word quoted: paths come from lane files
    and agents' folders, and none may be read by the shell as anything but a word."""
    return " ".join(shlex.quote(arg) for arg in argv)


def describe(binds: Iterable[Bind]) -> list[dict[str, str]]:
    """Each option and why it is there, for the dry run's preview and ``--json``."""
    return [{k: v for k, v in b._asdict().items() if v is not None and v != ""} for b in binds]
