"""A clock that moves only when told, with actions due at given times: a simulated hour costs
nothing, so a budget, a stall or a thousand staggered ends are decided in milliseconds."""

from __future__ import annotations

import heapq
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# The modules whose ``time`` is the fake's while a pool runs: the loop and its services, one
# attempt's bookkeeping, and the reaper's escalation (found by prefix, so a module split off
# the loop is covered without a change here).
PATCHED_PREFIXES = (
    "wave_orchestrator.runtime.pool",
    "wave_orchestrator.runtime.agent",
    "wave_orchestrator.placement.reaper",
)


class FakeClock:
    """``monotonic``, ``time`` and ``sleep`` as the ``time`` module has them, in simulated
    seconds; anything else (``perf_counter``, ``strftime``) is the real module's."""

    def __init__(self, wall: float = 1_900_000_000.0) -> None:
        self.mono = 1_000.0
        self.offset = wall - self.mono
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.mono + self.offset

    def sleep(self, seconds: float) -> None:
        self.run_until(self.mono + max(0.0, seconds))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def after(self, seconds: float, action: Callable[[], None]) -> None:
        """Run ``action`` once ``seconds`` of simulated time have passed."""
        heapq.heappush(self._due, (self.mono + seconds, next(self._order), action))

    def run_until(self, until: float, stop: Callable[[], bool] = lambda: False) -> None:
        """Move to ``until``, running each action due on the way at its own time; stop early,
        at that action's time, once ``stop`` says so (something for the loop to take in)."""
        while self._due and self._due[0][0] <= until:
            when, _, action = heapq.heappop(self._due)
            self.mono = max(self.mono, when)
            action()
            if stop():
                return
        self.mono = max(self.mono, until)


@contextmanager
def clock_installed(clock: FakeClock) -> Iterator[FakeClock]:
    """Every loaded module of PATCHED_PREFIXES that reads the ``time`` module reads ``clock``
    meanwhile; the real module is put back afterwards."""
    import wave_orchestrator.placement.reaper
    import wave_orchestrator.runtime.pool.loop  # noqa: F401  (its services load with it)

    patched = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith(PATCHED_PREFIXES) and getattr(module, "time", None) is time
    ]
    for module in patched:
        module.time = clock  # type: ignore[attr-defined]
    try:
        yield clock
    finally:
        for module in patched:
            module.time = time  # type: ignore[attr-defined]
