"""Where this process writes coordination and questions: the wave's shared files, or, in an
agent's sandbox, the agent's own outbox.

In a sandbox the shared log and the lane's questions are bound read-only: an agent can read
them, never truncate, rewrite or forge a line of them. What its commands write goes to its
outbox, the one file of wave's state bound writable for it, and the launcher merges each line
into the shared files under the outbox owner's name (``outbox.py``). Whoever writes an
outbox, and whatever it writes there, it speaks only as that agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..state.fsutil import json_text, open_regular
from ..state.jsonl import append_line


def sandboxed() -> bool:
    """This process runs in an agent's sandbox (its own process ids: its pid means nothing
    to the launcher). The sandbox says so in ``WAVE_SANDBOX``."""
    return os.environ.get("WAVE_SANDBOX", "none") not in ("", "none")


def outbox_owner() -> str | None:
    """The agent whose outbox this process writes to: in a sandbox, the agent it runs for
    (``WAVE_AGENT_ID``); None anywhere else (a person, the launcher, an agent that runs as
    you), where the shared files are written directly, as they always were."""
    agent = os.environ.get("WAVE_AGENT_ID", "")
    return agent if sandboxed() and AGENT_ID_RE.fullmatch(agent) else None


def append_record(path: Path, record: Mapping[str, Any]) -> None:
    """Append one JSON line on a line of its own: a last line left without its newline (a
    write a full disk cut short, a line an agent wrote by hand) is ended first, in the same
    ``write``, or it would swallow this one. A short write raises (``jsonl.append_line``)."""
    text = json_text(dict(record), separators=(",", ":")) + "\n"
    append_line(path, "\n" + text if _ends_torn(path) else text)


def _ends_torn(path: Path) -> bool:
    """Whether the file's last byte is not a newline (an absent or empty file is not torn)."""
    try:
        fd = open_regular(path)
    except OSError:  # absent; or no regular file, which append_line refuses by its name
        return False
    try:
        size = os.fstat(fd).st_size
        # b"": another process's append is under way (its size seen before its byte): not
        # torn. A spurious newline would at worst end a blank line, which readers skip.
        return size > 0 and os.pread(fd, 1, size - 1) not in (b"\n", b"")
    finally:
        os.close(fd)


def append_to_outbox(path: Path, record: Mapping[str, Any]) -> None:
    """Append a line to the agent's own outbox, made before its sandbox started. One that is
    not there is another wave's (or another agent's): it is refused, not made, since inside
    the sandbox it would be made nowhere anyone reads."""
    if not path.is_file():
        raise UsageError(
            f"{path} is not this agent's outbox: in a sandbox an agent writes for itself, in "
            "its own wave ($WAVE_WAVE), and nowhere else"
        )
    append_record(path, record)
