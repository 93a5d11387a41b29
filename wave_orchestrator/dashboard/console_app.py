"""The interactive dashboard: the ``dashboard.json`` the plain view draws, as a
Textual app a person drives with keys, like lazygit or claude-squad. It reads state files only;
whatever a key does to the fleet goes through ``Fleet``, which the cli builds from its own
commands, so a key and a command are one behaviour (those keys are ``agent_commands`` and
``lane_commands``; the table's cells ``agent_rows``, their order ``sorting``; the pane under the
table ``panes``, the preview beside it ``preview``).

Everything it shows from a state file or a command's output is plain text, never Textual
markup: a ``[/]`` an agent wrote would end the console, and a ``[@click=...]`` would run an
action of the agent's choosing when the person clicks it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ..errors import WaveError
from ..sanitize import clean_tree, strip_controls
from ..state.fsutil import read_json
from ..state.layout import StateLayout
from ..state.untrusted import read_snapshot
from .agent_rows import Fit, agent_cells, fit_columns
from .fleet import Done, Fleet, Lanes
from .lane_commands import LaneKeys
from .preview import PreviewKeys
from .render import attention_lines, current_wave, dicts, header, stages_line
from .screens import Beneath, Keys, PickWave, late
from .sorting import SORTS, next_sort, sort_agents
from .wrapped_log import WrappedLog

TICK_SECONDS = 0.25  # how often the files are looked at (a stat each; read only when changed)


class FleetConsole(LaneKeys, PreviewKeys):
    """One lane's wave, redrawn when its ``dashboard.json`` changes; the selected agent is
    what every key acts on."""

    TITLE = "wave dashboard"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    #head { height: auto; max-height: 40%; }
    #body { height: 1fr; }
    #body.narrow { layout: vertical; }
    #agents { height: 1fr; width: 1fr; }
    #preview { width: 50%; height: 1fr; border: round $accent; display: none; }
    #body.narrow #preview { width: 1fr; }
    #pane { height: 1fr; border: round $accent; display: none; }
    #attention { height: auto; max-height: 25%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "move(1)", "down", show=False),
        Binding("k,up", "move(-1)", "up", show=False),
        Binding("l", "log", "log"),
        Binding("p", "preview", "preview", show=False),
        Binding("d", "diff", "diff"),
        Binding("enter", "attach", "attach"),
        Binding("s", "stop", "stop"),
        Binding("r", "rerun", "rerun"),
        Binding("C", "carry_on", "continue", show=False),
        Binding("a", "answer", "answer"),
        Binding("c", "comment", "comment"),
        Binding("w", "pick_wave", "wave"),
        Binding("o", "sort", "order", show=False),
        Binding("L", "pick_lane", "lane", show=False),
        Binding("O", "launcher_log", "launcher log", show=False),
        Binding("b", "board", "board", show=False),
        Binding("e", "events", "events", show=False),
        Binding("G", "start_lane", "start lane", show=False),
        Binding("R", "resume_lane", "resume lane", show=False),
        Binding("S", "stop_lane", "stop lane", show=False),
        Binding("slash", "find", "filter"),
        Binding("n", "find_next", "next match", show=False),
        Binding("N", "find_previous", "previous match", show=False),
        Binding("question_mark", "keys", "keys"),
        Binding("escape", "close", "close", show=False),
        # before the table's own page keys: with a pane open, they scroll the pane
        Binding("pageup", "page(-1)", "page up", show=False, priority=True),
        Binding("pagedown", "page(1)", "page down", show=False, priority=True),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self, layout: StateLayout, wave: int | None, fleet: Fleet, lanes: Lanes | None = None
    ) -> None:
        super().__init__()
        self.layout, self.pinned, self.fleet, self.lanes = layout, wave, fleet, lanes
        self.sort = SORTS[0]
        self.wave: int | None = None  # the wave on screen
        self.data: dict[str, Any] | None = None
        self.filter = ""
        self.alive = True
        self._seen: tuple[Path | None, float, bool] | None = None
        self._ids: list[str] = []
        self._fit: Fit = ((), ())  # the table's columns and their widths
        self._rebuild = False  # the table made again at the next draw (a new width)
        self._run_state_seen: int | None = None  # run-state.json's mtime when last looked at
        self._latest: int | None = None  # the wave it named then
        self._usage: dict[str, tuple[int | None, float | None]] = {}
        self._init_pane()
        self._init_preview()
        self._ticks = 0
        self.failure: BaseException | None = None  # what ended it, if not the person
        # the main screen's widgets, held rather than queried: a query asks the active screen,
        # which is a modal while a person answers a confirm or a question
        self.head = Static(id="head", markup=False)
        self.attention = Static(id="attention", markup=False)
        self.table: DataTable[Any] = DataTable(id="agents", cursor_type="row", zebra_stripes=False)
        self.pane = WrappedLog(id="pane", max_lines=5000)
        self.preview = WrappedLog(id="preview", max_lines=2000)
        self.body = Horizontal(self.table, self.preview, id="body")
        self.beneath = Beneath()

    def _fatal_error(self) -> None:
        """An error inside the console ends it without Textual's traceback on the person's
        terminal: the cli says what failed and how to go on (``failure``)."""
        self.failure = sys.exc_info()[1]
        self._close_messages_no_wait()

    def get_default_screen(self) -> Screen[Any]:
        return self.beneath

    async def on_event(self, event: events.Event) -> None:
        """A key typed on before a window opened reaches here after it: the window's."""
        late_key = isinstance(event, events.Key) and self.beneath.came_here(event)
        if isinstance(event, events.Key) and late_key and self.screen is not self.beneath:
            late(self.screen, event)
            return
        await super().on_event(event)

    def compose(self) -> ComposeResult:
        yield from (self.head, self.body, self.pane, self.attention, Footer())

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(TICK_SECONDS, self._tick)

    # -- what is on screen ----------------------------------------------------------------
    def _tick(self) -> None:
        """Redraw when the wave's file changed (or the launcher came or went); follow the log."""
        if self._ticks % 8 == 0:  # every 2 s: a lock file and /proc read
            self.alive = self.fleet.launcher_alive()
        self._ticks += 1
        number = self.pinned if self.pinned is not None else self._current_wave()
        path = self.layout.dashboard(number) if number is not None else None
        try:
            stamp = path.stat().st_mtime if path else 0.0
        except OSError:
            stamp = 0.0
        if (path, stamp, self.alive) != self._seen:
            self._seen = (path, stamp, self.alive)
            if number != self.wave:
                self._close_pane()
            self.wave = number
            self.data = read_snapshot(path) if path else None
            if number is not None:
                self._usage = self.fleet.usage(number)
            self._draw()
        if self._follower is not None:
            self._follow()
        self._follow_preview()

    def _current_wave(self) -> int | None:
        """The wave running, else the latest: looked for again only when run-state.json
        changed (the launcher records a wave there before it draws it), not every tick."""
        try:
            stamp = self.layout.run_state.stat().st_mtime_ns
        except OSError:
            stamp = None
        if stamp is None or stamp != self._run_state_seen:
            self._run_state_seen = stamp
            self._latest = current_wave(self.layout)
        return self._latest

    def _draw(self, width: int = 0) -> None:
        data = clean_tree(self.data) if self.data else None
        width = max(40, width or self.size.width)
        self.head.update(self._head(data, width))
        self.attention.update(Group(*attention_lines(data)) if data else Text(""))
        agents = [a for a in dicts((data or {}).get("agents")) if self._shown(a)]
        self._rows(sort_agents(agents, self.sort, self._usage), max(40, self._table_room(width)))

    def _head(self, data: dict[str, Any] | None, width: int) -> RenderableType:
        if data is None:
            where = strip_controls(str(self.layout.root))
            parts: list[RenderableType] = [
                Text(f"lane {self.layout.lane}: no wave has started yet (state dir {where})")
            ]
        else:
            interrupted = not self.alive and data.get("status") == "running"
            if interrupted:  # its launcher is gone: nothing runs it any more
                data = {**data, "status": "interrupted"}
            parts = [header(data, width), stages_line(data, width)]
            reason = data.get("attempt_reason")
            if isinstance(reason, str) and reason:
                why = f"why attempt {data.get('attempt', '?')}: {reason}"
                parts.append(Text(why, "yellow", no_wrap=True, overflow="ellipsis"))
        if not self.alive:
            lane = self.layout.lane
            said = f"no launcher runs lane {lane}: this is the last state it recorded"
            pid = (data or {}).get("launcher_pid")
            if (data or {}).get("status") == "interrupted" and isinstance(pid, int):
                said = f"launcher not running (pid {pid}): the last state it recorded (--resume)"
            parts.append(Text(said, "bold magenta", no_wrap=True, overflow="ellipsis"))
        shown = [f"filter: {self.filter}  (Esc clears)"] if self.filter else []
        shown += [f"sorted by {self.sort}  (o: next order)"] if self.sort != SORTS[0] else []
        if shown:
            parts.append(Text("   ".join(shown), "cyan", no_wrap=True, overflow="ellipsis"))
        return Group(*parts)

    def _shown(self, agent: dict[str, Any]) -> bool:
        if not self.filter:
            return True
        said = " ".join(str(agent.get(k, "")) for k in ("id", "state", "role", "executor"))
        return self.filter.lower() in said.lower()

    def _rows(self, agents: list[dict[str, Any]], width: int) -> None:
        table = self.table
        rows = {str(a.get("id")): agent_cells(a, self._usage) for a in agents}
        fit = fit_columns(rows, width)
        if list(rows) != self._ids or fit != self._fit or self._rebuild:
            chosen, self._rebuild, self._fit = self.selected(), False, fit
            table.clear(columns=True)  # a column keeps the widest width it ever had
            for name, room in zip(*fit, strict=True):
                table.add_column(name, key=name, width=room)
            for key, cells in rows.items():
                table.add_row(*cells, key=key)
            self._ids = list(rows)
            if chosen in self._ids:
                table.move_cursor(row=self._ids.index(chosen))
            return
        for key, cells in rows.items():
            before = table.get_row(key)
            for column, cell, was in zip(fit[0], cells, before, strict=True):
                if (cell.plain, cell.style) != (was.plain, was.style):  # redraw what changed
                    table.update_cell(key, column, cell)

    def selected(self) -> str | None:
        table = self.table
        if not self._ids or not 0 <= table.cursor_row < len(self._ids):
            return None
        return self._ids[table.cursor_row]

    def on_data_table_row_selected(self) -> None:
        """Enter on the table (the table takes the key before the app's binding sees it)."""
        self.action_attach()

    def on_resize(self, event: events.Resize) -> None:
        self._place_preview(event.size.width)
        self._rebuild = True  # the columns' widths are the table's own: made for the new width
        self._draw(event.size.width)

    # -- moving and panes -------------------------------------------------------------------
    def action_move(self, step: int) -> None:
        table = self.table
        if self._ids:
            table.move_cursor(row=max(0, min(len(self._ids) - 1, table.cursor_row + step)))
        if self._pane_kind == "log":  # the output pane follows the selection
            self.action_log()
        self._follow_preview()

    def action_close(self) -> None:
        if self.pane.display:
            self._close_pane()
        elif self.filter:
            self.filter = ""
            self._draw()

    def action_pick_wave(self) -> None:
        def chosen(number: int | None) -> None:
            if number is not None:
                self.pinned = number
                self._tick()

        self.push_screen(PickWave(self._waves(), self.wave), chosen)

    def action_sort(self) -> None:
        self.sort = next_sort(self.sort)
        self._draw()

    def switch_lane(self, lane: str) -> None:
        """Show ``lane`` from now on: its layout, its current wave, its fleet for every key."""
        assert self.lanes is not None
        try:
            self.layout, self.fleet = self.lanes.open(lane)
        except (WaveError, OSError) as exc:  # its state folder is a link, a file, unreadable
            self.notify(strip_controls(str(exc))[:300], title=f"lane {lane}", markup=False)
            return
        self.pinned = self._latest = self._run_state_seen = self._seen = None
        self.filter, self._usage, self._ticks = "", {}, 0  # its launcher looked at now
        self._close_pane()
        self._reset_preview()
        self._tick()

    def _said(self, what: str, done: Done) -> None:
        super()._said(what, done)
        self._ticks = 0  # whether a launcher runs is looked at again now (a lane command)

    def action_keys(self) -> None:
        self.push_screen(Keys())

    def _waves(self) -> list[tuple[int, str]]:
        try:
            waves = read_json(self.layout.run_state).get("waves", {})
        except (OSError, ValueError, AttributeError):
            waves = {}
        waves = waves if isinstance(waves, dict) else {}
        found = {
            int(p.parent.name.removeprefix("wave-"))
            for p in self.layout.base.glob("waves/wave-*/dashboard.json")
            if p.parent.name.removeprefix("wave-").isdigit()
        }
        return [(n, _wave_state(waves.get(str(n)))) for n in sorted(found)]


def _wave_state(record: Any) -> str:
    state = record.get("state") if isinstance(record, dict) else None
    return strip_controls(state)[:32] if isinstance(state, str) else ""
