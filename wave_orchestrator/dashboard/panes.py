"""The console's pane under the table: an agent's output or diff, the launcher's log, the board,
the event timeline; and search inside what it shows. Each is read from the file the state
layout names, only what is new (the board: again when it changed), and shown as plain text:
an agent wrote most of it, escapes and markup included."""

from __future__ import annotations

from typing import Any

from rich.highlighter import Highlighter
from rich.text import Text
from textual import work
from textual.content import Content
from textual.widgets import DataTable, Log

from ..sanitize import strip_controls
from ..state.layout import StateLayout
from .agent_commands import AgentCommands
from .agent_rows import conversation_note
from .fleet import Done
from .follow import EventFollower, LauncherLogFollower, LogFollower, WholeFile
from .screens import Ask

NO_BOARD = "(no board yet: the launcher writes it when the wave starts and as agents post)"


class Found(Highlighter):
    """Marks each place the searched text is, whatever its case."""

    def __init__(self, term: str) -> None:
        self.term = term

    def highlight(self, text: Text) -> None:
        text.highlight_words([self.term], "black on yellow", case_sensitive=False)


class PaneKeys(AgentCommands):
    """The keys that open the pane, and search in it; ``FleetConsole`` builds the widgets."""

    layout: StateLayout
    pane: Log
    table: DataTable[Any]
    filter: str

    def _init_pane(self) -> None:
        self._follower: LogFollower | WholeFile | None = None  # what the pane follows
        self._pane_kind: str | None = None  # "log", "diff", "board", "events", "launcher"
        self._term = ""  # what `/` last looked for in the pane
        self._match: int | None = None  # the line it was found on

    def _draw(self, width: int = 0) -> None:
        raise NotImplementedError

    # -- what the pane shows ----------------------------------------------------------------
    def action_log(self) -> None:
        agent = self._agent()
        if agent is None or self.wave is None:
            return
        follower = LogFollower(self.layout.agent(self.wave, agent).output_log)
        said = conversation_note(self.data, agent)  # a title is never markup (_open_pane)
        self._show(
            follower, "log", f"output of {agent}{said} (follows; PgUp/PgDn scroll; Esc closes)"
        )

    def action_launcher_log(self) -> None:
        title = f"the launcher's log of lane {self.layout.lane} (follows; Esc closes)"
        self._show(LauncherLogFollower(self.layout.launcher_log), "launcher", title)

    def action_events(self) -> None:
        title = f"events of lane {self.layout.lane} (follows; Esc closes)"
        self._show(EventFollower(self.layout.events), "events", title)

    def action_board(self) -> None:
        if self.wave is None:
            self.notify("no wave has started yet: no board", title="board", markup=False)
            return
        title = f"board of wave {self.wave} (as the launcher rewrites it; Esc closes)"
        self._show(WholeFile(self.layout.board(self.wave)), "board", title)

    def _show(self, follower: LogFollower | WholeFile, kind: str, title: str) -> None:
        self._follower, self._pane_kind = follower, kind
        self._open_pane(title)
        self._follow()

    def _follow(self) -> None:
        """What is new in the pane's file: appended lines, or the board again when it changed."""
        pane, follower = self.pane, self._follower
        if isinstance(follower, WholeFile):
            text = follower.read()
            if text is not None:
                pane.clear()
                pane.write_lines((text or NO_BOARD).split("\n"), scroll_end=False)
        elif follower is not None and (text := follower.read()):
            pane.write_lines(text.split("\n"), scroll_end=pane.is_vertical_scroll_end)

    def action_diff(self) -> None:
        agent = self._agent()
        if agent is None or self.wave is None:
            return
        self._follower, self._pane_kind = None, "diff"
        self._open_pane(f"diff of {agent} (Esc closes)")
        self._diff(agent, self.wave)

    @work(thread=True, exclusive=True, group="diff")
    def _diff(self, agent: str, wave: int) -> None:
        done = self.fleet.command(["diff", agent, "--wave", str(wave)])
        self.call_from_thread(self._show_diff, done)

    def _show_diff(self, done: Done) -> None:
        """The diff as words: the agent wrote every line of it, escapes included."""
        pane = self.pane
        if pane.display and self._pane_kind == "diff":
            pane.clear()
            text = strip_controls(done.text, newlines=True) or "(no changes)"
            pane.write_lines(text.split("\n"), scroll_end=False)

    def _open_pane(self, title: str) -> None:
        pane = self.pane
        pane.clear()
        pane.border_title = Content(strip_controls(title))  # a str would be parsed as markup
        pane.highlight, self._match = False, None
        pane.display = True

    def action_page(self, step: int) -> None:
        """PgUp/PgDn: the open pane a page (away from its end it stops following), else the
        table."""
        pane, table = self.pane, self.table
        if pane.display:
            (pane.scroll_page_down if step > 0 else pane.scroll_page_up)(animate=False)
        else:
            (table.action_page_down if step > 0 else table.action_page_up)()

    def _close_pane(self) -> None:
        self._follower, self._pane_kind = None, None
        pane = self.pane
        pane.display = False
        self.table.focus()

    # -- search -----------------------------------------------------------------------------
    def action_find(self) -> None:
        """`/`: find text in the open pane; with no pane, filter the agents."""
        if not self.pane.display:
            self.action_filter()
            return

        def chosen(text: str | None) -> None:
            if text:
                self._term, self._match = text, None
                self._find(1)

        self.push_screen(Ask("Find in the pane (n next, N previous):", value=self._term), chosen)

    def action_filter(self) -> None:
        def chosen(text: str | None) -> None:
            if text is not None:
                self.filter = text
                self._draw()

        self.push_screen(
            Ask("Show the agents whose id, state, role or executor has:", value=self.filter), chosen
        )

    def action_find_next(self) -> None:
        self._find(1)

    def action_find_previous(self) -> None:
        self._find(-1)

    def _find(self, step: int) -> None:
        """The next line (``step`` 1) or the previous one (-1) that has the text, round the end;
        scrolled to, the text marked. The pane stops following while its end is out of view."""
        pane, term = self.pane, self._term.lower()
        lines = pane.lines
        if not pane.display or not term or not lines:
            return
        if self._match is not None:
            start = self._match
        else:  # the first search starts from what is on screen
            start = int(pane.scroll_y) - 1 if step > 0 else int(pane.scroll_y) + pane.size.height
        for i in range(1, len(lines) + 1):
            at = (start + step * i) % len(lines)
            if term in lines[at].lower():
                self._match = at
                pane.highlighter, pane.highlight = Found(self._term), True
                pane.notify_style_update()  # drawn lines are cached: marked anew
                pane.scroll_to(y=max(0, at - pane.size.height // 3), animate=False)
                pane.refresh()
                return
        self.notify(f"{self._term!r} not found in the pane", title="find", markup=False)
