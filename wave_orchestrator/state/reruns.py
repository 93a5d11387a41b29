"""The `wave rerun` request files: a person's command asks, through a request file beside the
running wave's agent folders, that one agent run again now; the launcher answers in a file the
command waits on. Both sides of the protocol live here, with the state they share; what the
running pool does with a request is its own business (``runtime.pool.reruns``).

A request is hostile input like every file under ``.wave/``: read bounded, its id and reason
checked, its reason cleaned of terminal controls."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import WaveError
from ..sanitize import strip_controls
from .events import utc_now
from .fsutil import ensure_dir, write_json_atomic
from .layout import AgentPaths
from .untrusted import read_object

REQUEST_LIMIT = 8192  # a request is a few lines of JSON; a bigger file is not one wave wrote
REASON_LIMIT = 2000
ID_LIMIT = 64


class Request(NamedTuple):
    id: str
    reason: str
    carry_on: bool = False  # continue its conversation, ``reason`` the person's words to it


def ask(paths: AgentPaths, reason: str, carry_on: bool = False) -> str:
    """Write the request for the agent of ``paths``; returns its id (what the answer names).
    ``carry_on``: its next try continues its conversation, told ``reason``."""
    import uuid  # `wave rerun` asks; the launcher never does

    rid = uuid.uuid4().hex
    ensure_dir(paths.rerun_request.parent)
    paths.rerun_answer.unlink(missing_ok=True)
    request: dict[str, Any] = {"id": rid, "reason": reason[:REASON_LIMIT], "at": utc_now()}
    if carry_on:
        request["continue"] = True
    write_json_atomic(paths.rerun_request, request)
    return rid


def answer(paths: AgentPaths, rid: str) -> dict[str, Any] | None:
    """The launcher's answer to request ``rid``, once it has written one."""
    found = read_object(paths.rerun_answer, REQUEST_LIMIT)
    return found if found is not None and found.get("id") == rid else None


def take_request(path: Path) -> Request | None:
    """Read and remove one request file; None when it is not one `wave rerun` wrote."""
    found = read_object(path, REQUEST_LIMIT)
    path.unlink(missing_ok=True)
    rid = found.get("id") if found else None
    if not isinstance(rid, str) or not rid or len(rid) > ID_LIMIT:
        return None
    reason = strip_controls(str(found.get("reason", "") if found else ""))[:REASON_LIMIT]
    return Request(rid, reason, found is not None and found.get("continue") is True)


def reply(path: Path, rid: str, refused: str | None) -> None:
    """The launcher's answer: taken, or why not. Unwritable: the command says it had none."""
    with contextlib.suppress(OSError, WaveError):
        write_json_atomic(path, {"id": rid, "taken": refused is None, "detail": refused or ""})
