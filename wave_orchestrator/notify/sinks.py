"""The sinks a person is told through: the lane's command (``Notifier``: one run per event,
as questions always had it) and ``Delivery`` for the desktop and a webhook (one worker thread;
the events of a second go out as one). A sink that fails, hangs or is down is logged once and
never disturbs the wave."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from ..definitions.model import NotifySettings
from ..state.fsutil import json_text
from ..state.logs import Logger, in_context
from .documents import shaped, summary

NOTIFY_TIMEOUT_SECONDS = 30  # the longest one run of notify.command may take
NOTIFY_QUEUE = 20  # events waiting for the command; more are coalesced into one
DELIVERY_QUEUE = 1000  # events waiting for the desktop and the webhook; more are counted
COALESCE_SECONDS = 1.0  # the events of this long go out as one POST, one desktop note
POST_TIMEOUT_SECONDS = 5.0
POST_TRIES = 3  # a webhook that fails is tried this often per batch (1 s, then 2 s apart)

# Said at launch and by `wave doctor`: a lane asked for the desktop, which stays silent.
DESKTOP_MISSING = "notify.desktop is true but notify-send is not on PATH: no desktop notifications"
DESKTOP_FIX = "install notify-send (Debian, Ubuntu: libnotify-bin), or set notify.desktop: false"

log = Logger(__name__)


class _Queued:
    """Events for one worker thread, alive while there is something to send (the worker ends
    under the same lock ``send`` starts it under: nothing is stranded). An event that does not
    fit the queue is counted in ``overflow``, never held."""

    thread_name = "wave-notify"

    def __init__(self, size: int) -> None:
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue(size)
        self.overflow = 0
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def send(self, doc: dict[str, Any]) -> None:
        with self._lock:
            try:
                self.queue.put_nowait(doc)
            except queue.Full:
                self.overflow += 1
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=in_context(self._drain), name=self.thread_name, daemon=True
                )
                try:
                    self._worker.start()
                except RuntimeError as exc:  # no thread to be had (a pids limit): logged
                    self._worker = None
                    log.warning("notifications not sent", error=str(exc))

    def drain(self, seconds: float) -> None:
        """Wait up to ``seconds`` for what is still queued (the launcher ends)."""
        worker = self._worker
        if worker is not None:
            worker.join(seconds)

    def _drain(self) -> None:
        raise NotImplementedError


class Notifier(_Queued):
    """The lane's ``notify.command``, run for one event at a time on one worker thread,
    with the event as JSON on stdin. At most ``NOTIFY_QUEUE`` wait; past that they are
    counted and said in one ``{"coalesced": N}`` notification instead. A notifier that
    fails, hangs (ended at ``NOTIFY_TIMEOUT_SECONDS``) or cannot start is only logged: an
    agent that asks a thousand questions costs one thread and one process at a time."""

    def __init__(self, command: Sequence[str]) -> None:
        super().__init__(NOTIFY_QUEUE)
        self.command = tuple(command)

    def _drain(self) -> None:
        while True:
            try:
                payload = self.queue.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if self.overflow:
                        payload, self.overflow = {"coalesced": self.overflow}, 0
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
                log.warning("notify command failed", code=done.returncode)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            log.warning("notify command failed", error=str(exc))


class Delivery(_Queued):
    """The desktop (notify-send) and the webhook, on one worker thread that lives while there
    is something to send. Events of the same second are sent together: 200 questions at once
    are a few POSTs, not 200. A failing sink is warned of once, then quietly retried with
    each new batch."""

    def __init__(
        self,
        settings: NotifySettings,
        post: Callable[[str, bytes, dict[str, str]], None] | None = None,
    ) -> None:
        super().__init__(DELIVERY_QUEUE)
        self.url, self.form = settings.webhook_url, settings.webhook_format
        self.desktop = shutil.which("notify-send") if settings.desktop else None
        if settings.desktop and self.desktop is None:  # once a launch: it builds one Delivery
            log.warning(f"{DESKTOP_MISSING}; {DESKTOP_FIX}")
        self.post = post or _post
        self.warned: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.url or self.desktop)

    thread_name = "wave-deliver"

    def _drain(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if self.queue.empty():
                        self._worker = None
                        return
                continue
            batch, until = [first], time.monotonic() + COALESCE_SECONDS
            while (left := until - time.monotonic()) > 0 and len(batch) < DELIVERY_QUEUE:
                try:
                    batch.append(self.queue.get(timeout=left))
                except queue.Empty:
                    break
            with self._lock:
                dropped, self.overflow = self.overflow, 0
            self._deliver(batch, dropped)

    def _deliver(self, batch: list[dict[str, Any]], dropped: int) -> None:
        if self.url:
            body, headers = shaped(batch, self.form, dropped)
            for attempt in range(POST_TRIES):
                try:
                    self.post(self.url, body, headers)
                    self.warned.discard("webhook")
                    break
                except (OSError, ValueError) as exc:
                    if attempt == POST_TRIES - 1:
                        self._warn("webhook", f"notify webhook not reached: {exc}")
                    else:
                        time.sleep(1.0 * (attempt + 1))
        if self.desktop:
            lines = [summary(d) for d in batch[:5]]
            more = len(batch) - len(lines) + dropped
            text = "\n".join(lines + ([f"... and {more} more"] if more > 0 else []))
            try:
                subprocess.run(
                    [self.desktop, "wave", text],
                    capture_output=True,
                    timeout=NOTIFY_TIMEOUT_SECONDS,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                self._warn("desktop", f"notify-send failed: {exc}")

    def _warn(self, sink: str, message: str) -> None:
        if sink not in self.warned:
            self.warned.add(sink)
            log.warning(message)


def _post(url: str, body: bytes, headers: dict[str, str]) -> None:
    """One POST; an HTTP error status is a failure too (urllib's errors are OSErrors).
    urllib loads here, on the worker, for lanes with a webhook: 16 ms off every launch."""
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=POST_TIMEOUT_SECONDS) as answer:
        if answer.status >= 300:
            raise OSError(f"HTTP {answer.status}")


class Teller:
    """Every sink of a lane behind one call: ``tell(doc)`` sends an event to those that want
    its kind (``notify.on``). The bell rings on the launcher's own terminal, at once."""

    def __init__(self, settings: NotifySettings, bell: IO[str] | None = None) -> None:
        self.on = frozenset(settings.on)
        self.command = Notifier(settings.command) if settings.command else None
        self.delivery = Delivery(settings)
        self.bell = bell if settings.bell and bell is not None and _tty(bell) else None

    def tell(self, doc: dict[str, Any]) -> None:
        if doc.get("kind") not in self.on:
            return
        if self.command is not None:
            self.command.send(doc)
        if self.delivery:
            self.delivery.send(doc)
        if self.bell is not None:
            try:
                self.bell.write("\a")
                self.bell.flush()
            except (OSError, ValueError):
                self.bell = None

    def drain(self, seconds: float) -> None:
        """Wait (up to ``seconds`` in all) for what the sinks still have to send."""
        end = time.monotonic() + seconds
        for sink in (self.command, self.delivery):
            if sink is not None:
                sink.drain(max(0.0, end - time.monotonic()))


def _tty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False
