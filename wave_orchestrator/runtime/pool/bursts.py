"""A burst of ready agents started off the launcher's loop (tmux here or on SSH hosts).

Writing 4 agents' files and tmux starting their sessions takes 25-45 ms here on a busy machine;
done on the loop, every agent that ends meanwhile waits for it to be noticed. Done on a worker
thread, the loop goes on taking in finishes and is woken when the burst is done. One burst is
in flight at a time; Slurm's placement (sbatch per job) keeps starting on the loop. On SSH
hosts a burst takes a push and a command per agent, hundreds of milliseconds each: off the
loop, an agent's end on a host is still taken in within its half-second look.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from ...placement.base import Placement
from ...state.logs import in_context

BURST_DONE = "<burst>"  # the wake-up in the pool's event queue: never the name of an agent's file
T = TypeVar("T")
Handles = list[int | Exception | None]


class Bursts(Generic[T]):
    """``start`` a burst for some items (the runs), ``take`` it back once tmux is done."""

    def __init__(self, placement: Placement) -> None:
        self.threaded = placement.kind in ("local", "ssh")
        self.wake: Callable[[], None] = lambda: None  # the loop's wake-up, set by the pool
        self._workers: ThreadPoolExecutor | None = None
        self._flight: tuple[list[T], Future[Handles]] | None = None

    @property
    def busy(self) -> bool:
        return self._flight is not None

    def start(self, items: list[T], work: Callable[[], Handles], meanwhile: bool = True) -> None:
        """``work`` readies and starts the items (each one's handle or error, in order).
        ``meanwhile``: other agents run, whose ends the loop could take in during it (if
        none does, as in a closure stage, the hand-over to the thread would only cost time)."""
        assert self._flight is None, "one burst at a time"
        future: Future[Handles] = Future()
        if not self.threaded or not items or not meanwhile:
            future.set_result(work())
        else:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wave-burst")
            future = self._workers.submit(in_context(work))
            future.add_done_callback(lambda _: self.wake())
        self._flight = (items, future)

    def carries(self, item: T) -> bool:
        """Whether ``item`` is of the burst in flight (tmux has not answered for it yet)."""
        return self._flight is not None and any(i is item for i in self._flight[0])

    def take(self) -> tuple[list[T], Handles] | None:
        """The burst that ended, once: its items and each one's handle (or error)."""
        if self._flight is None or not self._flight[1].done():
            return None
        (items, future), self._flight = self._flight, None
        return items, future.result()

    def close(self) -> None:
        """Wait for a burst in flight (nothing starts after its pool ended)."""
        if self._workers is not None:
            self._workers.shutdown(wait=True)
            self._workers = None
