"""`wave logs --all [-f]`: every agent of a wave, line by line, each line prefixed with the
agent's id (coloured on a terminal), as `docker compose logs` shows its services. Followed, the
lines come as the agents write them, and the view moves on with the launcher to its next wave.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from ..state.fsutil import open_read
from ..state.layout import StateLayout

READ_BYTES = 1 << 20  # of one log per pass: a flood in one agent never starves the others
POLL_SECONDS = 0.25
COLOURS = ("36", "33", "32", "35", "34", "31", "96", "93", "92", "95", "94", "91")


class Interleaver:
    """The new complete lines of each agent's log, read in bounded passes, printed prefixed."""

    def __init__(self, out: IO[bytes], colour: bool, terminal: bool) -> None:
        self.out, self.colour, self.terminal = out, colour, terminal
        self.offsets: dict[Path, int] = {}
        self.partial: dict[Path, bytes] = {}
        self.colours: dict[str, str] = {}

    def pass_over(self, agents: list[tuple[str, Path]], final: bool = False) -> bool:
        """Print what each log gained; True if any log had more than one pass could read."""
        width = max((len(a) for a, _ in agents), default=0)
        more = False
        for agent, path in agents:
            data, full = self._read(path)
            more |= full
            lines = data.split(b"\n")
            rest = lines.pop()  # after the last newline: a line still being written
            if (final and not full and rest) or len(rest) > READ_BYTES:
                lines.append(rest)  # the log is done, or a line of megabytes: shown in parts
                rest = b""
            self.partial[path] = rest
            for line in lines:
                self._print(agent, width, line)
        self.out.flush()
        return more

    def _read(self, path: Path) -> tuple[bytes, bool]:
        offset = self.offsets.get(path, 0)
        try:
            with open_read(path) as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < offset:  # the log was set aside and begun again
                    offset, self.partial[path] = 0, b""
                fh.seek(offset)
                chunk = fh.read(READ_BYTES)
        except OSError:
            return self.partial.get(path, b""), False
        self.offsets[path] = offset + len(chunk)
        return self.partial.get(path, b"") + chunk, offset + len(chunk) < size

    def _print(self, agent: str, width: int, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        if self.terminal:  # what acts on a terminal is left out; colours stay
            text = strip_controls(text, keep_colour=True)
        prefix = f"{agent:<{width}} | "
        if self.colour:
            code = self.colours.setdefault(agent, COLOURS[len(self.colours) % len(COLOURS)])
            prefix = f"\x1b[{code}m{prefix}\x1b[0m"
        self.out.write((prefix + text + "\n").encode("utf-8", "replace"))


def wave_logs(layout: StateLayout, wave: int, order: list[str]) -> list[tuple[str, Path]]:
    """(agent, output log) of every agent of ``wave`` that has a folder: in wave-file order,
    then any other (ids checked: a folder name is not trusted)."""
    folder = layout.agents_dir(wave)
    try:
        present = {p.name for p in folder.iterdir() if AGENT_ID_RE.fullmatch(p.name)}
    except OSError:
        present = set()
    ids = [a for a in order if a in present] + sorted(present - set(order))
    return [(a, layout.agent(wave, a).output_log) for a in ids]


def show_all(
    layout: StateLayout,
    wave: int,
    follow: bool,
    launcher_alive: Callable[[], bool],
    running_wave: Callable[[], int | None],
    agents_of: Callable[[int], list[str]],
) -> int:
    """Print (and with ``follow``, keep printing while a launcher runs) every agent's lines;
    ``agents_of`` gives a wave's ids in wave-file order."""
    order = agents_of(wave)
    terminal = sys.stdout.isatty()
    colour = terminal and not os.environ.get("NO_COLOR")
    view = Interleaver(sys.stdout.buffer, colour, terminal)
    while True:
        alive = follow and launcher_alive()
        while view.pass_over(wave_logs(layout, wave, order), final=not alive):
            pass  # a log with more than one pass holds: read it all before waiting
        nxt = running_wave() if follow else None
        if isinstance(nxt, int) and nxt > wave:  # the launcher went on: so does the view
            view.pass_over(wave_logs(layout, wave, order), final=True)
            wave, order = nxt, agents_of(nxt)
            sys.stdout.buffer.write(f"--- wave {wave} ---\n".encode())
            continue  # (a launcher that ended meanwhile: its last wave is shown too)
        if not alive:
            return 0
        time.sleep(POLL_SECONDS)
