"""The launcher's side of coordination: keeps a wave's board, shared summary and inboxes current
from its coordination log, and notices questions for a person.

It costs two ``stat`` calls per check while nothing changes; the projections are regenerated
only when the log or the feedback file grew. Projection writes are best effort: a board that
cannot be written never stops a wave.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..closure.gates import AgentResult, GateResult, judge_implementation
from ..coordination.feedback import FeedbackRequest, FeedbackStore, answer_command
from ..coordination.log import LAUNCHER, CoordLog, CoordRecord
from ..coordination.views import (
    InboxOwner,
    board,
    clean,
    inbox,
    inbox_items,
    open_blockers,
    open_requests,
    shared_summary,
)
from ..definitions.model import AgentDef
from ..errors import WaveError
from ..state.events import EventLog, utc_now
from ..state.fsutil import json_text, write_atomic, write_json_atomic
from ..state.layout import StateLayout

NOTIFY_TIMEOUT_SECONDS = 30
NOTIFY_QUEUE = 20  # questions waiting to be notified; more are coalesced into one
BLOCKING_PRIORITIES = ("high", "urgent")


class Coordinator:
    """One lane's coordination while its launcher runs; ``begin`` switches to a new wave."""

    def __init__(
        self,
        layout: StateLayout,
        events: EventLog,
        log: Any,
        *,
        notify: Sequence[str] = (),
        echo: Callable[[str], None] = print,
    ) -> None:
        self.layout = layout
        self.lane = layout.lane
        self.events = events
        self.log = log
        self.notify = tuple(notify)
        self.echo = echo
        self.feedback = FeedbackStore(layout.feedback, layout.lane, layout.coordination_log)
        self.wave = 0
        self.owners: dict[str, tuple[str, ...]] = {}
        self.records: dict[str, CoordRecord] = {}
        self.requests: dict[str, FeedbackRequest] = {}
        self.notifier = Notifier(self.notify, log)
        self._gates: dict[str, list[str]] = {}  # stage -> open gate-blocked items
        self._seen: tuple[object, object] | None = None

    # -- the wave -----------------------------------------------------------------------
    def begin(self, wave: int, owners: Mapping[str, Sequence[str]]) -> None:
        """Start following ``wave``: record who owns what (inboxes need it), draw the board."""
        self.wave, self._gates = wave, {}
        self.owners = {agent: tuple(paths) for agent, paths in owners.items()}
        self._seen = None
        try:
            write_json_atomic(
                self.layout.owners(wave), {a: list(p) for a, p in self.owners.items()}
            )
        except OSError as exc:
            self.log.warning("coordination: cannot record owned paths", error=str(exc))
        self.requests = self.feedback.requests()  # questions asked before this launcher started
        self.tick()

    def archive(self, wave: int, stamp: str) -> None:
        """A new run of a wave that ran before starts with a fresh log: the old one is kept as
        ``wave-<n>.<stamp>.jsonl``, a person's open guidance carries over, and the old run's
        unanswered questions expire (they must not hold this run's retries)."""
        path = self.layout.coordination_log(wave)
        old = CoordLog(path, wave).records()
        for request in self.feedback.pending(wave):
            try:  # one that cannot be expired (no mirror item, say) must not stop the rest
                self.feedback.expire(request.id)
            except (OSError, WaveError) as exc:
                self.log.warning("coordination: cannot expire a question", id=request.id,
                                 error=str(exc))  # fmt: skip
        try:
            if path.exists():
                path.rename(path.with_name(f"wave-{wave}.{stamp}.jsonl"))
            new = CoordLog(path, wave)
            for item in old.values():
                if item.kind == "guidance" and item.source == "human" and item.is_open:
                    new.post(
                        kind="guidance",
                        summary=item.summary,
                        detail=item.detail,
                        agent=item.agent,
                        source="human",
                        record_id=item.id,
                        targets=list(item.targets),
                    )
        except (OSError, WaveError) as exc:
            self.log.warning("coordination: cannot archive the old log", error=str(exc))

    @property
    def coord_log(self) -> CoordLog:
        return CoordLog(self.layout.coordination_log(self.wave), self.wave)

    def _stamp(self) -> tuple[object, object]:
        def one(path: Any) -> object:
            try:
                st = path.stat()
            except OSError:
                return None
            return (st.st_size, st.st_mtime_ns, st.st_ino)

        return one(self.layout.coordination_log(self.wave)), one(self.layout.feedback)

    def tick(self) -> bool:
        """Regenerate the projections and announce questions if anything was posted; cheap
        otherwise. True when something changed (the dashboard should be redrawn)."""
        if not self.wave:
            return False
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        self._seen = stamp
        self.records = self.coord_log.records()
        self._follow_feedback()
        self._write_projections()
        return True

    # -- questions to a person ----------------------------------------------------------
    def _follow_feedback(self) -> None:
        current = self.feedback.requests()
        for rid, request in current.items():
            before = self.requests.get(rid)
            if request.wave != self.wave:
                continue
            if before is None and request.status == "pending":
                self._announce(request)
            elif before is not None and before.status == "pending" and request.status == "answered":
                operator = request.response.operator if request.response else None
                self.events.emit(
                    "human_feedback_answered", self.wave, request.agent, id=rid, operator=operator
                )
                self.log.info(f"question {rid} of {request.agent} answered", agent=request.agent)
        self.requests = current

    def _announce(self, request: FeedbackRequest) -> None:
        self.events.emit(
            "human_feedback_requested",
            self.wave,
            request.agent,
            id=request.id,
            question=request.question[:300],
        )
        asked = json.dumps(clean(request.question)[:200], ensure_ascii=False)  # its words, quoted
        self.echo(
            f"wave: {request.agent} asks: {asked}\n"
            f"      answer with: {answer_command(request.id, self.lane)}"
        )
        if self.notify:
            self.notifier.send(request.to_json())

    def waiting_human(self) -> frozenset[str]:
        """Agents of this wave waiting for a person's answer right now (`ask --wait` alive
        and within its timeout); an agent that asked and went on working is not one."""
        now, host = time.time(), os.uname().nodename
        return frozenset(r.agent for r in self.pending() if r.waited_on(now, host))

    def pending(self) -> list[FeedbackRequest]:
        return [r for r in self.requests.values() if r.wave == self.wave and r.status == "pending"]

    # -- what agents and gates read -------------------------------------------------------
    def blocking(self) -> list[CoordRecord]:
        """Open blockers of priority high or urgent: they fail the implementation gate."""
        self.tick()
        return [
            b for b in open_blockers(self.records.values()) if b.priority in BLOCKING_PRIORITIES
        ]

    def judge_implementation(
        self, agents: Sequence[AgentDef], results: Sequence[AgentResult]
    ) -> GateResult:
        """The implementation gate, then ``open-blocker`` for each open high/urgent blocker,
        naming the agent that posted it (or the one it targets) so a retry reruns it."""
        gate = judge_implementation(results)
        self.add_blockers(gate, [a.id for a in agents])
        return gate

    def add_blockers(self, gate: GateResult, agents: Sequence[str]) -> None:
        for b in self.blocking():
            named = (
                b.agent if b.agent in agents else next((t for t in b.targets if t in agents), None)
            )
            gate.fail(
                "open-blocker", f"{b.id} ({b.priority}, from {b.agent}): {clean(b.summary)}", named
            )

    def wait_for_answers(
        self, stop: threading.Event, timeout_seconds: float
    ) -> FeedbackRequest | None:
        """Hold a retry while a question of this wave is pending: None once every question is
        answered (or the launcher is stopped), else the question left unanswered at the timeout."""
        deadline = time.monotonic() + timeout_seconds
        while not stop.is_set():
            self.tick()
            pending = self.pending()
            if not pending:
                return None
            if time.monotonic() >= deadline:
                return pending[0]
            stop.wait(0.2)
        return None

    def hold_retry(self, stop: threading.Event, minutes: float) -> str:
        """Wait while a question of this wave is pending; '' once answered, else why the wave is
        blocked (no answer within ``feedback.timeout_minutes``)."""
        self.tick()  # a question asked just before the agent exited
        if not self.pending():
            return ""
        self.log.info("the retry waits for an answer", questions=len(self.pending()))
        left = self.wait_for_answers(stop, minutes * 60)
        if left is None:
            return ""
        return (
            f"blocked: question {left.id} from {left.agent} ({clean(left.question)[:200]}) "
            f"got no answer within {minutes:g} minute(s)"
        )

    def gate_failed(self, failure: Mapping[str, str | None]) -> None:
        """A failed gate goes into the coordination log as a ``gate-blocked`` item (gate,
        agent, reason, what to do), so the board and every agent's inbox show it; the next
        pass of that gate resolves it. Best effort: the gate's verdict stands either way."""
        stage = str(failure.get("stage") or "?")
        named = failure.get("agent")
        head = f"{stage} gate failed: {failure.get('status') or '?'}"
        detail = (failure.get("detail") or "")[:3000]
        try:
            rid = self.coord_log.post(
                kind="gate-blocked",
                summary=head + (f" ({named})" if named else ""),
                detail=f"{detail}\nwhat to do: {failure.get('action') or '-'}",
                agent=LAUNCHER,
                source="launcher",
                priority="high",
                targets=[named] if named and named in self.owners else [],
            )
        except (OSError, WaveError) as exc:
            self.log.warning("coordination: cannot record the failed gate", error=str(exc))
            return
        self._gates.setdefault(stage, []).append(rid)

    def gate_passed(self, stage: str, attempt: int) -> None:
        for rid in self._gates.pop(stage, []):
            note = f"the {stage} gate passed on attempt {attempt}"
            try:
                self.coord_log.update(rid, status="resolved", detail=note)
            except (OSError, WaveError) as exc:
                self.log.warning("coordination: cannot resolve a gate item", error=str(exc))

    def open_items(self) -> dict[str, Any]:
        """What `wave status` and the dashboard show while the wave runs: open blockers and
        requests, questions waiting for a person, and where the board is."""
        items = self.records.values()
        asked = sorted(self.pending(), key=lambda r: r.created_at)[:10]
        return {
            "board": str(self.layout.board(self.wave)),
            "blockers": [_brief(r) for r in open_blockers(items)][:10],
            "requests": [_brief(r) for r in open_requests(items) if r.kind != "human-feedback"][
                :10
            ],  # those are the questions
            "questions": [
                {
                    "id": q.id,
                    "agent": q.agent,
                    "question": clean(q.question)[:300],
                    "created_at": q.created_at,
                }
                for q in asked
            ],
        }

    def prompt_context(self, agent_id: str) -> str:
        """The agent's inbox and the shared summary, for a prompt; '' when there is nothing."""
        self.tick()
        owner = InboxOwner(agent_id, self.owners.get(agent_id, ()))
        parts = []
        if inbox_items(owner, self.records):
            parts.append(inbox(owner, self.records))
        summary = shared_summary(self.records)
        if summary:
            parts.append("Shared summary of the wave:\n" + summary)
        return "\n\n".join(parts)

    def _write_projections(self) -> None:
        try:
            write_atomic(
                self.layout.board(self.wave),
                board(self.lane, self.wave, self.records, utc_now()) + "\n",
            )
            write_atomic(self.layout.shared_summary(self.wave), shared_summary(self.records) + "\n")
            for agent, owns in self.owners.items():
                text = inbox(InboxOwner(agent, owns), self.records)
                write_atomic(self.layout.inbox(self.wave, agent), text + "\n")
        except OSError as exc:
            self.log.warning("coordination: cannot write the board", error=str(exc))


