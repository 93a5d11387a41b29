"""What of the person's HOME a sandboxed agent gets: its CLI's login, settings and caches,
git's settings (who its commits are by), and the folders of the programs it runs. Everything
else of HOME (``~/.ssh``, ``~/.aws``, ``~/.kube``, ``~/.netrc``, shell startup files, other
repositories) is not there: its HOME is private and empty but for these."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .bwrap import Entry

# Read by login and interactive shells: an agent's `bash -lc` finds them empty, and a write
# to one is refused (it would be lost with the private HOME anyway; refused, it shows).
STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
)
# What of a CLI's own folder would run as you later, outside any sandbox: its settings (a
# `notify` command, hooks, an API-key helper, MCP servers), its command rules and plugins.
# Bound read-only over its writable folder (made first when missing, empty: a sandboxed agent
# cannot create one either); its login and sessions beside them stay writable.
SETTINGS = {
    "codex": (("config.toml", ""), ("rules", "/")),
    "claude": (
        ("settings.json", "{}\n"),
        ("settings.local.json", "{}\n"),
        ("hooks", "/"),
        ("plugins", "/"),
        ("commands", "/"),
        ("agents", "/"),
    ),
    # Its config folder stays writable (it writes a .gitignore there at every start); what
    # it loads from there does not: its settings, plugins and the packages they import.
    "opencode": (
        ("opencode.json", "{}\n"),
        ("opencode.jsonc", "{}\n"),
        ("config.json", "{}\n"),
        ("tool", "/"),
        ("tools", "/"),
        ("plugin", "/"),
        ("plugins", "/"),
        ("agent", "/"),
        ("command", "/"),
        ("package.json", "{}\n"),
        ("node_modules", "/"),
    ),
}
SHEBANG_BYTES = 256
# Folders of HOME no program's installation lives in: never bound back, whatever a `#!` says.
SECRET_FOLDERS = frozenset({".ssh", ".gnupg", ".aws", ".kube", ".docker", ".password-store"})
INTERPRETER_DEPTH = 3


def cli_entries(executor: str, env: Mapping[str, str], home: Path, copies: Path) -> list[Entry]:
    """The folders and files of ``executor``'s CLI in HOME (or where its variables say),
    writable: it refreshes its login and writes its sessions there. ``copies`` is the agent's
    own folder for a file that must not be shared (claude's ``~/.claude.json``)."""
    xdg = _xdg(env, home)
    out: list[Entry] = []
    if executor == "codex":
        folder = _given(env, "CODEX_HOME", home) or home / ".codex"
        out.append(Entry(folder, folder, True, "codex's login and sessions (CODEX_HOME)"))
        out += _settings("codex", folder)
    elif executor == "claude":
        given = _given(env, "CLAUDE_CONFIG_DIR", home)
        if given is not None:
            out.append(Entry(given, given, True, "claude's login and sessions (CLAUDE_CONFIG_DIR)"))
            out += _settings("claude", given)
            out.append(_claude_json(given / ".claude.json", copies))
        else:
            folder = home / ".claude"
            out.append(Entry(folder, folder, True, "claude's login and sessions"))
            out += _settings("claude", folder)
            out.append(_claude_json(home / ".claude.json", copies))
    elif executor == "opencode":
        for kind in ("data", "config", "cache", "state"):
            folder = xdg[kind] / "opencode"
            out.append(Entry(folder, folder, True, f"opencode's {kind} folder"))
        out += _settings("opencode", xdg["config"] / "opencode")
        why = "opencode's downloaded programs and packages, read-only: they would run as you later"
        for folder in (
            xdg["data"] / "opencode" / "bin",
            xdg["cache"] / "opencode" / "node_modules",
        ):
            out.append(Entry(folder, folder, False, why, optional=False, missing="/"))
    why = "git's settings, read-only: who its commits are by"
    out.append(Entry(home / ".gitconfig", home / ".gitconfig", False, why))
    for name in ("config", "ignore", "attributes"):  # never `credentials`, beside them
        path = xdg["config"] / "git" / name
        out.append(Entry(path, path, False, why))
    return out


def _claude_json(path: Path, copies: Path) -> Entry:
    """claude's ``.claude.json``: a copy of yours for this agent. It holds its MCP servers
    (commands it runs): what the agent writes to it stays with the agent; and claude rewrites
    it often, so many agents at once would garble a shared one."""
    why = "claude's settings file (its MCP servers): a copy of yours, for this agent only"
    return Entry(path, copies / "claude.json", True, why, optional=False, missing="{}\n")


def _settings(cli: str, folder: Path) -> list[Entry]:
    why = f"{cli}'s settings, read-only: what it runs (hooks, commands) would run as you later"
    return [
        Entry(folder / name, folder / name, False, why, optional=False, missing=made)
        for name, made in SETTINGS[cli]
    ]


def _xdg(env: Mapping[str, str], home: Path) -> dict[str, Path]:
    defaults = {
        "data": home / ".local" / "share",
        "config": home / ".config",
        "cache": home / ".cache",
        "state": home / ".local" / "state",
    }
    return {
        kind: _given(env, f"XDG_{kind.upper()}_HOME", home) or default
        for kind, default in defaults.items()
    }


def _given(env: Mapping[str, str], name: str, home: Path) -> Path | None:
    """The absolute path a variable names (``~`` for the person's HOME), else None: a
    relative one means nothing outside the folder its CLI happens to start in."""
    value = env.get(name, "")
    if value == "~" or value.startswith("~/"):
        value = str(home) + value[1:]
    return Path(os.path.normpath(value)) if value.startswith("/") else None


def program_roots(names: Iterable[str], path: str, hidden: Sequence[Path]) -> list[Path]:
    """The folders the programs ``names`` run from that a folder of ``hidden`` (the private
    HOME, /tmp) would hide: each found on ``path``, its links followed, the interpreter its
    ``#!`` line names too; for a file in a ``bin`` folder, the installation above it (a node
    package, a virtual environment: their libraries are beside ``bin``). Outermost first."""
    found: set[Path] = set()
    for name in names:
        program = shutil.which(name, path=path) if "/" not in name else name
        if program is not None:
            _collect(Path(program), path, hidden, found, INTERPRETER_DEPTH, "/" not in name)
    roots = sorted(found, key=lambda p: (len(p.parts), str(p)))
    return [p for i, p in enumerate(roots) if not any(p.is_relative_to(q) for q in roots[:i])]


def _collect(
    program: Path, path: str, hidden: Sequence[Path], found: set[Path], depth: int, on_path: bool
) -> None:
    """Add the folders ``program`` runs from (see ``program_roots``), then its interpreter's."""
    if depth <= 0:
        return
    try:
        real = program.resolve()
    except (OSError, RuntimeError):
        return
    candidates = [program.parent] if on_path else [_install_root(program, hidden)]
    if real != program:
        candidates.append(_install_root(real, hidden))
    for folder in candidates:
        # Inside HOME or /tmp, never one of them (nor above one): `#!$HOME/x` would bind all
        # of HOME back in, `#!~/.ssh/k` its keys.
        inside = any(folder != h and folder.is_relative_to(h) for h in hidden)
        if inside and not any(h.is_relative_to(folder) for h in hidden) and _plain(folder):
            found.add(folder)
    interpreter = _interpreter(real)
    if interpreter is not None:
        name, is_path = interpreter
        target = name if is_path else shutil.which(name, path=path)
        if target is not None:
            _collect(Path(target), path, hidden, found, depth - 1, False)


def _install_root(program: Path, hidden: Sequence[Path]) -> Path:
    """``prefix`` for ``prefix/bin/tool``, else the tool's folder; never a hidden folder itself
    (HOME) or one above it: ``~/bin/tool`` gives ``~/bin``, not all of HOME."""
    folder = program.parent
    if folder.name == "bin" and not any(h.is_relative_to(folder.parent) for h in hidden):
        return folder.parent
    return folder


def _plain(folder: Path) -> bool:
    """Not a folder a person keeps secrets in: what a ``#!`` line names is the agent's to
    choose when it can write a folder on PATH."""
    return not any(part in SECRET_FOLDERS for part in folder.parts)


def _interpreter(program: Path) -> tuple[str, bool] | None:
    """What ``#!`` names: (a path, True) or, through ``env``, (a program name, False); read
    only from a regular file, never waited on (a FIFO planted under a CLI's name)."""
    try:
        fd = os.open(program, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, SHEBANG_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name != "env":
        return words[0], True
    rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return (rest[0], "/" in rest[0]) if rest else None
