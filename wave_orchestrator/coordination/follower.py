"""The launcher's side of coordination: keeps a wave's board, shared summary and inboxes current
from its coordination log, notices questions for a person, and holds retries and the
integration gate on what the log says.

It costs two ``stat`` calls per check while nothing changes, and one more for the outbox
folder and one for each outbox of a sandboxed agent (outbox.py merges what they say); the
projections (projections.py) are regenerated only when the log or the feedback file grew.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..closure.gates import GateResult
from ..errors import WaveError
from ..sanitize import one_line as clean
from ..state.events import EventLog, utc_now
from ..state.fsutil import write_json_atomic
from ..state.layout import StateLayout
from ..state.logs import Logger
from .feedback import FeedbackRequest, FeedbackStore, answer_command
from .log import LAUNCHER, CoordLog, CoordRecord, LogFollower
from .outbox import OutboxMerger
from .projections import Projections
from .views import desk_waits, integration_barrier, newest_first, open_blockers

log = Logger(__name__)
BLOCKING_PRIORITIES = ("high", "urgent")


class Coordinator:
    """One lane's coordination while its launcher runs; ``begin`` switches to a new wave.
    ``tell`` reaches a person through the lane's notification sinks, which the launcher owns;
    ``echo`` prints a question on the launcher's terminal."""

    def __init__(
        self,
        layout: StateLayout,
        events: EventLog,
        tell: Callable[[dict[str, Any]], None],
        *,
        echo: Callable[[str], None] = print,
    ) -> None:
        self.layout = layout
        self.lane = layout.lane
        self.events = events
        self.tell = tell
        self.echo = echo
        self.feedback = FeedbackStore(
            layout.feedback, layout.lane, layout.coordination_log, direct=True
        )
        self.wave = 0
        self.owners: dict[str, tuple[str, ...]] = {}
        self.requests: dict[str, FeedbackRequest] = {}
        self._gate_items: dict[str, list[str]] = {}  # stage -> open gate-blocked items
        self._seen: tuple[object, object] | None = None
        self.log_follower = LogFollower(layout.coordination_log(0), 0)
        self.projections = Projections(layout, 0, {})
        self.outboxes: OutboxMerger | None = None

    # -- the wave -----------------------------------------------------------------------
    def begin(self, wave: int, owners: Mapping[str, Sequence[str]]) -> None:
        """Start following ``wave``: record who owns what (inboxes need it), draw the board."""
        self.wave, self._gate_items = wave, {}
        self.owners = {agent: tuple(paths) for agent, paths in owners.items()}
        self.projections = Projections(self.layout, wave, self.owners)
        self._seen = None
        self.log_follower = LogFollower(self.layout.coordination_log(wave), wave, self._skipped)
        self.outboxes = OutboxMerger(
            self.layout.outboxes(wave),
            wave,
            self.layout.coordination_log(wave),
            self.feedback,
            lambda: self.records,
            lambda: self.requests,
        )
        try:
            write_json_atomic(
                self.layout.owners(wave), {a: list(p) for a, p in self.owners.items()}
            )
        except OSError as exc:
            log.warning("coordination: cannot record owned paths", error=str(exc))
        self.requests = self.feedback.requests()  # questions asked before this launcher started
        self.tick()

    def archive(self, wave: int, stamp: str) -> None:
        """A new run of a wave that ran before starts with a fresh log: the old one is kept as
        ``wave-<n>.<stamp>.jsonl``, a person's open guidance carries over, and the old run's
        unanswered questions expire (they must not hold this run's retries)."""
        path = self.layout.coordination_log(wave)
        old = CoordLog(path, wave, direct=True).records()
        for request in self.feedback.pending(wave):
            try:  # one that cannot be expired (no mirror item, say) must not stop the rest
                self.feedback.expire(request.id)
            except (OSError, WaveError) as exc:
                log.warning("coordination: cannot expire a question", id=request.id, error=str(exc))
        try:
            if path.exists():
                path.rename(path.with_name(f"wave-{wave}.{stamp}.jsonl"))
            self.layout.outboxes(wave).set_aside(stamp)  # merged: its agents' old outboxes
            new = CoordLog(path, wave, direct=True)
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
            log.warning("coordination: cannot archive the old log", error=str(exc))

    @property
    def records(self) -> dict[str, CoordRecord]:
        """The wave's items as the follower last read them."""
        return self.log_follower.records

    @property
    def coord_log(self) -> CoordLog:
        return CoordLog(self.layout.coordination_log(self.wave), self.wave, direct=True)

    def _stamp(self) -> tuple[object, object]:
        def one(path: Any) -> object:
            try:
                st = path.stat()
            except OSError:
                return None
            return (st.st_size, st.st_mtime_ns, st.st_ino)

        return one(self.layout.coordination_log(self.wave)), one(self.layout.feedback)

    def tick(self) -> bool:
        """Read what was posted since the last look, merge what sandboxed agents wrote to
        their outboxes, update the projections it touches and announce new questions; a few
        ``stat`` calls when nothing changed. True when something changed (the dashboard
        should be redrawn)."""
        if not self.wave:
            return False
        changed = self._look()
        if self.outboxes is not None and self.outboxes.merge():
            changed = self._look() or changed
        return changed

    def _look(self) -> bool:
        stamp, before = self._stamp(), self._seen
        if stamp == before:
            self.projections.flush(self.records)
            return False
        self._seen = stamp
        if before is None or before[0] != stamp[0]:
            changed = self.log_follower.refresh()
            self.projections.note(self.records, None if before is None else changed)
            self.projections.flush(self.records, now=before is None)
        if before is None or before[1] != stamp[1]:
            self._follow_feedback()
        return True

    def flush(self) -> None:
        """Read what is new and draw what is not drawn yet, now (the pool's agents are done)."""
        self.tick()
        self.projections.flush(self.records, now=True)

    def tell_person(self, payload: dict[str, Any]) -> None:
        """What a person who left the fleet alone should hear of (a usage limit, the spend
        limit, a wave that ended): the lane's sinks get it, one JSON object."""
        self.tell(payload)

    def _skipped(self, size: int) -> None:
        log.warning(
            "coordination: a line over 1 MiB was skipped",
            bytes=size,
            log=str(self.layout.coordination_log(self.wave)),
        )

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
                log.info(f"question {rid} of {request.agent} answered", agent=request.agent)
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
        command = answer_command(request.id, self.lane)
        self.tell(
            {
                **request.to_json(),
                "kind": "question",
                "reason": request.question,
                "command": command,
                "at": utc_now(),
            }
        )

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
            b
            for b in open_blockers(newest_first(self.records.values()))
            if b.priority in BLOCKING_PRIORITIES
        ]

    def hold_integration(self, gate: GateResult) -> None:
        """The integration gate is a barrier over the log too: open high/urgent requests,
        clashing and unresolved claims fail it, each naming its agent (a retry reruns it)."""
        self.tick()
        for code, said, agent in integration_barrier(newest_first(self.records.values())):
            gate.fail(code, clean(said), agent if agent in self.owners else None)

    def resolve_desk_wait(self, path: str, waiter: str) -> None:
        """The waiter's "waits for" request, once the desk handed it the file."""
        for rid in desk_waits(self.records.values(), path, waiter):
            with contextlib.suppress(OSError, WaveError):
                self.coord_log.update(rid, status="resolved", detail=f"{path} was handed over")

    def add_blockers(self, gate: GateResult, agents: Sequence[str]) -> None:
        """``open-blocker`` for each open high/urgent blocker, naming the agent that posted it
        (or the one of ``agents`` it targets) so a retry reruns it."""
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
        log.info("the retry waits for an answer", questions=len(self.pending()))
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
            log.warning("coordination: cannot record the failed gate", error=str(exc))
            return
        self._gate_items.setdefault(stage, []).append(rid)

    def gate_passed(self, stage: str, attempt: int) -> None:
        for rid in self._gate_items.pop(stage, []):
            note = f"the {stage} gate passed on attempt {attempt}"
            try:
                self.coord_log.update(rid, status="resolved", detail=note)
            except (OSError, WaveError) as exc:
                log.warning("coordination: cannot resolve a gate item", error=str(exc))

    def open_items(self) -> dict[str, Any]:
        """What `wave status` and the dashboard show while the wave runs: open blockers and
        requests (as of the last projections: the dashboard asks on every redraw), questions
        waiting for a person, and where the board is."""
        asked = sorted(self.pending(), key=lambda r: r.created_at)[:10]
        questions = [
            {
                "id": q.id,
                "agent": q.agent,
                "question": clean(q.question)[:300],
                "created_at": q.created_at,
            }
            for q in asked
        ]
        return {
            "board": str(self.layout.board(self.wave)),
            **self.projections.open,
            "questions": questions,
        }

    def prompt_context(self, agent_id: str) -> str:
        """The agent's inbox and the shared summary, for a prompt; '' when there is nothing.
        The inbox from the index (the items that may concern the agent, not the whole log),
        the summary as the last projections made it: launching 200 agents does not go
        over 20,000 items 200 times."""
        self.tick()
        has_items, text = self.projections.inbox(self.records, agent_id)  # its items only
        parts = [text] if has_items else []
        if summary := self.projections.summary:
            parts.append("Shared summary of the wave:\n" + summary)
        return "\n\n".join(parts)
