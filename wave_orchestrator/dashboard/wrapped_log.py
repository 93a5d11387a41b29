"""The console's panes of lines (an agent's output, a diff, the launcher's log, the events, the
board, the preview): Textual's ``Log``, whose long lines go on to the next rows instead of
running past the pane's edge (cut there, with only a scroll bar's remnant to say so). The lines
as written are kept, so a new width wraps them again; what the pane holds (and search looks
through) is the rows on screen."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Self

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual import events
from textual.widgets import Log

MEASURE = Console(file=io.StringIO(), width=200, color_system=None)  # wraps, never prints


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` as rows of at most ``width`` cells, broken between words where it can."""
    line = line.expandtabs()
    if width <= 0 or cell_len(line) <= width:
        return [line]
    rows = Text(line).wrap(MEASURE, width, overflow="fold", no_wrap=False)
    return [row.plain.rstrip() for row in rows] or [""]


class WrappedLog(Log):
    """A ``Log`` that wraps each line at its width, and again when the width changes."""

    DEFAULT_CSS = "WrappedLog { overflow-x: hidden; }"

    def __init__(self, *, max_lines: int, id: str) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=False, id=id)
        self._said: list[str] = []  # the lines as written, at most max_lines of them
        self._wrap_width = 0  # 0: not laid out yet (lines kept whole until it is)
        self._end_at_layout = False  # written to its end before it was laid out: it stays there

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> Self:
        said = [part for line in lines for part in (line.splitlines() or [""])]
        if self._wrap_width == 0 and scroll_end is not None:
            self._end_at_layout = scroll_end
        self._said.extend(said)
        if self.max_lines is not None and len(self._said) > self.max_lines:
            del self._said[: len(self._said) - self.max_lines]
        return super().write_lines(self._wrapped(said), scroll_end)

    def clear(self) -> Self:
        self._said.clear()
        return super().clear()

    def _wrapped(self, lines: list[str]) -> list[str]:
        width = self._wrap_width
        return [row for line in lines for row in wrap_line(line, width)]

    def on_resize(self, event: events.Resize) -> None:
        """Wrapped again at the new width, the end still in view when it was."""
        # the vertical scroll bar's room is kept whether or not it shows: no rewrap when it comes
        width = max(1, self.size.width - self.styles.scrollbar_size_vertical)
        if width == self._wrap_width:
            return
        # At the first layout the scroll position says nothing yet: the last write's wish does
        at_end = self._end_at_layout if self._wrap_width == 0 else self.is_vertical_scroll_end
        self._wrap_width = width
        said = list(self._said)
        Log.clear(self)
        super().write_lines(self._wrapped(said), scroll_end=at_end)
        if at_end:  # once laid out at this size: during the resize the end is not known yet
            self.call_after_refresh(self.scroll_end, animate=False)
