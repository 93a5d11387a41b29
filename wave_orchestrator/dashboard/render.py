"""The live dashboard: renders a wave's ``dashboard.json`` with rich. It only reads
the file the launcher keeps current, so it can run anywhere, any number of times."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..sanitize import clean_tree, strip_controls
from ..state.events import local_clock
from ..state.fsutil import read_json
from ..state.layout import StateLayout
from ..state.shown import governor_lines, live_stream, state_text, stream_text
from ..state.untrusted import deploy_line, read_snapshot

STATE_STYLES = {
    "pending": "dim",
    "launching": "cyan",
    "queued": "blue",
    "running": "cyan",
    "coding": "cyan",
    "validating": "blue",
    "deploying": "blue",
    "finalizing": "blue",
    "rate-limited": "yellow",
    "waiting-human": "magenta",
    "limited": "yellow",
    "completed": "green",
    "reused": "green",
    "failed": "bold red",
    "timeout": "red",
    "stalled": "red",
    "session-missing": "red",
    "usage-limit": "red",
    "status-unreadable": "red",
    "cancelled": "magenta",
}
STAGES_INDENT = len("stages: ")  # where a stages line's later lines start
STAGE_MARKS = {"pending": "·", "running": "…", "passed": "✓", "failed": "✗"}


def elapsed(ms: Any) -> str:
    if not isinstance(ms, int):
        return "-"
    s = int(ms / 1000 + 0.5)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def header(data: dict[str, Any], width: int = 80) -> Text:
    """One line that fits ``width``: the title gives way, the state and attempt stay."""
    status = str(data.get("status", "?"))
    lead = f"lane {_cut(str(data.get('lane')), 32)}  wave {data.get('wave')}: "
    state = f"  [{_cut(status, 20)}]"
    attempt = f"  attempt {data.get('attempt', '?')}/{data.get('max_attempts', '?')}"
    updated = f"  updated {str(data.get('updated_at', ''))[11:19]}Z"
    room = width - len(lead) - len(state) - len(attempt)
    if room - len(updated) < 8:  # a narrow frame drops the time before the title
        updated = ""
    title = _cut(str(data.get("title", "")), max(12, room - len(updated)))
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(lead + title, "bold")
    head.append(state, STATE_STYLES.get(status, "bold"))
    head.append(attempt)
    head.append(updated, "dim")
    return head


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


def stages_line(data: dict[str, Any], width: int = 0) -> Text:
    """Each closure stage with its mark, onto more lines when they do not fit ``width`` (0:
    one line), broken between stages, so a lane's last stages show too; once the wave failed,
    a stage still marked running is the one that failed (its gate, or the attempt, ended there)."""
    failed_wave = data.get("status") == "failed"
    line = Text("stages: ", no_wrap=True, overflow="ellipsis")
    used = line.cell_len
    for i, stage in enumerate(dicts(data.get("stages"))):
        state = stage.get("state", "pending")
        if failed_wave and state == "running":
            state = "failed"
        style = {"passed": "green", "failed": "red", "running": "cyan"}.get(state, "dim")
        said = f"{stage.get('stage')} {STAGE_MARKS.get(state, '?')}"
        if i and width and used + 3 + cell_len(said) > width:  # the rest on the next line
            line.append(" →\n" + " " * STAGES_INDENT, "dim")
            used = STAGES_INDENT
        elif i:
            line.append(" → ", "dim")
            used += 3
        line.append(said, style)
        used += cell_len(said)
    return line


def _table(agents: list[dict[str, Any]], width: int) -> Table:
    wide = width >= 120
    # Shown once any agent is sandboxed: the column says which of them are, and how.
    boxed = wide and any(a.get("sandbox") not in (None, "none") for a in agents)
    table = Table(expand=True, show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("agent", no_wrap=True, min_width=6)
    if wide:
        table.add_column("role", no_wrap=True)
        table.add_column("executor", no_wrap=True)
    if boxed:
        table.add_column("sandbox", no_wrap=True)
    table.add_column("state", no_wrap=True, min_width=9)
    table.add_column("att", justify="right", no_wrap=True)
    table.add_column("try", justify="right", no_wrap=True)
    table.add_column("elapsed", justify="right", no_wrap=True)
    table.add_column("exit", justify="right", no_wrap=True)
    table.add_column("last output", overflow="ellipsis", no_wrap=True, ratio=1)
    for a in agents:
        state = str(a.get("state", "?"))
        code = a.get("exit_code")
        # Text, never str: a table parses a str cell as markup, and an agent wrote these
        cells: list[RenderableType] = [Text(str(a.get("id")))]
        if wide:
            cells += [Text(str(a.get("role", ""))), Text(str(a.get("executor", "")))]
        if boxed:
            cells.append(Text(str(a.get("sandbox") or "none")))
        cells += [
            Text(state_text(a), STATE_STYLES.get(state, "")),
            Text(str(a.get("attempt", ""))),
            Text(str(a.get("tries", ""))),
            Text(elapsed(a.get("elapsed_ms"))),
            Text("-" if code is None else str(code)),
            Text(last_output(a), "dim"),
        ]
        table.add_row(*cells)
    return table


def last_output(agent: dict[str, Any], figures: bool = True) -> str:
    """A running agent's activity and last line when its CLI streams events (the stream's
    text, already cleaned); else its output's last line, or why it ended."""
    if (stream := live_stream(agent)) is not None:
        said = stream.get("last_line")
        parts = [stream_text(stream, figures), said if isinstance(said, str) else ""]
        if line := " · ".join(p for p in parts if p):
            return line
    return str(agent.get("last_line") or agent.get("detail") or "")