def _brief(record: CoordRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "kind": record.kind,
        "agent": record.agent,
        "priority": record.priority,
        "summary": clean(record.summary)[:120],
    }


class Notifier:
    """The lane's ``notify.command``, run for one question at a time on one worker thread,
    with the request as JSON on stdin. At most ``NOTIFY_QUEUE`` wait; past that they are
    counted and said in one ``{"coalesced": N, ...}`` notification instead. A notifier that
    fails, hangs (ended at ``NOTIFY_TIMEOUT_SECONDS``) or cannot start is only logged: an
    agent that asks a thousand questions costs one thread and one process at a time."""

    def __init__(self, command: Sequence[str], log: Any) -> None:
        self.command = tuple(command)
        self.log = log
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue(NOTIFY_QUEUE)
        self.coalesced = 0
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def send(self, payload: dict[str, Any]) -> None:
        with self._lock:  # the worker decides to end under this lock too: nothing is stranded
            try:
                self.queue.put_nowait(payload)
            except queue.Full:
                self.coalesced += 1
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="wave-notify",
                                                daemon=True)  # fmt: skip
                try:
                    self._worker.start()
                except RuntimeError as exc:  # no thread to be had (a pids limit): logged
                    self._worker = None
                    self.log.warning("notify command not run", error=str(exc))

    def _drain(self) -> None:
        while True:
            try:
                payload = self.queue.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if self.coalesced:
                        payload, self.coalesced = {"coalesced": self.coalesced}, 0
                    elif self.queue.empty():
                        self._worker = None
                        return
                    else:
                        continue
            self._run(payload)

    def _run(self, payload: dict[str, Any]) -> None:
        try:
            done = subprocess.run(
                self.command,
                input=json_text(payload).encode("utf-8"),  # lone surrogates escaped
                capture_output=True,
                timeout=NOTIFY_TIMEOUT_SECONDS,
                check=False,
            )
            if done.returncode != 0:
                self.log.warning("notify command failed", code=done.returncode)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self.log.warning("notify command failed", error=str(exc))
