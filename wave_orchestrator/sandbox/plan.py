"""One agent's sandbox, gathered at launch: which of wave's paths are its own, which are
hidden, what of HOME its CLI needs, where its programs live, the lane's extra paths resolved;
and ``prepare``, which makes the files the plan binds before the sandbox starts.

What an agent writes of wave's state is what its own commands write for it: ``wave coord``
and ``wave feedback ask`` append to its own outboxes, which the launcher merges into the
wave's coordination log and the lane's questions under its name (both of which it reads,
never writes: no other agent's post or question is within its reach), and ``wave desk`` (a
wave that shares files) writes the lane's desk. Those files are bound one by one, as files:
the folders around them (every agent's status and output, the run state, the events, the
launcher's lock) stay hidden. Its own folder
(prompt, output, status) it reads but never writes: its wrapper, outside, writes them, so
an agent cannot forge its own status.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..definitions.model import SandboxSettings
from ..definitions.repository.paths import inside_repository
from ..errors import WaveError
from ..state.fsutil import APPEND_FLAGS, ensure_dir, open_regular, write_atomic
from ..state.layout import StateLayout
from ..state.ledger import ledger_home
from .bwrap import Entry, Extra, SandboxPlan, WorktreeGit
from .home import STARTUP_FILES, cli_entries, program_roots

# A container engine's socket is root on the machine for whoever may talk to it.
ENGINE_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
# Variables naming what the sandbox leaves out: a tool would try them and fail oddly.
UNSET = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "TMUX", "TMUX_PANE")
SANDBOX_FOLDER = "sandbox"  # in the lane's state dir: the empty file startup files show


class SandboxConflict(WaveError):
    """A sandbox the lane asks for that cannot be built as asked: a path of its
    ``writable``/``readable``/``hidden`` lists inside what wave keeps hidden, or one that
    leaves the repository through a link."""


def plan_sandbox(
    settings: SandboxSettings,
    *,
    layout: StateLayout,
    repo: Path,
    wave: int,
    agent_id: str,
    executor: str,
    cwd: Path | None = None,
    worktree: WorktreeGit | None = None,
    git_dir: Path | None = None,
    peer_logs: Sequence[Path] = (),
    programs: Sequence[str] = (),
    desk: bool = False,
    env: Mapping[str, str] | None = None,
) -> SandboxPlan:
    """The plan for one attempt of ``agent_id``; reads what exists, writes nothing.

    ``worktree``: its worktree and git parts (``isolation: worktree``; the worktree's admin
    folder should come from ``worktrees.git.trusted_worktree_dir``, not from a ``.git`` file
    the agent could have rewritten); None works in ``repo`` itself. ``git_dir``: the main
    repository's git directory (default ``repo/.git`` when that is a folder). ``peer_logs``:
    output logs it is told to read (a closure agent's briefing). ``programs``: what it runs
    (its CLI's argv[0]), found on ``env``'s PATH. ``desk``: its wave shares files.
    ``env``: the environment it starts with (default the launcher's)."""
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or os.path.expanduser("~")).resolve()
    if home == Path("/"):
        raise SandboxConflict("HOME is /: a sandbox hides HOME, and would hide everything")
    root = repo.resolve()
    if worktree is not None:
        worktree = WorktreeGit(
            worktree.path.resolve(),
            worktree.admin_dir.resolve(),
            worktree.common_dir.resolve(),
            worktree.branch,
        )
    git = _git_parts(git_dir or (worktree.common_dir if worktree else root / ".git"))
    hidden_state = _outermost(
        p.resolve()
        for p in (layout.root, root / ".wave", ledger_home().parent)
        if p.is_dir() and not p.is_symlink()
    )
    protected = [*hidden_state, *git[1]]
    extras = [
        _extra(kind, given, root, home, protected)
        for kind in ("writable", "readable", "hidden")
        for given in getattr(settings, kind)
    ]
    return SandboxPlan(
        repo=root,
        cwd=(cwd.resolve() if cwd else worktree.path if worktree else root),
        home=home,
        network=settings.network,
        git_dir=git[0],
        git_hooks=git[1],
        git_config=git[2],
        worktree=worktree,
        hidden_state=tuple(hidden_state),
        own=tuple(own_entries(layout, wave, agent_id, desk, peer_logs)),
        home_entries=tuple(cli_entries(executor, env, home, layout.agent(wave, agent_id).dir)),
        startup_files=tuple(home / name for name in STARTUP_FILES),
        empty_file=layout.base / SANDBOX_FOLDER / "empty",
        programs=tuple(_programs(programs, env, [home, Path("/tmp")])),
        read_only=tuple(_not_its_own(root, worktree is None)),
        private_dirs=tuple(_private_dirs(env)),
        sockets=tuple(_sockets()),
        extras=tuple(e for e in extras if e is not None),
        setenv=(("TMPDIR", "/tmp"), ("WAVE_SANDBOX", "bubblewrap")),
        unsetenv=tuple(name for name in UNSET if name in env),
    )


def _git_parts(git_dir: Path) -> tuple[Path | None, tuple[Path, ...], Path | None]:
    """The repository's git directory, its hooks folder and its config, those that exist."""
    if not git_dir.is_dir():
        return None, (), None
    git_dir = git_dir.resolve()
    hooks = (git_dir / "hooks",) if (git_dir / "hooks").is_dir() else ()
    config = git_dir / "config" if (git_dir / "config").is_file() else None
    return git_dir, hooks, config


def own_entries(
    layout: StateLayout, wave: int, agent_id: str, desk: bool, peer_logs: Sequence[Path]
) -> list[Entry]:
    """The agent's bits of wave's state, bound back in over the hidden state dir."""
    why = "its own folder, read-only: prompt, output, status (its wrapper writes them)"
    return [
        _file(layout.agent(wave, agent_id).dir, why, writable=False, optional=False),
        _file(layout.agent_bin, "wave's bin folder on its PATH: `wave` itself", writable=False),
        *channel(layout, wave, agent_id, desk),
        _file(
            layout.owners(wave), "what each agent owns: `wave coord inbox` reads it", writable=False
        ),
        *(
            _file(p, "an output log its briefing tells it to read", writable=False)
            for p in peer_logs
        ),
    ]


def _programs(programs: Sequence[str], env: Mapping[str, str], private: list[Path]) -> list[Path]:
    """The folders of what it runs that its private HOME or /tmp would hide: its CLI, and
    wave itself (`wave coord` and the rest run inside), with their interpreters."""
    found = [*programs, "wave", sys.executable]
    roots = program_roots(found, env.get("PATH", os.defpath), private)
    code = Path(__file__).resolve().parents[2]  # wave's package: in site-packages, or a checkout
    if _inside_any(code, private) and not _inside_any(code, roots):
        roots.append(code)
    return roots


def channel(layout: StateLayout, wave: int, agent_id: str, desk: bool) -> list[Entry]:
    """The files of wave's state the agent's own commands use. It writes only its own
    outboxes (the launcher merges them under its name); the wave's log and the lane's
    questions, which every agent shares, it reads. Each must exist before the sandbox
    starts: ``prepare`` makes them."""
    outboxes = layout.outboxes(wave)
    out = [
        _file(
            outboxes.coordination(agent_id),
            "its own coordination outbox: `wave coord` and `wave desk` append its posts here; "
            "the launcher merges them into the wave's log, as its own",
        ),
        _file(
            outboxes.questions(agent_id),
            "its own questions outbox: `wave feedback ask` appends its question and its "
            "waiting marks here; the launcher asks the person for it",
        ),
        _file(
            layout.coordination_log(wave),
            "its wave's coordination log, read-only: `wave coord show` and `inbox` read it",
            writable=False,
            optional=False,
        ),
        _file(
            layout.feedback,
            "the lane's questions, read-only: `wave feedback ask --wait` reads its answer here",
            writable=False,
            optional=False,
        ),
    ]
    if desk:
        out += [
            _file(
                layout.desk, "the lane's file desk: `wave desk` claims and hands over files here"
            ),
            _file(
                _beside(layout.desk, "-journal"),
                "the desk's journal (kept, truncated: a file bound in cannot be removed)",
            ),
        ]
    return out


def _made(entry: Entry) -> bool:
    """Whether ``prepare`` makes the entry's file: a channel file (written, or a shared
    JSON-lines file read), never the agent's own folder, which its planner made."""
    return not entry.optional and (entry.writable or entry.source.suffix == ".jsonl")


def _file(path: Path, why: str, *, writable: bool = True, optional: bool | None = None) -> Entry:
    """A path of wave's state bound back in at its own place; a writable one must exist
    (``prepare`` makes it), a read-only one is bound when it does."""
    path = path.resolve()  # as bwrap would: the hidden folders are resolved too
    return Entry(path, path, writable, why, (not writable) if optional is None else optional)


def _inside_any(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == f or path.is_relative_to(f) for f in folders)


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without those inside another of them, the outermost first."""
    found = sorted(set(paths), key=lambda p: (len(p.parts), str(p)))
    return [p for i, p in enumerate(found) if not any(p.is_relative_to(q) for q in found[:i])]


def _not_its_own(repo: Path, shared: bool) -> list[tuple[Path, str]]:
    """In a writable checkout (isolation: shared), what stays read-only: the lane files (what
    the launcher runs next is not the agent's to change) and wave's own installation."""
    if not shared:
        return []
    out = []
    dot_git = repo / ".git"
    if dot_git.is_file() or dot_git.is_symlink():  # a linked worktree's or a submodule's
        out.append((dot_git, "where git finds the repository, read-only: it cannot re-point it"))
    lanes = repo / "lanes"
    if lanes.is_dir():
        out.append((lanes, "the lane files, read-only: what wave runs next is not its to change"))
    why = "wave's own installation, read-only: it runs outside the sandbox too"
    package = Path(__file__).resolve().parents[1]  # an editable install's source, say
    for own in (Path(sys.prefix).resolve(), package):
        if own.is_relative_to(repo) and own != repo:
            out.append((own, why))
    return out


def _private_dirs(env: Mapping[str, str]) -> list[tuple[Path, str]]:
    out = []
    for name, why in (
        ("XDG_RUNTIME_DIR", "your session's runtime folder (D-Bus, agents' sockets): an empty one"),
        ("TMUX_TMPDIR", "where tmux keeps its sockets: an empty one"),
    ):
        value = env.get(name, "")
        if value.startswith("/") and Path(value).is_dir():
            path = Path(value).resolve()
            if not path.is_relative_to("/tmp"):
                out.append((path, why))
    return out


def _sockets() -> list[tuple[Path, str]]:
    found = {Path(p).resolve() for p in ENGINE_SOCKETS if os.path.exists(p)}
    why = "a container engine's socket, closed: it would give root on this machine"
    return [(p, why) for p in sorted(found)]


def _extra(
    kind: str, given: str, repo: Path, home: Path, protected: Sequence[Path]
) -> Extra | None:
    """One path of the lane's lists, resolved (links followed, as bwrap follows them); None
    for a hidden path that does not exist (nothing to hide)."""
    try:
        return _resolved_extra(kind, given, repo, home, protected)
    except RuntimeError as exc:  # a loop of links
        raise SandboxConflict(f"sandbox {kind} path {given!r}: {exc}") from exc


def _resolved_extra(
    kind: str, given: str, repo: Path, home: Path, protected: Sequence[Path]
) -> Extra | None:
    if given == "~" or given.startswith("~/"):
        path = (home / given[2:]).resolve()
    elif given.startswith("/"):
        path = Path(given).resolve()
    else:
        inside = inside_repository(repo, given)
        if inside is None:
            raise SandboxConflict(
                f"sandbox {kind} path {given!r} leads out of the repository through a link"
            )
        path = inside
    if _inside_any(path, protected):
        raise SandboxConflict(
            f"sandbox {kind} path {given!r} is inside what wave keeps hidden from every agent "
            "(its state, the launcher's records, git hooks): name another path"
        )
    if kind == "hidden" and not path.exists():
        return None
    return Extra(kind, path, given, folder=path.is_dir() if kind == "hidden" else True)


COPY_LIMIT = 16 * 2**20  # a settings file an agent gets its own copy of


def _copy_of(path: Path) -> str | None:
    """The text of a file of HOME an agent gets a copy of (links followed: yours may be one),
    read only if it is a regular file of a sane size: never waited on, never all of a disk."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, COPY_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > COPY_LIMIT:
        raise SandboxConflict(f"{path} is larger than {COPY_LIMIT} bytes: no copy made")
    return data.decode("utf-8", errors="surrogateescape")


def _is_empty_file(path: Path) -> bool:
    """Whether ``path`` is already the empty, read-only file startup files show: then it is
    left as it is, since replacing it (a rename) while another agent's bwrap binds it makes
    that bind fail."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0 and stat.S_IMODE(st.st_mode) == 0o444


def prepare(plan: SandboxPlan) -> None:
    """Make what ``plan`` binds from wave's state before the sandbox starts: the channel files
    (never through a link: ``open_regular`` refuses one), the empty file shown for startup
    files (made anew unless it is still empty and read-only: nothing written into it reaches
    a sandbox), a fresh copy of a file of HOME an agent gets its own copy of, and its CLI's
    folders and settings when missing."""
    for entry in plan.own:
        if _made(entry):
            ensure_dir(entry.source.parent)
            os.close(open_regular(entry.source, APPEND_FLAGS))
    if plan.empty_file is not None and not _is_empty_file(plan.empty_file):
        write_atomic(plan.empty_file, "", 0o444)
    for entry in plan.home_entries:
        if entry.writable and entry.source == entry.target and not entry.source.exists():
            # A CLI's own folder made now, as the CLI would make it: what it keeps there (its
            # login, its sessions) outlives the sandbox instead of vanishing with its HOME.
            entry.source.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif entry.missing is not None and not entry.writable and os.path.islink(entry.source):
            raise SandboxConflict(
                f"{entry.source} is a link: a sandbox cannot keep a CLI's settings read-only "
                "through it (the link itself could be replaced); make it a plain file"
            )
        elif entry.missing is not None and not os.path.lexists(entry.source):
            # Its settings, made empty: bound read-only, the agent cannot create them either.
            if entry.missing == "/":
                entry.source.mkdir(mode=0o700, parents=True, exist_ok=True)
            else:
                ensure_dir(entry.source.parent)
                write_atomic(entry.source, entry.missing, 0o600)
        if entry.source != entry.target and (text := _copy_of(entry.target)) is not None:
            write_atomic(entry.source, text, 0o600)
    if plan.worktree is not None:
        # Bound read-only, so made empty when missing: in its writable git folder the agent
        # could otherwise create it, for your later git there to read (core.fsmonitor).
        config = plan.worktree.admin_dir / "config.worktree"
        if not os.path.lexists(config):
            write_atomic(config, "", 0o644)
