"""The agents' live structured state, read from their CLIs' event streams: what each running
agent does now, its turns, tool calls, tokens and cost, for dashboard.json, `wave status` and
the summary. The stream says what an agent does, never that it ended: its process and its
exit say that (a ``result`` event leaves it running until its wrapper writes its status)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from ..agent.run import AgentRun

BYTES_PER_LOOK = 1 << 20  # of all the streams, per look of the loop (a second)
_next = 0  # where the next look starts among the running agents' streams
CATCH_UP_READS = 64  # reads of an ended agent's log at most (16 MB): a summary never waits long
_catching_up = threading.Lock()  # the loop's summaries and the summary thread's


def follow_streams(runs: Iterable[AgentRun]) -> bool:
    """Read what each running agent's stream gained since the last look (one bounded read
    each: a chatty agent is caught up over the next looks); True when any state changed.
    At most BYTES_PER_LOOK in all, a look starting where the last one stopped: thirty agents
    pouring out output cost the loop a bounded read a look, and each gets its turn."""
    global _next
    live = [stream for run in runs if run.active and (stream := run.stream) is not None]
    if not live:
        return False
    first = _next % len(live)
    changed, left, read = False, BYTES_PER_LOOK, 0
    for stream in live[first:] + live[:first]:
        before = stream.offset
        changed |= stream.update()
        left, read = left - max(0, stream.offset - before), read + 1
        if left <= 0:
            break
    _next = first + read
    return changed


def stream_row(run: AgentRun, catch_up: bool = False) -> dict[str, Any] | None:
    """The state its stream told so far (None for a text-mode agent, or before any event);
    ``catch_up``: an ended agent's log is read to its end first (at most CATCH_UP_READS)."""
    stream = run.stream
    if stream is None:
        return None
    if catch_up and not run.active:
        with _catching_up:
            for _ in range(CATCH_UP_READS):
                stream.update()
                if not stream.behind:
                    break
    return stream.state.to_dict() if stream.state.active else None
