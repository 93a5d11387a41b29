"""The console's agent table, row by row: the cells of one agent and the fitting of them to
the terminal's width. Plain text only; the table widget draws what it is given.

The table sizes a column when its rows are added, not when a cell changes later: each cell
whose words change while the wave runs (state, tokens, cost, last output) is measured at the
width it may take at this terminal's width, so a state that comes later (``waiting-human``)
or a first line of output shows whole without the table being made again."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

from ..state.lifecycle import AgentState
from ..state.shown import state_text
from .render import STATE_STYLES, elapsed

COLUMNS = ("agent", "state", "att", "elapsed", "tokens", "cost", "sandbox", "last output")
# The widest state word (status-unreadable, the phases an agent reports included): never cut.
STATE_WIDTH = max(len(word) for word in [*STATE_STYLES, *AgentState])
WIDE_STATE = 30  # from 120 columns: room for what it waits on (``waiting for team until 09:40``)
TOKENS_WIDTH, COST_WIDTH = 6, 5  # ``123.4k``, ``$9.99``
Usage = dict[str, tuple[int | None, float | None]]  # agent id -> tokens, cost


class Cell(Text):
    """Text that the table measures at least ``room`` wide: its column is made wide enough
    for the words the cell may show later, while its text stays what it says."""

    __slots__ = ("room",)

    def __init__(self, text: str, style: str = "", *, justify: Any = None, room: int = 0):
        super().__init__(text, style, justify=justify)
        self.room = room

    def __bool__(self) -> bool:
        return True  # empty, it still holds its room (the table drops a falsy cell for its own)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        said = super().__rich_measure__(console, options)
        return Measurement(max(said.minimum, self.room), max(said.maximum, self.room))


def agent_cells(agent: dict[str, Any], usage: Usage) -> list[Text]:
    """One agent's row, a cell per column; tokens and cost from its last finished attempt."""
    state = str(agent.get("state", "?"))
    tokens, cost = usage.get(str(agent.get("id")), (None, None))
    last = str(agent.get("last_line") or agent.get("detail") or "")
    return [
        Text(str(agent.get("id"))),
        Cell(state_text(agent), STATE_STYLES.get(state, ""), room=STATE_WIDTH),
        Text(str(agent.get("attempt", "")), justify="right"),
        Text(elapsed(agent.get("elapsed_ms")), justify="right"),
        Cell(tokens_text(tokens), justify="right", room=TOKENS_WIDTH),
        Cell("-" if cost is None else f"${cost:.2f}", justify="right", room=COST_WIDTH),
        Text(sandbox_text(agent.get("sandbox"))),
        Cell(last, "dim"),
    ]


def fit_last_column(rows: dict[str, list[Text]], width: int) -> None:
    """Fit each row to ``width``: its state to the state column's room, its last output to
    what the other columns leave, each measured at that room (see the module's docstring)."""
    state_room = WIDE_STATE if width >= 120 else STATE_WIDTH
    for cells in rows.values():
        cells[1].truncate(state_room, overflow="ellipsis")
        if isinstance(cells[1], Cell):
            cells[1].room = state_room
    widths = [len(name) for name in COLUMNS[:-1]]
    for cells in rows.values():
        widths = [max(w, cell_width(cell)) for w, cell in zip(widths, cells, strict=False)]
    room = max(len(COLUMNS[-1]), width - sum(widths) - 2 * len(COLUMNS) - 2)  # padding, a bar
    for cells in rows.values():
        cells[-1].truncate(room, overflow="ellipsis")
        if isinstance(cells[-1], Cell):
            cells[-1].room = room


def cell_width(cell: Text) -> int:
    return max(cell.cell_len, cell.room if isinstance(cell, Cell) else 0)


def sandbox_text(sandbox: object) -> str:
    """An agent's sandbox in a few letters: ``-`` when it runs as you."""
    if not isinstance(sandbox, str) or sandbox in ("", "none"):
        return "-"
    return sandbox.replace("bubblewrap", "bwrap").replace(", no network", " no-net")[:16]


def tokens_text(count: int | None) -> str:
    if count is None:
        return "-"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)
