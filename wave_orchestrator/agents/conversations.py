"""An agent's conversation with its CLI, kept across tries: the id each CLI gives it, how a
try continues it instead of starting over, and how a CLI says it will not.

claude takes the id wave gives it at launch (``--session-id``) and continues with
``--resume``; codex names its thread in its first lines (``session id:`` in text,
``thread.started`` in ``--json``) and continues with ``exec resume``; opencode names its session
in its JSON events (``--format json``) and continues with ``--session``. An id read from an
agent's output is hostile: only one of the shape its CLI gives is ever used, and it reaches
the CLI as one argv element, never through a shell.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from ..sanitize import one_line
from ..state.fsutil import open_read, parse_json

CONTINUABLE = ("claude", "codex", "opencode")
# What a dry run shows where a live launch gives claude a new id.
DRY_RUN_ID = "00000000-0000-4000-8000-000000000000"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
OPENCODE_ID_RE = re.compile(r"ses_[A-Za-z0-9]{6,64}")
CODEX_BANNER_RE = re.compile(rb"^session id: (\S{1,80})\s*$", re.MULTILINE)
# The id is said in a CLI's first lines: only so much of the log is read for it.
HEAD_BYTES = 64 * 1024
# Each CLI's own line, at the start of a line of its output, when it will not continue the
# conversation asked for (an agent's tool printing "port already in use" is not one).
REFUSALS = {
    "claude": re.compile(
        r"(No conversation found with session ID|Error: Session ID \S+ is already in use)"
    ),
    "codex": re.compile(r"Error: thread/resume: .*(no rollout found|failed)"),
    "opencode": re.compile(r"Error: Session not found"),
}


def valid_id(executor: str, value: object) -> str | None:
    """``value`` when it has the shape ``executor`` gives its conversations, else None."""
    if not isinstance(value, str):
        return None
    shape = OPENCODE_ID_RE if executor == "opencode" else UUID_RE
    return value if shape.fullmatch(value) else None


def new_id(executor: str, dry_run: bool = False) -> str:
    """The id wave gives a new conversation at launch: only claude takes one."""
    if executor != "claude":
        return ""
    if dry_run:
        return DRY_RUN_ID
    import uuid  # with `platform`, loaded only by a launch that starts claude

    return str(uuid.uuid4())


def why_not(executor: str, argv: Sequence[str]) -> str | None:
    """Why a conversation of this command line cannot be continued (None: it can)."""
    if executor not in CONTINUABLE:
        return f"{executor} has no conversation to continue"
    if executor == "codex" and "--ephemeral" in argv:
        return "codex ran with --ephemeral: it kept no session"
    if executor == "opencode" and not _has_pair(argv, "--format", "json"):
        return "opencode names its session only with format: json"
    return None


def launch_argv(executor: str, argv: Sequence[str], given: str, continues: str) -> list[str]:
    """The command line of one try: ``given`` is the id wave gives a new claude conversation,
    ``continues`` the id of the conversation this try continues ("" for a fresh start)."""
    out = list(argv)
    if executor == "claude" and (continues or given):
        flag = ["--resume", continues] if continues else ["--session-id", given]
        out[2:2] = flag  # after `claude -p`
    elif continues and executor == "codex":
        out[-1:-1] = ["resume", continues]  # `codex exec [options] resume <id> -`
    elif continues and executor == "opencode":
        out[2:2] = ["--session", continues]  # after `opencode run`
    return out


def read_id(executor: str, output_log: Path) -> str | None:
    """The conversation id a codex or opencode try said in its first lines, if it did."""
    if executor not in ("codex", "opencode"):
        return None
    head = _head(output_log)
    if executor == "codex" and (m := CODEX_BANNER_RE.search(head)):
        return valid_id(executor, m.group(1).decode("ascii", "replace"))
    key = b'"thread_id"' if executor == "codex" else b'"sessionID"'
    for line in head.splitlines():
        if line.startswith(b"{") and key in line:
            found = _id_in_event(executor, line)
            if found is not None:
                return found
    return None


def refusal_in(executor: str, output_log: Path) -> str | None:
    """The line in which the CLI said it will not continue the conversation, if it did (it
    says so before anything else)."""
    words = REFUSALS.get(executor)
    if words is None:
        return None
    for line in _head(output_log).decode("utf-8", "replace").splitlines():
        said = one_line(line)  # opencode colours its Error:
        if words.match(said):
            return said[:200]
    return None


def _head(output_log: Path) -> bytes:
    try:
        with open_read(output_log) as log:
            return log.read(HEAD_BYTES)
    except OSError:  # not yet written, or not a regular file
        return b""


def _id_in_event(executor: str, line: bytes) -> str | None:
    try:
        event = parse_json(line)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if executor == "codex":
        started = event.get("type") == "thread.started"
        return valid_id(executor, event.get("thread_id")) if started else None
    return valid_id(executor, event.get("sessionID"))


def _has_pair(argv: Sequence[str], flag: str, value: str) -> bool:
    return any(a == flag and b == value for a, b in itertools.pairwise(argv))
