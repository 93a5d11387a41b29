"""The agent pool's side of the fleet governor (``governor/``): an agent that hit a usage
limit is parked and launched again after the reset (at most ``usage_limit.max_parks`` times:
one limited again at every reset does not wait all night), an agent whose account waits or
whose executor, account or model is at its cap stays pending, and at the spend limit nothing
more starts. Without a governor (unit tests, old callers) nothing is held."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ...governor.governor import Governor
from ...notify.documents import document
from ...state.events import EventLog
from ...state.events import iso_time as iso
from ...state.events import short_clock as clock
from ...state.fsutil import write_json_atomic
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusFile
from ..agent.plan import AgentLaunch
from ..agent.run import AgentRun

log = Logger(__name__)


class GovernorSide:
    """What the pool asks of the governor before each launch and tells it of each limit."""

    def __init__(
        self,
        governor: Governor | None,
        events: EventLog,
        tell: Callable[[dict[str, Any]], None] = lambda payload: None,
    ) -> None:
        self.governor = governor
        self.events = events
        self.tell = tell  # the lane's notify.command: a person hears of limits and spend
        self.stopped: str | None = None  # the spend limit's words, once reached
        self._no_fallback: set[tuple[str, str]] = set()  # (agent, executor) with none left
        # Of a run's ``parked``, the parks that were a step to its fallback, not a wait.
        self._passes: Counter[AgentRun] = Counter()
        self._spent: dict[AgentRun, str] = {}  # the words a run whose parks ran out ends with

    @property
    def hard(self) -> bool:
        return self.governor is not None and self.governor.rules.spend_hard

    def park(self, run: AgentRun, status: StatusFile) -> bool:
        """True when ``run``, ended on a usage limit, waits for its reset instead of ending;
        its status file says until when, so that a resumed launcher parks it again."""
        gov = self.governor
        if gov is None or self.stopped:
            return False
        account = run.launch.account
        until = gov.park_until(account, status.detail or "", time.time())
        if until is None:
            return False
        if self.parks(run) >= gov.rules.usage_limit.max_parks:
            self._parks_ran_out(run, status.detail or "usage limit")
            return False  # its account still waits for the reset: its other agents with it
        try:
            parks = self.parks(run) + 1  # with this one: a resumed launcher counts on from it
            marked = {**status.raw, "limited_until": until, "parks": parks}
            write_json_atomic(run.launch.paths.status, marked)
        except OSError as exc:  # a resumed launcher would end it as usage-limit: said here
            log.warning("parked agent's status not marked", agent=run.id, error=str(exc))
        detail = status.detail
        run.park(until, self.events, account=account, until=iso(until), detail=detail)
        log.warning(
            "agent limited", agent=run.id, account=account, until=clock(until), detail=detail
        )
        lane = run.launch.lane.name
        self.tell(
            document(
                "usage-limit",
                lane,
                wave=run.launch.wave.number,
                agent=run.id,
                reason=detail,
                command=f"wave status --lane {lane}",
                account=account,
                until=iso(until),
            )
        )
        return True

    def parks(self, run: AgentRun) -> int:
        """How often ``run`` waited for a reset (a step to its fallback is no wait)."""
        return run.parked - self._passes[run]

    def _parks_ran_out(self, run: AgentRun, detail: str) -> None:
        """Limited again after ``max_parks`` waits: not parked, said, and a person told; the
        words its end carries (``end_detail``) name the count."""
        most = self.governor.rules.usage_limit.max_parks if self.governor else 0
        parks, account, lane = self.parks(run), run.launch.account, run.launch.lane.name
        words = f"usage limit again after {parks} parks (max_parks: {most}): {detail}"
        self._spent[run] = words
        wave = run.launch.wave.number
        self.events.emit(
            "agent_parks_spent", wave, run.id, parks=parks, max_parks=most, account=account
        )
        log.warning("agent not parked again", agent=run.id, parks=parks, account=account)
        command = f"wave status --lane {lane}"
        self.tell(
            document(
                "usage-limit",
                lane,
                wave=wave,
                agent=run.id,
                reason=words,
                command=command,
                account=account,
                parks=parks,
            )
        )

    def end_detail(self, run: AgentRun, detail: str | None) -> str:
        """The words ``run``, ended as its status file says, ends with: the park count first
        when it was limited again after its last park (else ``detail`` as it is)."""
        return self._spent.pop(run, None) or detail or ""

    def fall_back(self, run: AgentRun, plan: Callable[[AgentRun], AgentLaunch | None]) -> bool:
        """True when ``run``, ended on a usage limit it cannot wait out (or pending on an
        account out of quota), runs at once on its next fallback executor (``plan`` makes that
        launch), in the same attempt: no wave retry used. Not with ``usage_limit.wait: false``
        (a wave retry tries the fallback then)."""
        if self.governor is None or not self.governor.rules.usage_limit.wait or self.stopped:
            return False
        if (launch := plan(run)) is None:
            return False
        was, pending = run.launch.executor, run.state is AgentState.PENDING
        if not pending:
            run.park(time.time())  # the try that met the limit is kept (attempt-<k>.limited<n>)
            self._passes[run] += 1
        self._spent.pop(run, None)  # it goes on elsewhere: its end, if any, says its own words
        run.launch = launch
        if not pending:
            run.unpark()
        run.follow_output()  # its new executor's output: its retries, its event stream
        run.executors.append(launch.executor)
        wave = launch.wave.number
        self.events.emit("agent_fallback", wave, run.id, executor=launch.executor, previous=was)
        log.warning("agent falls back", agent=run.id, executor=launch.executor, was=was)
        return True

    def turn(self, runs: Iterable[AgentRun]) -> tuple[bool, Counter[Any]]:
        """Once per launch turn: parked agents whose reset came are pending again, spend news
        is told. (anything changed, the running agents as ``Governor.hold`` counts them)."""
        gov, changed = self.governor, False
        running: Counter[Any] = Counter()
        if gov is None:
            return False, running
        for run in runs:
            if run.active or run.state is AgentState.LAUNCHING:
                Governor.add(running, run.slot)
            elif run.state is AgentState.LIMITED and self._reset(gov, run):
                run.unpark()
                log.info("agent's usage limit reset", agent=run.id)
                changed = True
        warnings, stop = gov.spend_news()
        for warning in warnings:
            self.events.emit("spend_warning", message=warning)
            log.warning(warning)
            self.tell(self._spend_doc("spend-warning", warning, runs))
        if stop and not self.stopped:
            self.stopped = stop
            self.events.emit("spend_limit", message=stop, hard=self.hard)
            log.warning(stop)
            self.tell(self._spend_doc("spend-limit", stop, runs))
        return changed or bool(warnings), running

    @staticmethod
    def _reset(gov: Governor, run: AgentRun) -> bool:
        """Its account's limit has reset, and the account waits on nothing else."""
        due = (run.limited_until or 0) <= time.time()
        return due and gov.waiting(run.launch.account) is None

    @staticmethod
    def _spend_doc(kind: str, message: str, runs: Iterable[AgentRun]) -> dict[str, Any]:
        launch = next((r.launch for r in runs), None)
        lane = launch.lane.name if launch else ""
        return document(
            kind,
            lane,
            wave=launch.wave.number if launch else None,
            reason=message,
            command=f"wave status --lane {lane}",
            message=message,
        )

    def hold(self, run: AgentRun, running: Counter[Any]) -> bool | None:
        """None when ``run`` may start now; else whether the reason it is held for is new
        (its ``hold`` says why: views show it)."""
        why = self.governor.hold(run.slot, running) if self.governor else None
        changed, run.hold = why != run.hold, why
        if changed and why:
            log.info("agent held", agent=run.id, why=why)
        return None if why is None else changed

    def out_of_quota(
        self, run: AgentRun, plan: Callable[[AgentRun], AgentLaunch | None]
    ) -> str | None:
        """Why pending ``run`` is not started at all, its account having met a limit it cannot
        wait out: ``""`` when it runs on its next fallback executor instead (``plan``), the
        words of the limit when it ends (``usage_limit.wait: false``), None when it may start
        or waits with its account, at most the maximum wait (a far reset may be forged)."""
        gov = self.governor
        words = gov.out_of_quota(run.launch.account) if gov is not None else None
        if gov is None or words is None:
            return None
        tried = (run.id, run.launch.executor)
        if tried not in self._no_fallback:
            if self.fall_back(run, plan):
                return ""
            self._no_fallback.add(tried)  # asked once, not every turn of the wait
        return None if gov.rules.usage_limit.wait else words

    def started(self, running: Counter[Any], run: AgentRun) -> None:
        run.hold = None
        Governor.add(running, run.slot)
