"""The console's agent table, row by row: the cells of one agent and the fitting of them to
the table's room. Plain text only; the table widget draws what it is given.

The columns are sized here, to what the rows show now: the state column to the widest state
shown (a note only when one is), the last output to what the others leave. When the room is
small (a preview beside the table, a narrow terminal) the less needed columns give way before
the last output gets too narrow to read; a cut cell ends in an ellipsis. A change of any
width makes the table again (the widget sizes a column once), which a wave does rarely."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..state.lifecycle import AgentState
from ..state.shown import live_stream, state_text
from .render import STATE_STYLES, elapsed, last_output

COLUMNS = ("agent", "state", "att", "elapsed", "tokens", "cost", "sandbox", "last output")
# The widest state word (status-unreadable, the phases an agent reports included): never cut.
STATE_WIDTH = max(len(word) for word in [*STATE_STYLES, *AgentState])
WIDE_STATE = 30  # from 120 columns: room for what it waits on (``waiting for team until 09:40``)
GIVE_WAY = ("sandbox", "tokens", "cost", "att", "elapsed")  # dropped first to last, when needed
READABLE = 24  # the last output's columns worth dropping another column for
PADDING = 2  # the table's own space around each cell
SCROLLBAR = 2  # kept free for the table's scroll bar, shown once the rows outgrow it
Usage = dict[str, tuple[int | None, float | None]]  # agent id -> tokens, cost
Fit = tuple[tuple[str, ...], tuple[int, ...]]  # the columns shown, and each one's width


def agent_cells(agent: dict[str, Any], usage: Usage) -> list[Text]:
    """One agent's row, a cell per column; tokens and cost from its last finished attempt,
    or, while it runs, as its CLI's event stream counts them (its activity leads its line)."""
    state = str(agent.get("state", "?"))
    tokens, cost = usage.get(str(agent.get("id")), (None, None))
    if (stream := live_stream(agent)) is not None:
        tokens, cost = stream_figures(stream)
    last = last_output(agent, figures=False)
    return [
        Text(str(agent.get("id"))),
        Text(state_text(agent), STATE_STYLES.get(state, "")),
        Text(str(agent.get("attempt", "")), justify="right"),
        Text(elapsed(agent.get("elapsed_ms")), justify="right"),
        Text(tokens_text(tokens), justify="right"),
        Text("-" if cost is None else f"${cost:.2f}", justify="right"),
        Text(sandbox_text(agent.get("sandbox"))),
        Text(last, "dim"),
    ]


def stream_figures(stream: dict[str, Any]) -> tuple[int | None, float | None]:
    """The tokens and cost a running agent's stream counted so far (None: not said)."""
    counts = [stream.get(k) for k in ("input_tokens", "output_tokens")]
    tokens = [c for c in counts if isinstance(c, int)]
    cost = stream.get("cost_usd")
    return (sum(tokens) or None), (cost if isinstance(cost, int | float) else None)


def fit_columns(rows: dict[str, list[Text]], width: int) -> Fit:
    """The columns that fit ``width`` and their widths; each row kept to those columns, its
    cells cut to them with an ellipsis (a state word never: its column is at least as wide)."""
    cap = WIDE_STATE if width >= 120 else STATE_WIDTH
    words = [cells[1].plain.split(" ", 1)[0] for cells in rows.values()]
    state_room = max([min(cap, cells[1].cell_len) for cells in rows.values()] + [5])
    state_room = max([state_room, *(len(word) for word in words)])
    widths = {name: len(name) for name in COLUMNS}
    for cells in rows.values():
        cells[1].truncate(state_room, overflow="ellipsis")
        for name, cell in zip(COLUMNS[:-1], cells, strict=False):
            widths[name] = max(widths[name], cell.cell_len)
    shown, give_way = list(COLUMNS), list(GIVE_WAY)
    while True:
        room = width - sum(widths[n] + PADDING for n in shown) - SCROLLBAR + widths[COLUMNS[-1]]
        if room >= READABLE or not give_way:
            break
        shown.remove(give_way.pop(0))
    # all the room left, whatever the lines say now: a longer line later needs no new table
    widths["last output"] = max(5, room)
    for cells in rows.values():
        cells[-1].truncate(widths["last output"], overflow="ellipsis")
        kept = [cell for name, cell in zip(COLUMNS, cells, strict=True) if name in shown]
        cells[:] = kept
    return tuple(shown), tuple(widths[n] for n in shown)


def sandbox_text(sandbox: object) -> str:
    """An agent's sandbox in a few letters: ``-`` when it runs as you."""
    if not isinstance(sandbox, str) or sandbox in ("", "none"):
        return "-"
    return sandbox.replace("bubblewrap", "bwrap").replace(", no network", " no-net")[:16]


def tokens_text(count: int | None) -> str:
    if count is None:
        return "-"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def conversation_note(data: dict[str, Any] | None, agent: str) -> str:
    """`` · conversation <id>`` once the agent's CLI conversation is known (what `wave rerun
    --continue` and C go on with; to resume it by hand), else ``""``."""
    rows = (data or {}).get("agents")
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("id") == agent:
            found = row.get("conversation")
            return f" · conversation {found}" if isinstance(found, str) and found else ""
    return ""
