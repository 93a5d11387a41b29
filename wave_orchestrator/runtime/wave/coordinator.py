"""The launcher's side of coordination: keeps a wave's board, shared summary and inboxes current
from its coordination log, and notices questions for a person.

It costs two ``stat`` calls per check while nothing changes; the projections are regenerated
only when the log or the feedback file grew. Projection writes are best effort: a board that
cannot be written never stops a wave.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...closure.gates import AgentResult, GateResult, judge_implementation
from ...coordination.feedback import FeedbackRequest, FeedbackStore, answer_command
from ...coordination.log import LAUNCHER, CoordLog, CoordRecord, LogFollower
from ...coordination.views import (
    InboxOwner,
    board,
    clean,
    desk_waits,
    for_everyone,
    inbox,
    inbox_items,
    integration_barrier,
    newest_first,
    open_blockers,
    open_requests,
    shared_summary,
)
from ...definitions.model import AgentDef, NotifySettings
from ...errors import WaveError
from ...notify.sinks import Teller
from ...state.events import EventLog, utc_now
from ...state.fsutil import write_atomic, write_json_atomic
from ...state.layout import StateLayout

PROJECTION_SECONDS = 1.0  # board, summary and inboxes redrawn at most this often
BLOCKING_PRIORITIES = ("high", "urgent")


class Coordinator:
    """One lane's coordination while its launcher runs; ``begin`` switches to a new wave."""

    def __init__(
        self,
        layout: StateLayout,
        events: EventLog,
        log: Any,
        *,
        notify: NotifySettings | None = None,
        bell: Any = None,
        echo: Callable[[str], None] = print,
    ) -> None:
        self.layout = layout
        self.lane = layout.lane
        self.events = events
        self.log = log
        self.echo = echo
        self.feedback = FeedbackStore(layout.feedback, layout.lane, layout.coordination_log)
        self.wave = 0
        self.owners: dict[str, tuple[str, ...]] = {}
        self.requests: dict[str, FeedbackRequest] = {}
        self.teller = Teller(notify or NotifySettings(), log, bell)  # the lane's sinks
        self._gates: dict[str, list[str]] = {}  # stage -> open gate-blocked items
        self._seen: tuple[object, object] | None = None
        self.follow = LogFollower(layout.coordination_log(0), 0)
        self._index: dict[str, set[str]] = {}  # agent -> ids of items that may concern it
        self._everyone: set[str] = set()  # ids of items for every agent
        self._summary = ""
        self._open: dict[str, Any] = {"blockers": [], "requests": []}
        self._affected: set[str] | None = set()  # inboxes to redraw (None: every one)
        self._stale = False  # projections to write
        self._next_projection = 0.0
        self._owned: dict[str, set[str]] = {}  # an owned path -> the agents that own it

    # -- the wave -----------------------------------------------------------------------
    def begin(self, wave: int, owners: Mapping[str, Sequence[str]]) -> None:
        """Start following ``wave``: record who owns what (inboxes need it), draw the board."""
        self.wave, self._gates = wave, {}
        self.owners = {agent: tuple(paths) for agent, paths in owners.items()}
        self._owned = {}
        for agent, paths in self.owners.items():
            for owned in paths:
                self._owned.setdefault(owned.rstrip("/"), set()).add(agent)
        self._seen = None
        self.follow = LogFollower(self.layout.coordination_log(wave), wave, self._skipped)
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
    def records(self) -> dict[str, CoordRecord]:
        """The wave's items as the follower last read them."""
        return self.follow.records

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
        """Read what was posted since the last look, update the projections it touches and
        announce new questions; two ``stat`` calls when nothing changed. True when something
        changed (the dashboard should be redrawn)."""
        if not self.wave:
            return False
        stamp, before = self._stamp(), self._seen
        if stamp == before:
            self._flush()
            return False
        self._seen = stamp
        if before is None or before[0] != stamp[0]:
            changed = self.follow.refresh()
            affected = self._index_changes(None if before is None else changed)
            if changed is None or before is None or changed:
                self._stale = True
                self._affected = None if affected is None or self._affected is None else (
                    self._affected | affected)  # fmt: skip
            self._flush(now=before is None)
        if before is None or before[1] != stamp[1]:
            self._follow_feedback()
        return True

    def flush(self) -> None:
        """Read what is new and draw what is not drawn yet, now (the pool's agents are done)."""
        self.tick()
        self._flush(now=True)

    def tell_person(self, payload: dict[str, Any]) -> None:
        """What a person who left the fleet alone should hear of (a usage limit, the spend
        limit, a wave that ended): the lane's sinks get it, one JSON object."""
        self.teller.tell(payload)

    def _flush(self, now: bool = False) -> None:
        """Write the projections of what changed, at most once per ``PROJECTION_SECONDS``:
        at 50 posts a second the board is redrawn once a second, not fifty times."""
        if not self._stale or (not now and time.monotonic() < self._next_projection):
            return
        self._write_projections(self._affected)
        self._affected, self._stale = set(), False
        self._next_projection = time.monotonic() + PROJECTION_SECONDS

    def _skipped(self, size: int) -> None:
        self.log.warning("coordination: a line over 1 MiB was skipped", bytes=size,
                         log=str(self.layout.coordination_log(self.wave)))  # fmt: skip

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
        command = answer_command(request.id, self.lane)
        self.teller.tell({**request.to_json(), "kind": "question", "reason": request.question,
                          "command": command, "at": utc_now()})  # fmt: skip

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

    def judge_implementation(
        self, agents: Sequence[AgentDef], results: Sequence[AgentResult]
    ) -> GateResult:
        """The implementation gate, then ``open-blocker`` for each open high/urgent blocker,
        naming the agent that posted it (or the one it targets) so a retry reruns it."""
        gate = judge_implementation(results)
        self.add_blockers(gate, [a.id for a in agents])
        return gate

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
        requests (as of the last projections: the dashboard asks on every redraw), questions
        waiting for a person, and where the board is."""
        asked = sorted(self.pending(), key=lambda r: r.created_at)[:10]
        questions = [{"id": q.id, "agent": q.agent, "question": clean(q.question)[:300],
                      "created_at": q.created_at} for q in asked]  # fmt: skip
        return {"board": str(self.layout.board(self.wave)), **self._open, "questions": questions}

    def prompt_context(self, agent_id: str) -> str:
        """The agent's inbox and the shared summary, for a prompt; '' when there is nothing.
        The inbox from the index (the items that may concern the agent, not the whole log),
        the summary as the last projections made it: launching 200 agents does not go
        over 20,000 items 200 times."""
        self.tick()
        has_items, text = self._inbox(agent_id)  # from the index: its items only
        parts = [text] if has_items else []
        if self._summary:
            parts.append("Shared summary of the wave:\n" + self._summary)
        return "\n\n".join(parts)

    def _concerned(self, record: CoordRecord) -> set[str] | None:
        """The agents whose inbox an item may be in (None: every agent's)."""
        if for_everyone(record):
            return None
        who = {t for t in record.targets if t in self.owners}
        if record.agent in self.owners:
            who.add(record.agent)
        for path in record.artifacts:  # each folder on its way, looked up: not every owner
            parts = path.split("/")
            for n in range(1, len(parts) + 1):
                who |= self._owned.get("/".join(parts[:n]), set())
        return who

    def _inbox(self, agent: str) -> tuple[bool, str]:
        ids = self._index.get(agent, set()) | self._everyone
        mine = {rid: self.records[rid] for rid in ids if rid in self.records}
        owner = InboxOwner(agent, self.owners.get(agent, ()))
        return bool(inbox_items(owner, mine)), inbox(owner, mine)

    def _index_changes(self, changed: set[str] | None) -> set[str] | None:
        """Note which agents the changed items concern (``None``: all items, the index built
        again); returns the agents whose inbox changed (``None``: every agent's)."""
        if changed is None:
            self._index, self._everyone = {}, set()
        everyone, affected = changed is None, set()
        for rid in self.records if changed is None else changed:
            record = self.records.get(rid)
            who = self._concerned(record) if record is not None else set()
            if who is None:
                self._everyone.add(rid)
                everyone = True
                continue
            for agent in who:
                self._index.setdefault(agent, set()).add(rid)
            affected |= who
        return None if everyone else affected

    def _write_projections(self, affected: set[str] | None) -> None:
        """Board and shared summary anew, and the inboxes of ``affected`` (None: all)."""
        ordered = newest_first(self.records.values())  # sorted once; the views keep the order
        self._summary = shared_summary(ordered)
        requests = (r for r in open_requests(ordered) if r.kind != "human-feedback")  # questions
        self._open = {"blockers": [_brief(r) for r in open_blockers(ordered)[:10]],
                      "requests": [_brief(r) for r in itertools.islice(requests, 10)]}  # fmt: skip
        try:
            write_atomic(self.layout.board(self.wave),
                         board(self.lane, self.wave, ordered, utc_now()) + "\n")  # fmt: skip
            write_atomic(self.layout.shared_summary(self.wave), self._summary + "\n")
            for agent in self.owners if affected is None else affected & self.owners.keys():
                write_atomic(self.layout.inbox(self.wave, agent), self._inbox(agent)[1] + "\n")
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
