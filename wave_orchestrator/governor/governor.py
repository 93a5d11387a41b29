"""The fleet governor (docs/launcher.md, "Limits, accounts and spend"): asked before every
launch, told of every usage limit and cost. It knows which accounts wait for a reset, how many
agents run per executor, account and model, and what the run has spent.

It holds no agents and starts nothing: the agent pool asks it and acts. What a later launcher
must know (accounts still limited; with ``--resume``, the money spent) is kept in
``governor.json``, written atomically and read back as hostile.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from ..definitions.model import Caps, Governance, WaveDef
from ..state.events import iso_time as iso
from ..state.events import short_clock as clock
from ..state.fsutil import write_json_atomic
from ..state.ledger import MAX_USD, Ledger
from ..state.untrusted import MAX_COUNT

WARN_AT = 0.8  # of a spend limit: warned once
Slot = tuple[str, str | None, str | None]  # (executor, account, model) of a running agent


class Limited(NamedTuple):
    """An account that hit its usage limit: nothing of it starts before ``until`` (epoch)."""

    until: float
    detail: str


class Governor:
    """One per launcher: its limits outlive a wave (an account stays limited), its caps and
    wave spend are set by ``begin_wave``."""

    def __init__(
        self,
        rules: Governance,
        path: Path | None = None,
        *,
        resume: bool = False,
        now: Callable[[], float] = time.time,
        ledger: Ledger | None = None,
    ) -> None:
        self.rules = rules
        self.path = path  # governor.json: the view for people, never read back
        self.ledger = ledger  # where its decisions are kept, and read back from
        self.now = now
        self.caps: Caps = rules.caps
        self.limited: dict[str, Limited] = {}
        self.exhausted: dict[str, str] = {}  # account -> the limit's words (no reset to wait)
        self.spent = 0.0  # USD the CLIs reported in this run of the lane
        self.unpriced = 0  # agents of a CLI that reported no cost
        self.wave_spent = 0.0
        self.wave_limit: float | None = None
        self._lock = threading.Lock()  # costs arrive from the metrics worker too
        self._warned: set[str] = set()
        self._load(resume)

    # -- usage limits -----------------------------------------------------------------------
    def park_until(self, account: str | None, detail: str, said_at: float) -> float | None:
        """When an agent that hit a usage limit may run again (epoch), or None: it ends as
        ``usage-limit`` (no account, waiting is off, no reset named, or one too far away).
        Either way its account starts nothing more until then, and never past the maximum
        wait: a reset the words put further (a far date an agent may have forged) holds its
        account that long and no longer, and honest agents of it run after."""
        if account is None:
            return None
        policy = self.rules.usage_limit
        horizon = said_at + policy.max_wait_minutes * 60
        from .resets import reset_time  # only once an agent is limited

        reset = reset_time(detail, datetime.fromtimestamp(said_at, UTC))
        at = reset.timestamp() if reset is not None else math.inf
        if policy.wait and at <= horizon:
            return self._hold(account, max(at, said_at) + policy.margin_seconds, detail)
        self.exhausted[account] = detail or "usage limit"
        self._hold(account, min(at + policy.margin_seconds, horizon), detail)
        return None

    def _hold(self, account: str, until: float, detail: str) -> float:
        """Nothing of ``account`` starts before ``until`` (a later hold kept); when it may."""
        earlier = self.limited.get(account)
        if earlier is None or earlier.until < until:
            self.limited[account] = Limited(until, detail)
            self.save()
        return max(until, earlier.until if earlier else until)

    def waiting(self, account: str | None) -> Limited | None:
        """The limit ``account`` waits out, if it still does (a limit with no reset to wait
        for is over with it: its agents may start again)."""
        limit = self.limited.get(account or "")
        if limit is None or limit.until > self.now():
            return limit
        del self.limited[account or ""]
        self.exhausted.pop(account or "", None)
        self.save()
        return None

    def out_of_quota(self, account: str | None) -> str | None:
        """Why an agent of ``account`` is not started now: it hit a limit with no reset to
        wait for, at most the maximum wait ago (None: it may start, or waits)."""
        words = self.exhausted.get(account or "")
        if words is None or self.waiting(account) is None:
            return None
        return f"not started: {account} hit its usage limit ({words})"

    # -- caps ---------------------------------------------------------------------------------
    def begin_wave(self, wave: WaveDef) -> None:
        self.caps = self.rules.caps.over(wave.caps)
        changed = (self.wave_limit, self.wave_spent) != (wave.spend_limit_usd, 0.0)
        self.wave_limit, self.wave_spent = wave.spend_limit_usd, 0.0
        self._warned.discard("wave")
        if changed:  # the file shows this wave's spend, not the last one's
            self.save()

    def hold(self, slot: Slot, running: Counter[Any]) -> str | None:
        """Why an agent with ``slot`` may not start now, or None. ``running`` counts the
        running agents by ``("executor", x)``, ``("account", x)``, ``("model", x)``, ``"all"``."""
        executor, account, model = slot
        if (limit := self.waiting(account)) is not None:
            return f"waiting for {account} until {clock(limit.until)}"
        caps = self.caps
        if caps.total is not None and running["all"] >= caps.total:
            return f"queued (cap total={caps.total})"
        for kind, name, cap in (
            ("executor", executor, caps.executor.get(executor)),
            ("account", account, caps.account.get(account or "")),
            ("model", model, caps.model.get(model or "")),
        ):
            if cap is not None and running[(kind, name)] >= cap:
                return f"queued (cap {name}={cap})"
        return None

    @staticmethod
    def count(slots: Iterable[Slot]) -> Counter[Any]:
        """What ``hold`` needs of the running agents."""
        running: Counter[Any] = Counter()
        for slot in slots:
            Governor.add(running, slot)
        return running

    @staticmethod
    def add(running: Counter[Any], slot: Slot) -> None:
        executor, account, model = slot
        running.update(["all", ("executor", executor), ("account", account), ("model", model)])

    # -- spend --------------------------------------------------------------------------------
    def add_cost(self, executor: str, usd: float | None) -> None:
        """A finished agent's cost as its CLI reported it (None: it reported none; counted
        0, and the spend is partial). ``local`` agents cost nothing. Saved when it changed
        what the file says: a burst of free agents ending costs no write each."""
        with self._lock:
            if usd is None or not math.isfinite(usd) or usd < 0:
                changed = executor != "local"
                self.unpriced += changed
            else:
                changed = usd > 0
                self.spent += usd
                self.wave_spent += usd
        if changed:
            self.save()  # `wave status` shows it, and a resumed launcher goes on from it

    def _spending(self) -> list[tuple[str, float, float]]:
        """(scope, spent, limit) of each limit set: the lane's run, this wave."""
        with self._lock:
            spent = {"lane": self.spent, "wave": self.wave_spent}
        limits = {"lane": self.rules.spend_limit_usd, "wave": self.wave_limit}
        return [(scope, spent[scope], limit) for scope, limit in limits.items() if limit]

    def spend_stop(self) -> str | None:
        """Why nothing more may start (a spend limit reached), or None. Changes nothing."""
        return next(
            (
                f"spend limit ${limit:.2f} reached (${spent:.2f} spent)"
                for _, spent, limit in self._spending()
                if spent >= limit
            ),
            None,
        )

    def spend_news(self) -> tuple[list[str], str | None]:
        """(warnings not yet given, the reason launching stops or None), for the pool's loop."""
        warnings = []
        for scope, spent, limit in self._spending():
            if spent >= WARN_AT * limit and scope not in self._warned:
                self._warned.add(scope)
                self.save()
                warnings.append(
                    f"spend at {spent / limit:.0%} of the {scope}'s limit "
                    f"(${spent:.2f} of ${limit:.2f})"
                )
        return warnings, self.spend_stop()

    # -- views and persistence ----------------------------------------------------------------
    def view(self) -> dict[str, Any]:
        """What `wave status` and the dashboard show (also governor.json's public part)."""
        with self._lock:
            spent, wave_spent, unpriced = self.spent, self.wave_spent, self.unpriced
        now = self.now()
        return {
            "spent_usd": round(spent, 4),
            "spend_limit_usd": self.rules.spend_limit_usd,
            "wave_spent_usd": round(wave_spent, 4),
            "wave_spend_limit_usd": self.wave_limit,
            "costs_partial": unpriced > 0,
            "limited": [
                {"account": a, "until": iso(lim.until), "detail": lim.detail[:200]}
                for a, lim in sorted(self.limited.items())
                if lim.until > now
            ],
        }

    def save(self) -> None:
        if self.path is None:
            return
        decisions = {
            "limited_until": {a: lim.until for a, lim in self.limited.items()},
            "details": {a: lim.detail for a, lim in self.limited.items()},
            "spent_usd": self.spent,
            "unpriced": self.unpriced,
            "warned": sorted(self._warned),
        }
        if self.ledger is not None:
            self.ledger.governor(decisions)
        with contextlib.suppress(OSError):  # views lose a line; the decisions are in memory
            write_json_atomic(self.path, self.view() | decisions)

    def _load(self, resume: bool) -> None:
        """Accounts still limited (always: a new run does not reset a quota) and, resuming,
        what was spent: from the launcher's ledger, never from governor.json (agents can
        write that). Every field checked; anything odd is left out."""
        view = self.ledger.view if self.ledger is not None else None
        data = view.governor if view is not None else None
        if not isinstance(data, dict):
            return
        until, words = data.get("limited_until"), data.get("details")
        words = words if isinstance(words, dict) else {}
        horizon = self.now() + self.rules.usage_limit.max_wait_minutes * 60 + 3600
        for account, at in until.items() if isinstance(until, dict) else ():
            good = isinstance(at, int | float) and not isinstance(at, bool)
            if isinstance(account, str) and good and self.now() < at <= horizon:
                detail = words.get(account)
                self.limited[account[:200]] = Limited(float(at), str(detail or "")[:200])
        if resume:
            spent, unpriced = data.get("spent_usd"), data.get("unpriced")
            if isinstance(spent, int | float) and not isinstance(spent, bool):
                self.spent = float(spent) if 0 <= spent <= MAX_USD else 0.0
            if isinstance(unpriced, int) and not isinstance(unpriced, bool):
                self.unpriced = unpriced if 0 <= unpriced <= MAX_COUNT else 0
            warned = data.get("warned")
            if isinstance(warned, list):
                self._warned = {w for w in warned if w == "lane"}