def _summary(hidden: list[dict[str, Any]]) -> Text:
    counts = Counter(str(a.get("state")) for a in hidden)
    parts = ", ".join(f"{n} {state}" for state, n in counts.most_common())
    return Text(f"… and {len(hidden)} more agents: {parts}", "italic")


def _order(agents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Active and failed agents first, so a short screen shows what needs attention."""
    rank = {
        "failed": 0,
        "timeout": 0,
        "stalled": 0,
        "session-missing": 0,
        "usage-limit": 0,
        "status-unreadable": 0,
        "completed": 3,
        "reused": 3,
        "pending": 2,
        "cancelled": 3,
    }
    return sorted(agents, key=lambda a: rank.get(str(a.get("state")), 1))


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list: a half-written or hand-edited file must not crash the view."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def attention_lines(data: dict[str, Any]) -> list[Text]:
    """The last failed gate with what to do, open blockers and requests, and the board."""
    out = []
    if deploys := deploy_line(dicts(data.get("agents"))):
        style = "bold red" if " failed " in f"{deploys} " else "blue"
        out.append(Text(f"deploys: {deploys}", style))
    for gap in dicts(data.get("gaps"))[:3]:
        out.append(
            Text(f"gap {gap.get('kind')} ({gap.get('agent')}): {gap.get('detail')}", "yellow")
        )
    if isinstance(gov := data.get("governor"), dict):  # spend, and accounts that wait
        out += [Text(line, "yellow") for line in governor_lines(gov)]
    if isinstance(since := data.get("cluster_unreachable_since"), str):
        out.append(Text(f"cluster unreachable since {local_clock(since)}", "bold red"))
    gate = data.get("gate_failure")
    if isinstance(gate, dict) and isinstance(gate.get("status"), str):
        action = gate.get("action") if isinstance(gate.get("action"), str) else ""
        out.append(Text(f"{gate.get('stage')} gate failed: {gate['status']}; {action}", "red"))
    coordination = data.get("coordination")
    if isinstance(coordination, dict):
        for key, style in (("blockers", "bold red"), ("requests", "yellow")):
            for item in dicts(coordination.get(key))[:3]:
                out.append(
                    Text(
                        f"{key[:-1]} {item.get('id')} {item.get('agent')}: {item.get('summary')}",
                        style,
                    )
                )
        for item in dicts(coordination.get("questions"))[:3]:
            out.append(
                Text(
                    f"question {item.get('id')} {item.get('agent')}: {item.get('question')}",
                    "bold yellow",
                )
            )
        if isinstance(coordination.get("board"), str) and out:
            out.append(Text(f"board: {coordination['board']}", "dim"))
    return out


def render(data: dict[str, Any], width: int = 80, height: int = 40) -> RenderableType:
    """One frame: header, stage progress, the agents that fit, a summary of the rest, events.
    Agents come first: on a short screen the events give way, not the agents. Every string in
    ``data`` came from a file agents can write to: shown, never obeyed."""
    data = clean_tree(data)
    agents = dicts(data.get("agents"))
    reason = data.get("attempt_reason")
    reason = reason if isinstance(reason, str) and reason else None
    attention = attention_lines(data)
    stages = stages_line(data, width)
    # header, stages, the table's header row, the line the cursor sits on
    room = max(1, height - 4 - stages.plain.count("\n") - (1 if reason else 0) - len(attention))
    if len(agents) <= room:
        shown, hidden = agents, []
    else:
        shown, hidden = _order(agents)[: room - 1], _order(agents)[room - 1 :]
    left = room - len(shown) - (1 if hidden else 0)
    events = dicts(data.get("events"))[-min(5, left - 1) :] if left >= 2 else []
    heading = left >= 1
    parts: list[RenderableType] = [header(data, width), stages]
    if reason:  # why this attempt runs, in one line
        parts.append(Text(f"why attempt {data.get('attempt', '?')}: {reason}", "yellow"))
    parts.append(_table(shown, width))
    if hidden:
        parts.append(_summary(hidden))
    parts += attention
    if heading:
        parts.append(Text("recent events:", "bold"))
    for e in events:
        who = f" {e['agent']}" if e.get("agent") else ""
        extra = e.get("status") or e.get("stage") or ""
        parts.append(
            Text(f"  {str(e.get('at', ''))[11:19]} {e.get('event')}{who} {extra}".rstrip(), "dim")
        )
    return Group(*parts)


def current_wave(layout: StateLayout) -> int | None:
    """The wave the run state says is running, else the highest wave with a dashboard file."""
    try:
        waves = read_json(layout.run_state).get("waves", {})
    except (OSError, ValueError, AttributeError):
        waves = {}
    waves = waves if isinstance(waves, dict) else {}
    running = [
        int(k)
        for k, v in waves.items()
        if k.isdigit() and isinstance(v, dict) and v.get("state") == "running"
    ]
    if running:
        return max(running)
    found = [
        int(p.parent.name.removeprefix("wave-"))
        for p in layout.base.glob("waves/wave-*/dashboard.json")
        if p.parent.name.removeprefix("wave-").isdigit()
    ]
    return max(found) if found else None


def load_frame(layout: StateLayout, wave: int | None) -> dict[str, Any] | None:
    number = wave if wave is not None else current_wave(layout)
    if number is None:
        return None
    return read_snapshot(layout.dashboard(number))


def frames(
    layout: StateLayout, wave: int | None, interval: float = 0.5
) -> Iterator[dict[str, Any] | None]:
    last: tuple[Path | None, float] = (None, 0.0)
    while True:
        number = wave if wave is not None else current_wave(layout)
        path = layout.dashboard(number) if number is not None else None
        try:
            stamp = path.stat().st_mtime if path else 0.0
        except OSError:
            stamp = 0.0
        if (path, stamp) != last:
            last = (path, stamp)
            yield load_frame(layout, number)
        time.sleep(interval)


def waiting_text(layout: StateLayout) -> Text:
    where = strip_controls(str(layout.root))
    return Text(f"lane {layout.lane}: no wave has started yet (state dir {where})", "dim")


def show_once(layout: StateLayout, wave: int | None, console: Console) -> None:
    data = load_frame(layout, wave)
    frame = render(data, console.width, console.height) if data else waiting_text(layout)
    if console.is_terminal:
        console.print(frame)
        return
    with console.capture() as captured:  # piped: no padding to the frame's width
        console.print(frame)
    console.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def show_live(layout: StateLayout, wave: int | None, console: Console) -> None:
    with Live(waiting_text(layout), console=console, screen=False, auto_refresh=False) as live:
        for data in frames(layout, wave):
            frame = render(data, console.width, console.height) if data else waiting_text(layout)
            live.update(frame, refresh=True)
