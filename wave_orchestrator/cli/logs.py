"""`wave logs`: print or follow an agent's output log."""

from __future__ import annotations

import argparse
import codecs
import sys
import time
from typing import Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from ..state.fsutil import open_read
from ..state.layout import StateLayout
from ._common import add_lane, add_repo, repo_and_lane, state_layout


def register(sub: Any) -> None:
    p = sub.add_parser("logs", help="print (or follow) an agent's output log")
    add_repo(p)
    add_lane(p)
    p.add_argument("agent", metavar="AGENT")
    p.add_argument(
        "--wave", type=int, metavar="N", help="the wave, when the agent id is in several"
    )
    p.add_argument(
        "-f", "--follow", action="store_true", help="keep printing until the agent finishes"
    )
    p.set_defaults(handler=run)


def find_agent_wave(layout: StateLayout, agent: str) -> int:
    """The highest wave whose state dir holds this agent; agent ids repeat across waves."""
    waves_dir = layout.base / "waves"
    found = []
    for folder in waves_dir.glob("wave-*"):
        suffix = folder.name.removeprefix("wave-")
        if suffix.isdigit() and (folder / "agents" / agent).is_dir():
            found.append(int(suffix))
    if not found:
        raise UsageError(f"agent {agent!r} has not run in lane {layout.lane!r} (see `wave status`)")
    return max(found)


def run(args: argparse.Namespace) -> int:
    repo, lane = repo_and_lane(args)
    if not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    layout = state_layout(repo, lane)
    wave = args.wave or find_agent_wave(layout, args.agent)
    paths = layout.agent(wave, args.agent)
    if not paths.output_log.exists() and not args.follow:
        raise UsageError(f"no output yet for {args.agent} in wave {wave}")
    out = sys.stdout.buffer
    # To a terminal, the agent's output is shown without the escapes that would act on the
    # terminal (colours kept); to a pipe or a file, it is the log byte for byte.
    shown = TerminalSafe() if sys.stdout.isatty() else None
    offset = 0
    while True:
        finished = paths.status.exists()
        try:
            with open_read(paths.output_log) as fh:
                fh.seek(offset)
                chunk = fh.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            out.write(shown.feed(chunk) if shown else chunk)
            out.flush()
            offset += len(chunk)
        if not args.follow or finished:
            if shown:
                out.write(shown.feed(b"", final=True))
                out.flush()
            return 0
        time.sleep(0.25)


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
