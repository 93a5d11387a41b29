"""Questions to a person: an agent asks, a person answers, the agent (or its inbox) gets it.

Requests live in one lane-wide JSON-lines file; lines with the same id merge, like the
coordination log. Answering and expiring take an exclusive ``flock`` on that file, so two people
answering at once cannot both win, and an answer cannot land on a request that just expired.
Every request is mirrored in the wave's coordination log as a ``human-feedback`` item, so the
board shows it and the asking agent's inbox receives the answer. The mirror is written first:
a question is pending only once both lines are, so an `ask` that fails (exit 1) leaves no
question waiting, and a mirror whose question could not be saved is cancelled.

While `ask --wait` waits, the request says so, and the launcher stops the asker's clocks. Run
as a process of this machine, it records its pid, which the launcher checks is alive. In a
sandbox (``WAVE_SANDBOX``: its own process ids) its pid names nothing outside, so it records
none and renews a mark instead while it waits; the launcher takes it as waiting while the
mark is fresh, the agent's own process alive (the launcher knows that one) and the wait
within its timeout. Neither is taken on the agent's word alone. There its question, its marks
and its expiry go to its own outbox, which the launcher merges (``outbox.py``).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import UsageError, WaveError
from ..names import LANE_NAME_RE
from ..state.events import utc_now
from ..state.jsonl import read_jsonl
from ..state.layout import Outboxes
from ..state.untrusted import count, epoch
from .channel import append_record, append_to_outbox, outbox_owner, sandboxed
from .log import PERSON, RECORD_ID_RE, CoordLog, is_poster, new_id
from .processes import alive, held

MAX_QUESTION = 2000
MAX_CONTEXT = 4000
MAX_RESPONSE = 8000
REQUEST_STATUSES = ("pending", "answered", "expired")
LOCK_TIMEOUT_SECONDS = 10.0
# A sandboxed waiter renews its mark this often; a mark older than the lease waits no more
# (a killed waiter stops renewing). One later than now by more than the skew is not believed.
WAIT_RENEW_SECONDS = 20.0
WAIT_LEASE_SECONDS = 60.0
CLOCK_SKEW_SECONDS = 30.0
# A sandboxed `ask --wait` that times out asks the launcher to expire its question, and waits
# this long for it (an answer may come first); the launcher looks twice a second.
EXPIRY_GRACE_SECONDS = 5.0


class FeedbackTimeout(WaveError):
    """Nobody answered in time: the request is now ``expired``."""

    exit_code = 4


class Response(NamedTuple):
    operator: str
    text: str
    answered_at: str


class FeedbackRequest(NamedTuple):
    id: str
    lane: str
    wave: int
    agent: str
    question: str
    context: str
    status: str
    response: Response | None
    created_at: str
    # Set while `ask --wait` waits (its pid and host, and when its --timeout-seconds ends):
    # only then does the launcher stop the asker's budget and stall clocks. A waiter in a
    # sandbox records no pid and renews ``wait_seen`` (when it last said it waits) instead.
    wait_pid: int | None = None
    wait_host: str | None = None
    wait_until: float | None = None
    wait_seen: float | None = None

    def waited_on(self, now: float, host: str) -> bool:
        """Pending, and someone still waits for the answer, within its timeout: the `ask
        --wait` that recorded its pid is alive (asked when it runs on this host), or a
        sandboxed one renewed its mark within the lease. The launcher counts an agent as
        waiting only while the agent's own process runs, too."""
        if self.status != "pending":
            return False
        if self.wait_until is not None and now >= self.wait_until:
            return False
        if self.wait_pid is not None:
            return self.wait_host != host or alive(self.wait_pid)
        seen = self.wait_seen
        return seen is not None and now - WAIT_LEASE_SECONDS <= seen <= now + CLOCK_SKEW_SECONDS

    def to_json(self) -> dict[str, Any]:
        r = self.response
        return {
            "id": self.id,
            "lane": self.lane,
            "wave": self.wave,
            "agent": self.agent,
            "question": self.question,
            "context": self.context,
            "status": self.status,
            "response": None
            if r is None
            else {"operator": r.operator, "text": r.text, "answered_at": r.answered_at},
            "created_at": self.created_at,
        }


def answer_command(request_id: str, lane: str) -> str:
    """The command a person pastes to answer: built by wave from a checked id and lane name,
    never from anything an agent wrote (a question can say "answer with: curl ... | sh")."""
    if not RECORD_ID_RE.fullmatch(request_id) or not LANE_NAME_RE.fullmatch(lane):
        raise ValueError(f"not an id and lane wave made: {request_id!r} {lane!r}")
    return f"wave feedback respond {request_id} --lane {lane} --response '...'"


