"""A burst of sessions started off the loop (tmux placement), on it for Slurm."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

from helpers import wait_for

from wave_orchestrator.runtime.bursts import Bursts
from wave_orchestrator.runtime.placement.base import AgentJob, Placement


class Starter:
    """A placement whose start_many waits until released, and says on which thread it ran."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.release = threading.Event()
        self.threads: list[int] = []

    def start_many(self, jobs: Sequence[Any]) -> list[int | Exception | None]:
        self.threads.append(threading.get_ident())
        if self.kind == "local":
            assert self.release.wait(10)
        return [100 + i for i, _ in enumerate(jobs)]


def bursts(kind: str) -> tuple[Bursts[str], Starter]:
    starter = Starter(kind)
    return Bursts(cast(Placement, starter)), starter


JOBS = cast(list[AgentJob], ["job-a", "job-b"])


def test_a_tmux_burst_runs_off_the_loop_and_wakes_it_when_started() -> None:
    burst, starter = bursts("local")
    woken = threading.Event()
    burst.wake = woken.set
    burst.start(["a", "b"], JOBS)
    assert burst.busy and burst.take() is None  # tmux is still at it: the loop goes on
    assert starter.threads == [] or starter.threads[0] != threading.get_ident()
    starter.release.set()
    wait_for(woken.is_set, 10, what="the wake-up")
    assert burst.take() == (["a", "b"], [100, 101])
    assert not burst.busy and burst.take() is None  # taken once
    assert starter.threads[0] != threading.get_ident()
    burst.close()


def test_a_slurm_burst_or_one_with_nothing_else_running_starts_on_the_loop() -> None:
    for kind, meanwhile in (("slurm", True), ("local", False)):
        burst, starter = bursts(kind)
        starter.release.set()
        burst.start(["a", "b"], JOBS, meanwhile=meanwhile)
        assert starter.threads == [threading.get_ident()]
        assert burst.take() == (["a", "b"], [100, 101])
        burst.close()


def test_close_waits_for_a_burst_in_flight() -> None:
    burst, starter = bursts("local")
    burst.start(["a"], JOBS[:1])
    threading.Timer(0.2, starter.release.set).start()
    burst.close()  # nothing starts after its pool ended
    assert starter.release.is_set() and len(starter.threads) == 1
