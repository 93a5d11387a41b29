"""`wave debug-info`: what a bug report needs, in one paste. A report is pasted where anyone
reads it: every value is printed with its credentials hidden, by name and by value (a
``ghp_`` token or a URL's password under a harmless name too)."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
from typing import Any

from .. import __version__
from ..errors import WaveError
from ._common import add_json, add_repo, emit_json
from ._help import add_command

AGENT_CLIS = ("codex", "claude", "opencode")
LIBRARIES = ("PyYAML", "watchdog", "structlog", "rich", "textual", "rich-argparse", "argcomplete")


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "debug-info",
        "print versions, repository, lanes, sockets and state dirs for a bug report",
        "Print what a bug report needs: the versions of wave, Python, tmux, the libraries wave "
        "uses and the agent CLIs found on PATH; the repository, its lanes with their state dirs "
        "and tmux sockets, and the registry of running launchers. Nothing is changed.",
        [
            ("wave debug-info", "paste this into the issue"),
            ("wave debug-info --json", "the same, for a script"),
        ],
    )
    add_repo(p)
    add_json(p)
    p.set_defaults(handler=run)


def _version_of(argv: list[str]) -> str | None:
    """The first line a program prints for its version; None when it is not on PATH."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"found, version unknown ({exc.__class__.__name__})"
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if text else "found, version unknown"


def _library(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _shown_value(name: str, value: str) -> str:
    """A variable's value as a bug report may show it: a secret name's only as its length,
    any other with the credentials in it hidden, and never a control character (a report is
    pasted into terminals and issue trackers)."""
    from ..sanitize import safe_text, secret_name

    if secret_name(name):
        return f"<redacted, {len(value)} characters>"
    return safe_text(value)


def _server_answers(path: str) -> bool:
    """Whether a tmux server listens on ``path`` (a socket file may outlive its server)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def collect(args: argparse.Namespace) -> dict[str, Any]:
    from ..definitions.repository.lanes import find_repository, list_lanes
    from ..state.layout import socket_name
    from ..state.ledger import ledger_path
    from ..state.registry import registry_dir
    from ._common import state_layout

    info: dict[str, Any] = {
        "wave": __version__,
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "tmux": _version_of(["tmux", "-V"]),
        "libraries": {name: _library(name) for name in LIBRARIES},
        "agent_clis": {
            name: {"path": shutil.which(name), "version": _version_of([name, "--version"])}
            for name in AGENT_CLIS
        },
        "environment": {
            k: _shown_value(k, v)
            for k, v in sorted(os.environ.items())
            if k.startswith("WAVE_") or k == "NO_COLOR"
        },
        "registry": str(registry_dir()),
        "repository": None,
        "lanes": [],
    }
    try:
        repo = find_repository(args.repo)
    except WaveError as exc:
        info["repository_problem"] = str(exc)
        return info
    info["repository"] = str(repo)
    tmux_dir = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}")
    for lane in list_lanes(repo):
        socket = socket_name(lane, repo)
        info["lanes"].append(
            {
                "lane": lane,
                "state_dir": str(state_layout(repo, lane).root),
                "socket": socket,
                "socket_exists": os.path.exists(os.path.join(tmux_dir, socket)),
                "server_answers": _server_answers(os.path.join(tmux_dir, socket)),
                "ledger": str(ledger_path(repo, lane)),
            }
        )
    return info


def run(args: argparse.Namespace) -> int:
    from ..sanitize import clean_tree, safe_text

    info = collect(args)
    if args.json:  # paths and versions hidden by value too: a state dir may name a token
        emit_json(clean_tree(info, redact=True))
        return 0

    def line(label: str, text: Any) -> None:
        print(f"{label:<15}{safe_text(str(text))}")

    line("wave", info["wave"])
    line("python", info["python"])
    line("platform", info["platform"])
    line("tmux", info["tmux"] or "NOT FOUND on PATH")
    for name, version in info["libraries"].items():
        line(name, version or "not installed")
    for name, cli in info["agent_clis"].items():
        line(name, f"{cli['version']} ({cli['path']})" if cli["path"] else "not on PATH")
    for key, value in info["environment"].items():
        line("env", f"{key}={value}")
    line("registry", info["registry"])
    line("repository", info["repository"] or info.get("repository_problem"))
    for lane in info["lanes"]:
        live = "server running" if lane["server_answers"] else "no server"
        if not lane["server_answers"] and lane["socket_exists"]:
            live = "stale socket, no server"
        line("lane", f"{lane['lane']}: state {lane['state_dir']}, {lane['socket']} ({live})")
        line("", f"{lane['lane']}: ledger {lane['ledger']}")
    return 0