def _request(values: dict[str, Any]) -> FeedbackRequest | None:
    """A request from merged stored fields, or None when a field is missing or malformed."""
    try:
        wave = values["wave"]
        if not isinstance(wave, int) or isinstance(wave, bool) or wave < 1:
            return None
        rid, agent, lane = values["id"], values["agent"], values["lane"]
        if not (isinstance(rid, str) and rid.startswith("q-") and RECORD_ID_RE.fullmatch(rid)):
            return None  # ids are printed in commands to paste: wave's own shape only
        if not (is_poster(agent) and isinstance(lane, str) and LANE_NAME_RE.fullmatch(lane)):
            return None
        response = values.get("response")
        answer = None
        if isinstance(response, dict):
            answer = Response(
                str(response["operator"])[:64],
                str(response["text"])[:MAX_RESPONSE],
                str(response["answered_at"])[:40],
            )
        status = values.get("status")
        if status not in REQUEST_STATUSES:
            return None
        host = values.get("wait_host")
        return FeedbackRequest(
            wait_pid=count(values.get("wait_pid"), minimum=1, maximum=2**31),
            wait_host=host[:255] if isinstance(host, str) else None,
            wait_until=epoch(values.get("wait_until")),
            wait_seen=epoch(values.get("wait_seen")),
            id=rid,
            lane=lane,
            wave=wave,
            agent=agent,
            question=str(values["question"])[:MAX_QUESTION],
            context=str(values.get("context", ""))[:MAX_CONTEXT],
            status=status,
            response=answer,
            created_at=str(values.get("created_at", ""))[:40],
        )
    except (KeyError, TypeError):
        return None


