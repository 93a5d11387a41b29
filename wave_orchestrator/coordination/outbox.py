"""The launcher's merge of sandboxed agents' outboxes into the wave's shared files.

A sandboxed agent reads the wave's coordination log and the lane's questions but cannot write
them (they are bound read-only): its commands append to its own outbox, and at each of its
looks the launcher reads the new complete lines of every outbox of the wave, as hostile
input, and appends what they say under the owner's name. A new item is the owner's (its
``agent``, ``source: agent``, the wave's number, the launcher's times); an update never
changes who posted an item, and of another's item only its status and a note (what `wave
coord resolve --note` writes), never its words; a question is asked by the owner, and its
waiting marks and expiry are taken only for the owner's own questions. A line that is torn
waits for its end; one that is invalid or over the size bound is skipped with a warning.

Each outbox is read from where the last look stopped (its offset and the bytes just before
it, so that an outbox rewritten in place is noticed and read again from its start; a post or
question already merged keeps its id and is not merged twice). How far each outbox was merged
is kept beside the folder, so a restarted launcher goes on from there. A look costs a
``stat`` of the folder and one of each outbox that exists; the folder is listed only when it
changed (a new agent's outbox was made).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError, WaveError
from ..state.events import utc_now
from ..state.fsutil import open_regular, write_json_atomic
from ..state.jsonl import read_jsonl_from
from ..state.layout import Outboxes
from ..state.logs import Logger
from ..state.untrusted import epoch, read_object
from .channel import append_record
from .feedback import MAX_CONTEXT, MAX_QUESTION, FeedbackRequest, FeedbackStore
from .log import RECORD_ID_RE, CoordRecord, check_post

log = Logger(__name__)
TEXT_FIELDS = ("kind", "status", "priority", "summary", "detail")
POST_FIELDS = (*TEXT_FIELDS, "targets", "depends_on", "artifacts")
# What an update may change of another's item: its status only. Its `detail` is its body
# (a person's guidance is shown from it, as theirs, in every inbox): never another's to write.
OTHERS = ("status",)
WAIT_FIELDS = ("wait_pid", "wait_host", "wait_until", "wait_seen")
MAX_READ = 4 << 20  # bytes of one outbox per look: a flooding agent cannot hold the launcher
MAX_LINES = 1000  # lines of one outbox per look: a line may cost a merge, not only a read
MARK_EVERY = 5.0  # seconds: at most one waiting mark per question is written in that time
TAIL = 64  # bytes before the offset remembered, to notice an outbox rewritten in place
WARNINGS_PER_OUTBOX = 20  # then skipped lines are only counted
LISTING_SETTLES = 2.0  # seconds: coarser than any file system's time stamps


class _Reader:
    """One outbox file and how far it was merged."""

    __slots__ = (
        "agent",
        "inode",
        "name",
        "offset",
        "path",
        "questions",
        "seen",
        "skipped",
        "tail",
    )

    def __init__(self, path: Path, agent: str, questions: bool) -> None:
        self.path, self.agent, self.questions = path, agent, questions
        self.name = str(path)  # what a look stats, as text: no conversion each time
        self.inode, self.offset, self.tail, self.skipped = 0, 0, b"", 0
        self.seen: tuple[int, int, int] | None = None  # its inode, size and mtime last looked at


class OutboxMerger:
    """The outboxes of one wave. ``items`` and ``questions`` are what the launcher last read
    of the log and of the questions (the follower keeps them), to tell a new post from an
    update and an agent's own question from another's."""

    def __init__(
        self,
        outboxes: Outboxes,
        wave: int,
        log_path: Path,
        store: FeedbackStore,
        items: Callable[[], Mapping[str, CoordRecord]],
        questions: Callable[[], Mapping[str, FeedbackRequest]],
    ) -> None:
        self.outboxes, self.wave, self.log_path, self.store = outboxes, wave, log_path, store
        self._items, self._questions = items, questions
        self._readers: dict[str, _Reader] = {}
        # questions first: an agent's update of its question's item follows its question
        self._order: list[_Reader] = []
        self._listed: tuple[int, int] | None = None
        self._saved = self._load()
        # What this look appended, which the follower has not read yet: id -> its fields
        self._new_items: dict[str, dict[str, Any]] = {}
        self._new_questions: dict[str, str] = {}  # id -> its asker
        self._marked: dict[str, float] = {}  # question id -> when its last mark was written

    def merge(self) -> bool:
        """Append what the outboxes said since the last look; True when anything was."""
        self._list()
        self._new_items, self._new_questions = {}, {}
        appended = moved = False
        for reader in self._order:
            before = (reader.inode, reader.offset)
            appended |= self._read(reader)
            moved |= (reader.inode, reader.offset) != before
        if moved:
            self._save()
        return appended

    # -- finding and reading the outboxes --------------------------------------------------
    def _list(self) -> None:
        try:
            st = os.stat(self.outboxes.dir)
        except OSError:
            return
        if (st.st_ino, st.st_mtime_ns) == self._listed:
            return
        # A folder changed within the file system's time granularity may change again under
        # the same time: listed again at the next look until its time is past.
        recent = st.st_mtime > time.time() - LISTING_SETTLES
        self._listed = None if recent else (st.st_ino, st.st_mtime_ns)
        with contextlib.suppress(OSError), os.scandir(self.outboxes.dir) as found:
            for entry in found:
                owner = Outboxes.owner(entry.name)
                if owner is None or entry.name in self._readers:
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                reader = _Reader(Path(entry.path), *owner)
                saved = self._saved.get(entry.name)
                if saved is not None:
                    reader.inode, reader.offset, reader.tail = saved
                self._readers[entry.name] = reader
                if reader.questions:
                    self._order.insert(0, reader)
                else:
                    self._order.append(reader)

    def _read(self, reader: _Reader) -> bool:
        """Merge the outbox's new complete lines (at most ``MAX_READ`` bytes of them)."""
        try:
            st = os.lstat(reader.name)
        except OSError:
            return False
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if seen == reader.seen:
            return False  # nothing new: one stat
        reader.seen = seen
        same = st.st_ino == reader.inode and st.st_size >= reader.offset
        if not same or self._tail(reader.path, reader.offset) != reader.tail:
            reader.inode, reader.offset, reader.tail = st.st_ino, 0, b""  # rewritten: read again
        appended, start = False, reader.offset
        sizes: list[int] = []
        lines = read_jsonl_from(reader.path, reader.offset, sizes.append)
        for count, (raw, end) in enumerate(lines, 1):
            reader.offset = end
            why: str | None
            if raw is None:
                size = sizes.pop() if sizes else 0
                why = f"a line of {size} bytes, over the size bound" if size else "not JSON"
            else:
                why = self._one(reader, raw)
            if why is None:
                appended = True
            elif why:
                self._skip(reader, why)
            if end - start >= MAX_READ or count >= MAX_LINES:
                reader.seen = None  # the rest at the next look
                break
        reader.tail = self._tail(reader.path, reader.offset)
        return appended

    @staticmethod
    def _tail(path: Path, offset: int) -> bytes:
        """The bytes just before ``offset`` (b"" at 0, or when they cannot be read)."""
        if not offset:
            return b""
        try:
            fd = open_regular(path)
        except OSError:
            return b""
        try:
            return os.pread(fd, min(TAIL, offset), max(0, offset - TAIL))
        finally:
            os.close(fd)

    def _skip(self, reader: _Reader, why: str) -> None:
        reader.skipped += 1
        if reader.skipped <= WARNINGS_PER_OUTBOX:
            log.warning(
                "coordination: an outbox line was skipped",
                agent=reader.agent,
                reason=why,
                outbox=str(reader.path),
                skipped=reader.skipped,
            )

    def _one(self, reader: _Reader, raw: dict[str, Any]) -> str | None:
        """Merge one line: None when it was appended, '' when it was already merged (a
        rewritten outbox read again), else why it was skipped."""
        try:
            if reader.questions:
                return self._question(reader.agent, raw)
            return self._item(reader, raw)
        except (OSError, WaveError) as exc:
            return f"it could not be merged: {exc}"

    # -- coordination lines ------------------------------------------------------------------
    def _known(self, rid: str) -> dict[str, Any] | None:
        """The item's fields as the log has them (or as this look appended them)."""
        found = self._items().get(rid)
        return found.to_json() if found is not None else self._new_items.get(rid)

    def _item(self, reader: _Reader, raw: dict[str, Any]) -> str | None:
        rid = raw.get("id")
        if not isinstance(rid, str) or not RECORD_ID_RE.fullmatch(rid):
            return "no item id wave makes"
        values = {key: raw[key] for key in POST_FIELDS if key in raw}
        if not all(_typed(key, value) for key, value in values.items()):
            return "a field of the wrong type"
        try:
            values = check_post(values)
        except UsageError as exc:
            return str(exc)
        owner, known, now = reader.agent, self._known(rid), utc_now()
        if known is None:
            if not rid.startswith("c-"):
                return "a new item's id starts with c- (a question is asked with wave feedback)"
            if "kind" not in values or "summary" not in values:
                return "an update of an item the log does not have"
            line = {"id": rid, "wave": self.wave, "agent": owner, "source": "agent"}
            line.update(created_at=now, updated_at=now, status="open", priority="normal")
            line.update(values)
            self._new_items[rid] = line
            append_record(self.log_path, line)
            return None
        poster = (known.get("agent"), known.get("source"))
        if "created_at" in raw:  # a post, not an update: its id is taken
            return "" if poster == (owner, "agent") else "a new post under an id already taken"
        if raw.get("agent", poster[0]) != poster[0] or raw.get("source", poster[1]) != poster[1]:
            return f"an update may not change who posted an item ({poster[0]}'s)"
        if poster != (owner, "agent"):  # another's item: its status, not its words
            changed = sorted(k for k in values if k not in OTHERS and values[k] != known.get(k))
            values = {k: v for k, v in values.items() if k in OTHERS}
            if changed:
                self._skip(reader, f"{poster[0]}'s item keeps its {', '.join(changed)}")
            if not values:
                return ""
        append_record(self.log_path, {"id": rid, "updated_at": now, **values})
        return None

    # -- question lines ----------------------------------------------------------------------
    def _asker(self, rid: str) -> tuple[str, int] | None:
        found = self._questions().get(rid)
        if found is not None:
            return found.agent, found.wave
        asker = self._new_questions.get(rid)
        return (asker, self.wave) if asker is not None else None

    def _question(self, owner: str, raw: dict[str, Any]) -> str | None:
        rid = raw.get("id")
        if not isinstance(rid, str) or not rid.startswith("q-") or not RECORD_ID_RE.fullmatch(rid):
            return "no question id wave makes"
        asked = self._asker(rid)
        if "question" in raw:
            if asked is not None:
                return "" if asked == (owner, self.wave) else "a question under an id already taken"
            return self._ask(owner, rid, raw)
        if asked != (owner, self.wave):
            return "not a question this agent asked in this wave"
        known = self._questions().get(rid)
        if known is not None and known.status != "pending":
            return ""  # answered or expired already: nothing to merge, nothing to say
        if raw.get("status") == "expired" and set(raw) == {"id", "status"}:
            self.store.expire(rid)
            return None
        if not set(raw) - {"id"} or not set(raw) <= {"id", *WAIT_FIELDS}:
            return "only its waiting marks and its expiry: a person answers a question"
        fields: dict[str, Any] = {"wait_pid": None}  # a pid of its own ids names nothing here
        for key in ("wait_until", "wait_seen"):
            if key in raw:
                if raw[key] is not None and epoch(raw[key]) is None:
                    return f"{key} is not a time"
                fields[key] = None if raw[key] is None else epoch(raw[key])
        if "wait_host" in raw:
            host = raw["wait_host"]
            fields["wait_host"] = host[:255] if isinstance(host, str) else None
        now = time.monotonic()
        renewal = fields.get("wait_seen") is not None  # an end of waiting always goes through
        if renewal and now - self._marked.get(rid, -MARK_EVERY) < MARK_EVERY:
            return ""  # a flood of marks: one in MARK_EVERY seconds is all a wait needs
        self._marked[rid] = now
        append_record(self.store.path, {"id": rid, **fields})
        return None

    def _ask(self, owner: str, rid: str, raw: dict[str, Any]) -> str | None:
        question, context = raw.get("question"), raw.get("context", "")
        if not isinstance(question, str) or not isinstance(context, str):
            return "a question or context that is not text"
        question = question.strip()
        if not question or len(question) > MAX_QUESTION or len(context) > MAX_CONTEXT:
            return f"an empty question, or one over its bounds ({MAX_QUESTION}, {MAX_CONTEXT})"
        record = {
            "id": rid,
            "lane": self.store.lane,
            "wave": self.wave,
            "agent": owner,
            "question": question,
            "context": context,
            "status": "pending",
            "response": None,
            "created_at": utc_now(),
        }
        self.store.save(record)
        self._new_questions[rid] = owner
        self._new_items[rid] = {"agent": owner, "source": "agent"}  # its mirror item
        return None

    # -- how far each outbox was merged ------------------------------------------------------
    def _load(self) -> dict[str, tuple[int, int, bytes]]:
        data = read_object(self.outboxes.progress) or {}
        out = {}
        for name, value in data.items():
            if Outboxes.owner(name) is None or not isinstance(value, list) or len(value) != 3:
                continue
            inode, offset, tail = value
            if isinstance(inode, int) and isinstance(offset, int) and isinstance(tail, str):
                with contextlib.suppress(ValueError):
                    out[name] = (inode, max(0, offset), bytes.fromhex(tail))
        return out

    def _save(self) -> None:
        data = {n: [r.inode, r.offset, r.tail.hex()] for n, r in self._readers.items()}
        try:
            write_json_atomic(self.outboxes.progress, data)
        except OSError as exc:  # a restarted launcher reads the outboxes again: ids dedupe
            log.warning("coordination: cannot record how far outboxes were merged", error=str(exc))


def _typed(key: str, value: Any) -> bool:
    """A post's field of the type the command line gives it: text, or a list of texts."""
    if key in TEXT_FIELDS:
        return isinstance(value, str)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
