"""`wave logs`: print or follow an agent's output log, or the launcher's own output."""

from __future__ import annotations

import argparse
import codecs
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from ..state.fsutil import open_read
from ..state.layout import StateLayout
from ._common import add_agent_argument, add_lane, add_repo, repo_and_lane, state_layout
from ._help import add_command

CHUNK_BYTES = 1 << 20  # read and written at a time
POLL_SECONDS = 0.25


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "logs",
        "print (or follow) an agent's output log, or the launcher's",
        "Print what an agent wrote to its terminal, from its output log in the state dir. "
        "With -f, keep printing until the agent finishes; an agent that has not started yet "
        "is waited for, and while a launcher runs, a log left by an earlier run is never "
        "shown for this one. --launcher prints the output of a detached launcher "
        "(launcher.out) instead, -f following it until the launcher ends.",
        [
            ("wave logs A1", "agent A1's output in its latest wave"),
            ("wave logs A1 --wave 2 -f", "follow A1 of wave 2, waiting for it to start"),
            ("wave logs --launcher -f", "follow a detached launcher"),
            ("wave logs --all -f", "every agent's output, interleaved, as the launcher goes on"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(
        p, "agent", nargs="?", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)"
    )
    p.add_argument(
        "--wave", type=int, metavar="N", help="the wave, when the agent id is in several"
    )
    p.add_argument(
        "-f", "--follow", action="store_true", help="keep printing until the agent finishes"
    )
    p.add_argument(
        "--launcher", action="store_true", help="the detached launcher's output, not an agent's"
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="every agent of the wave (the running one, else the latest), each line prefixed "
        "with its id; with -f, until the launcher ends",
    )
    p.set_defaults(handler=run)


def find_agent_wave(layout: StateLayout, agent: str) -> int:
    """The highest wave whose state dir holds this agent; agent ids repeat across waves."""
    found = _agent_waves(layout, agent)
    if not found:
        raise UsageError(f"agent {agent!r} has not run in lane {layout.lane!r} (see `wave status`)")
    return max(found)


def _agent_waves(layout: StateLayout, agent: str) -> list[int]:
    found = []
    for folder in (layout.base / "waves").glob("wave-*"):
        suffix = folder.name.removeprefix("wave-")
        if suffix.isdigit() and (folder / "agents" / agent).is_dir():
            found.append(int(suffix))
    return found


def _launcher_since(layout: StateLayout) -> float | None:
    """When the live launcher started (epoch), or None when none runs."""
    from datetime import datetime

    from ..state.lock import live_lock

    lock = live_lock(layout.lock)
    if lock is None:
        return None
    try:
        stamp = str(lock.get("started_at", "")).replace("Z", "+00:00")
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def _fresh(path: Path, since: float | None) -> bool:
    """The file exists and, while a launcher runs, was written by this run."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return False
    return since is None or mtime >= since - 1


def run(args: argparse.Namespace) -> int:
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    if args.launcher:
        return _launcher_logs(args, layout)
    if args.all:
        return _all_logs(args, layout, repo)
    if not args.agent or not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(
            f"invalid agent id {args.agent!r}" if args.agent else "give an agent id or --launcher"
        )
    since = _launcher_since(layout) if args.follow else None
    wave = args.wave or _wave_to_show(args, layout, repo, since)
    paths = layout.agent(wave, args.agent)
    if not args.follow:
        if not paths.output_log.exists():
            raise UsageError(f"no output yet for {args.agent} in wave {wave}")
        _copy(paths.output_log, 0, final=True)
        return 0
    if not _fresh(paths.output_log, since):
        print(f"waiting for agent {args.agent} of wave {wave} to start...", file=sys.stderr)
    while not _fresh(paths.output_log, since):
        if since is not None and _launcher_since(layout) is None and not paths.status.exists():
            raise UsageError(f"the launcher ended before agent {args.agent} of wave {wave} started")
        time.sleep(POLL_SECONDS)
    offset = 0
    while True:
        finished = _fresh(paths.status, since)
        offset = _copy(paths.output_log, offset, final=finished)
        if finished:
            return 0
        time.sleep(POLL_SECONDS)


def _wave_to_show(
    args: argparse.Namespace, layout: StateLayout, repo: Path, since: float | None
) -> int:
    """The running wave when a launcher runs it and it names the agent; else the latest wave
    the agent ran in; with -f, the wave that will run it when none did yet."""
    from ._common import _running_wave
    from ._complete import wave_agents

    running = _running_wave(layout) if since is not None else None
    if running is not None and args.agent in wave_agents(repo, layout.lane, running):
        return running
    found = _agent_waves(layout, args.agent)
    if found:
        return max(found)
    planned = [n for n, ids in _planned(repo, layout.lane) if args.agent in ids]
    if args.follow and planned:
        later = [n for n in planned if running is None or n >= running]
        return min(later or planned)
    if planned:
        raise UsageError(f"agent {args.agent!r} has not run yet (wait for it with -f)")
    raise UsageError(f"no agent {args.agent!r} in lane {layout.lane!r} (see `wave status`)")


def _planned(repo: Path, lane: str) -> list[tuple[int, list[str]]]:
    from ._complete import wave_agents, wave_numbers

    return [(n, wave_agents(repo, lane, n)) for n in wave_numbers(repo, lane)]


_shown: dict[str, TerminalSafe] = {}


def _copy(path: Path, offset: int, final: bool = False) -> int:
    """Write what ``path`` holds past ``offset`` to stdout, CHUNK_BYTES at a time (a 500 MB
    log costs one chunk of memory); returns the new offset. To a terminal, the output is shown
    without the escapes that would act on the terminal (colours kept); to a pipe or a file,
    it is the log byte for byte."""
    shown = _shown.setdefault(str(path), TerminalSafe()) if sys.stdout.isatty() else None
    out = sys.stdout.buffer
    try:
        with open_read(path) as fh:
            fh.seek(offset)
            while chunk := fh.read(CHUNK_BYTES):
                out.write(shown.feed(chunk) if shown else chunk)
                offset += len(chunk)
    except FileNotFoundError:
        pass
    if final and shown:
        out.write(shown.feed(b"", final=True))
    out.flush()
    return offset


def _all_logs(args: argparse.Namespace, layout: StateLayout, repo: Path) -> int:
    from ._common import _running_wave
    from ._complete import wave_agents
    from .logs_all import show_all

    if args.agent:
        raise UsageError("--all shows every agent: give no agent id with it")
    wave = args.wave or _running_wave(layout)
    if wave is None:
        raise UsageError(f"no wave of lane {layout.lane!r} has run yet (see `wave status`)")
    alive = lambda: _launcher_since(layout) is not None  # noqa: E731
    return show_all(
        layout,
        wave,
        args.follow,
        alive,
        lambda: _running_wave(layout),
        lambda n: wave_agents(repo, layout.lane, n),
    )


def _launcher_logs(args: argparse.Namespace, layout: StateLayout) -> int:
    path = layout.launcher_output
    if not path.exists() and not args.follow:
        raise UsageError(
            f"no launcher output in {path}: only a detached launcher (`wave launch --detach`) "
            "writes one; a foreground launcher prints to its terminal and logs to "
            f"{layout.launcher_log}"
        )
    offset = 0
    while True:
        offset = _copy(path, offset)
        if not args.follow or _launcher_since(layout) is None:
            _copy(path, offset, final=True)
            return 0
        time.sleep(POLL_SECONDS)


class TerminalSafe:
    """Output log bytes to terminal-safe text, chunk by chunk: a UTF-8 character or an escape
    sequence cut between two reads is held until its end arrives."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""

    def feed(self, chunk: bytes, final: bool = False) -> bytes:
        text = self._held + self._decoder.decode(chunk, final)
        cut = text.rfind("\x1b")
        if not final and cut >= 0 and "\n" not in text[cut:] and len(text) - cut < 4096:
            text, self._held = text[:cut], text[cut:]
        else:
            self._held = ""
        return strip_controls(text, newlines=True, keep_colour=True).encode()