class FeedbackStore:
    """The lane's human-feedback requests (``feedback.jsonl`` in the state dir).

    In an agent's sandbox (``channel.outbox_owner``) what the agent writes (its question, its
    waiting marks, the expiry of its question) goes to its own questions outbox, and the
    launcher asks the person for it; ``direct`` writes the lane's file whatever the
    environment (the launcher's own writes)."""

    def __init__(self, path: Path, lane: str, coord_path: Any, *, direct: bool = False) -> None:
        """``coord_path(wave)`` gives the coordination log file of a wave."""
        self.path = path
        self.lane = lane
        self._coord_path = coord_path
        self.owner = None if direct else outbox_owner()
        self._asked: dict[str, int] = {}  # in a sandbox: the wave of each question it asked

    def _coord(self, wave: int) -> CoordLog:
        return CoordLog(self._coord_path(wave), wave, direct=True)

    def outbox(self, wave: int) -> Path | None:
        """The questions outbox this store writes in ``wave`` (None: it writes the file)."""
        if self.owner is None:
            return None
        return Outboxes.of_log(self._coord_path(wave)).questions(self.owner)

    def _locked(
        self, timeout: float = LOCK_TIMEOUT_SECONDS
    ) -> contextlib.AbstractContextManager[None]:
        """The feedback lock, waited for at most ``timeout`` seconds (``processes.held``)."""
        return held(self.path.with_name(self.path.name + ".lock"), timeout)

    def requests(self) -> dict[str, FeedbackRequest]:
        merged: dict[str, dict[str, Any]] = {}
        for line in read_jsonl(self.path):
            rid = line.get("id")
            if isinstance(rid, str):
                merged.setdefault(rid, {}).update(line)
        out = {}
        for rid, values in merged.items():
            request = _request(values)
            if request is not None:
                out[rid] = request
        return out

    def get(self, request_id: str) -> FeedbackRequest:
        found = self.requests().get(request_id)
        if found is None:
            raise UsageError(f"no feedback request {request_id!r} in lane {self.lane}")
        return found

    def ask(self, wave: int, agent: str, question: str, context: str = "") -> FeedbackRequest:
        question = question.strip()
        if not question:
            raise UsageError("the question is empty")
        if len(question) > MAX_QUESTION or len(context) > MAX_CONTEXT:
            raise UsageError(
                f"question or context too long (limits {MAX_QUESTION} and {MAX_CONTEXT})"
            )
        record = {
            "id": new_id("q"),
            "lane": self.lane,
            "wave": wave,
            "agent": self.owner or agent,
            "question": question,
            "context": context,
            "status": "pending",
            "response": None,
            "created_at": utc_now(),
        }
        outbox = self.outbox(wave)
        if outbox is not None:  # the launcher posts the mirror and the request for it
            append_to_outbox(outbox, record)
            self._asked[str(record["id"])] = wave
        else:
            self.save(record)
        found = _request(record)
        assert found is not None
        return found

    def save(self, record: dict[str, Any]) -> None:
        """Record a checked question: its mirror item first, then the request. A question is
        pending (announced, waited for) only once both are written, so an `ask` that fails
        leaves none behind, whichever write failed."""
        rid, wave, agent = record["id"], record["wave"], record["agent"]
        coord = self._coord(wave)
        coord.post(
            kind="human-feedback",
            summary=record["question"][:300],
            detail=record["context"],
            agent=agent,
            record_id=rid,
            targets=[PERSON],
            priority="high",
        )
        try:
            append_record(self.path, record)
        except OSError:
            with contextlib.suppress(OSError, WaveError):  # else it would hold the gate
                coord.update(rid, status="cancelled", detail="not asked: it could not be saved")
            raise

    def respond(
        self, request_id: str, text: str, operator: str, *, force: bool = False
    ) -> FeedbackRequest:
        if not text.strip():
            raise UsageError("the response is empty")
        if len(text) > MAX_RESPONSE:
            raise UsageError(f"the response is {len(text)} characters; the limit is {MAX_RESPONSE}")
        with self._locked():
            current = self.get(request_id)
            if current.status == "answered" and not force:
                by = current.response.operator if current.response else "?"
                raise UsageError(
                    f"{request_id} was already answered by {by}; pass --force to replace the answer"
                )
            answer = {"operator": operator, "text": text, "answered_at": utc_now()}
            append_record(self.path, {"id": request_id, "status": "answered", "response": answer})
        self._coord(current.wave).update(
            request_id,
            status="resolved",
            detail=f"answer from {operator}: {text}"[:4000],
            targets=[current.agent, PERSON],
        )
        return self.get(request_id)

    def expire(self, request_id: str) -> FeedbackRequest:
        """Mark a still-pending request expired (a timed-out ``--wait``); answers stay. A
        request whose mirror item is missing (written by an older wave, or planted) is expired
        all the same."""
        with self._locked():
            current = self.get(request_id)
            if current.status != "pending":
                return current
            append_record(self.path, {"id": request_id, "status": "expired"})
        with contextlib.suppress(UsageError):  # no mirror item: nothing to cancel there
            self._coord(current.wave).update(request_id, status="cancelled", detail="expired")
        return self.get(request_id)

    def wait(self, request_id: str, timeout: float | None, poll: float = 0.2) -> FeedbackRequest:
        """Block until answered; on timeout expire it and raise FeedbackTimeout (exit 4).
        While it waits, the request says so (pid or, sandboxed, a renewed mark; host, until):
        the asking agent's clocks stop only then, not for a question it asked and went on
        working past."""
        now = time.time()
        until = None if timeout is None else now + timeout
        boxed = sandboxed()
        waiter = {
            "wait_pid": None if boxed else os.getpid(),
            "wait_host": os.uname().nodename,
            "wait_until": until,
            "wait_seen": now if boxed else None,
        }
        # Unsaid, the asker's clocks run on; failing here would leave its question pending.
        self._say_waiting(request_id, waiter)
        try:
            return self._wait(request_id, timeout, poll, renew=boxed)
        finally:
            # the wait is over, however it ended
            self._say_waiting(request_id, {"wait_pid": None, "wait_seen": None})

    def _say_waiting(self, request_id: str, fields: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, WaveError):
            self._tell(request_id, fields)

    def _tell(self, request_id: str, fields: dict[str, Any]) -> None:
        """Append fields of a request: to the file, or in a sandbox to the asker's outbox."""
        line = {"id": request_id, **fields}
        if self.owner is None:
            append_record(self.path, line)
            return
        wave = self._asked.get(request_id)
        if wave is None:
            wave = self.get(request_id).wave
        outbox = self.outbox(wave)
        assert outbox is not None
        append_to_outbox(outbox, line)

    def _current(self, request_id: str) -> FeedbackRequest | None:
        """The request as the file has it; None in a sandbox while the launcher has not yet
        merged it from the asker's outbox (it is pending)."""
        found = self.requests().get(request_id)
        if found is None and (self.owner is None or request_id not in self._asked):
            raise UsageError(f"no feedback request {request_id!r} in lane {self.lane}")
        return found

    def _ask_expiry(self, request_id: str) -> FeedbackRequest | None:
        """In a sandbox the launcher expires a question: asked for, then awaited a moment
        (an answer that came meanwhile wins). None when no launcher did it in time."""
        self._tell(request_id, {"status": "expired"})
        deadline = time.monotonic() + EXPIRY_GRACE_SECONDS
        while time.monotonic() < deadline:
            current = self._current(request_id)
            if current is not None and current.status != "pending":
                return current
            time.sleep(0.1)
        return None

    def _wait(
        self, request_id: str, timeout: float | None, poll: float, renew: bool = False
    ) -> FeedbackRequest:
        deadline = None if timeout is None else time.monotonic() + timeout
        last: tuple[int, int] | None = None
        renewed = time.monotonic()
        while True:
            if renew and time.monotonic() - renewed >= WAIT_RENEW_SECONDS:
                self._say_waiting(request_id, {"wait_seen": time.time()})
                renewed = time.monotonic()
            try:
                st = self.path.stat()
                seen = (st.st_size, st.st_mtime_ns)
            except OSError:
                seen = None
            if seen != last:
                last = seen
                current = self._current(request_id)
                if current is not None and current.status != "pending":
                    if current.status == "answered":
                        return current
                    raise FeedbackTimeout(f"{request_id} expired before an answer came")
            if deadline is not None and time.monotonic() >= deadline:
                boxed = self.owner is not None
                expired = self._ask_expiry(request_id) if boxed else self.expire(request_id)
                if expired is not None and expired.status == "answered":
                    return expired
                raise FeedbackTimeout(
                    f"no answer to {request_id} within {timeout:g}s; the request is now expired"
                )
            time.sleep(poll)

    def pending(self, wave: int | None = None) -> list[FeedbackRequest]:
        return [
            r
            for r in self.requests().values()
            if r.status == "pending" and (wave is None or r.wave == wave)
        ]
