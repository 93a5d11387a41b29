"""The console's agent table, row by row: the cells of one agent and the fitting of the last
column to the terminal's width. Plain text only; the table widget draws what it is given."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..state.shown import state_text
from .render import STATE_STYLES, elapsed

COLUMNS = ("agent", "state", "att", "elapsed", "tokens", "cost", "sandbox", "last output")
Usage = dict[str, tuple[int | None, float | None]]  # agent id -> tokens, cost


def agent_cells(agent: dict[str, Any], usage: Usage) -> list[Text]:
    """One agent's row, a cell per column; tokens and cost from its last finished attempt."""
    state = str(agent.get("state", "?"))
    tokens, cost = usage.get(str(agent.get("id")), (None, None))
    last = str(agent.get("last_line") or agent.get("detail") or "")
    return [
        Text(str(agent.get("id"))),
        Text(state_text(agent)[:14], STATE_STYLES.get(state, "")),
        Text(str(agent.get("attempt", "")), justify="right"),
        Text(elapsed(agent.get("elapsed_ms")), justify="right"),
        Text(tokens_text(tokens), justify="right"),
        Text("-" if cost is None else f"${cost:.2f}", justify="right"),
        Text(sandbox_text(agent.get("sandbox"))),
        Text(last, "dim"),
    ]


def fit_last_column(rows: dict[str, list[Text]], width: int) -> None:
    """Cut each row's last output to what the other columns leave of ``width``."""
    widths = [len(name) for name in COLUMNS[:-1]]
    for cells in rows.values():
        widths = [max(w, cell.cell_len) for w, cell in zip(widths, cells, strict=False)]
    room = max(10, width - sum(widths) - 2 * len(COLUMNS) - 2)  # padding, a scrollbar
    for cells in rows.values():
        cells[-1].truncate(room, overflow="ellipsis")


def sandbox_text(sandbox: object) -> str:
    """An agent's sandbox in a few letters: ``-`` when it runs as you."""
    if not isinstance(sandbox, str) or sandbox in ("", "none"):
        return "-"
    return sandbox.replace("bubblewrap", "bwrap").replace(", no network", " no-net")[:16]


def tokens_text(count: int | None) -> str:
    if count is None:
        return "-"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)
