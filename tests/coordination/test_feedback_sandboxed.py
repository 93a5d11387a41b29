"""`ask --wait` in a sandbox: its pid names nothing outside (its own process ids), so it records
none and renews a mark while it waits; the launcher counts it as waiting while the mark is
fresh and within its timeout, and not a moment after a killed waiter stops renewing. A mark
an agent plants (stale, from the future, past the timeout) makes nobody wait."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import sandboxed_agent_site, wait_for

from wave_orchestrator.coordination import feedback
from wave_orchestrator.coordination.feedback import FeedbackRequest, FeedbackStore
from wave_orchestrator.coordination.follower import Coordinator
from wave_orchestrator.coordination.log import append_record
from wave_orchestrator.definitions.model import SandboxSettings
from wave_orchestrator.sandbox.bwrap import build_binds, shell_line, to_argv
from wave_orchestrator.sandbox.plan import plan_sandbox, prepare
from wave_orchestrator.sandbox.probe import probe
from wave_orchestrator.state.events import EventLog

HOST = os.uname().nodename


def _store(folder: Path) -> FeedbackStore:
    return FeedbackStore(folder / "feedback.jsonl", "main", lambda w: folder / f"wave-{w}.jsonl")


def stored(store: FeedbackStore, rid: str) -> FeedbackRequest:
    return store.get(rid)


def until(condition: Callable[[], object], what: str, seconds: float = 10) -> None:
    wait_for(condition, seconds, what=what)


def test_a_sandboxed_wait_records_no_pid_and_is_waited_on_until_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAVE_SANDBOX", "bubblewrap")
    monkeypatch.setattr(feedback, "WAIT_RENEW_SECONDS", 0.2)
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    got: list[FeedbackRequest] = []
    waiter = threading.Thread(target=lambda: got.append(store.wait(asked.id, 30, poll=0.05)))
    waiter.start()
    try:
        until(lambda: stored(store, asked.id).wait_seen is not None, "the wait was not recorded")
        first = stored(store, asked.id)
        assert first.wait_pid is None and first.wait_host == HOST
        assert first.wait_until is not None and first.wait_until > time.time() + 20
        assert first.waited_on(time.time(), HOST)
        seen = first.wait_seen
        until(lambda: (stored(store, asked.id).wait_seen or 0) > (seen or 0), "never renewed")
        store.respond(asked.id, "keep", "ana")
        waiter.join(10)
        assert got and got[0].response is not None and got[0].response.text == "keep"
    finally:
        waiter.join(10)
    after = stored(store, asked.id)
    assert (after.wait_pid, after.wait_seen) == (None, None)  # the mark is taken back
    records = (tmp_path / "feedback.jsonl").read_text()
    assert f'"wait_pid": {os.getpid()}' not in records


def test_unsandboxed_it_still_records_its_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAVE_SANDBOX", raising=False)
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    waiter = threading.Thread(target=lambda: store.wait(asked.id, 30, poll=0.05))
    waiter.start()
    try:
        until(lambda: stored(store, asked.id).wait_pid is not None, "the wait was not recorded")
        assert stored(store, asked.id).wait_pid == os.getpid()
        assert stored(store, asked.id).wait_seen is None
    finally:
        store.respond(asked.id, "keep", "ana")
        waiter.join(10)


@pytest.mark.parametrize(
    ("fields", "waited"),
    [
        ({"wait_seen": 0.0}, True),  # fresh: now
        ({"wait_seen": -61.0}, False),  # stale: its waiter stopped renewing (killed)
        ({"wait_seen": 3600.0}, False),  # from the future: planted to wait forever
        ({"wait_seen": 0.0, "wait_until": -1.0}, False),  # its timeout passed
        ({"wait_seen": "now"}, False),  # not a time
        ({"wait_seen": None}, False),  # the wait is over
        ({"wait_seen": True}, False),
    ],
)
def test_what_a_sandboxed_mark_is_worth(
    tmp_path: Path, fields: dict[str, Any], waited: bool
) -> None:
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    now = time.time()
    line = {"id": asked.id, "wait_pid": None, "wait_host": HOST, "wait_until": now + 600}
    line.update({k: now + v if isinstance(v, float) else v for k, v in fields.items()})
    append_record(store.path, line)
    assert stored(store, asked.id).waited_on(now, HOST) is waited


WAITER = """
import sys
from pathlib import Path
from wave_orchestrator.coordination import feedback
feedback.WAIT_RENEW_SECONDS = 0.2
folder = Path(sys.argv[1])
store = feedback.FeedbackStore(folder / "feedback.jsonl", "main", lambda w: folder / f"w{w}")
store.wait(sys.argv[2], None, poll=0.05)
"""


def test_a_killed_sandboxed_waiter_stops_being_waited_on_within_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed at once (SIGKILL: no `finally` takes its mark back): it is waited on while it
    renews, past several leases, and no more once a lease passes without a renewal."""
    monkeypatch.setattr(feedback, "WAIT_LEASE_SECONDS", 1.0)
    store = _store(tmp_path)
    asked = store.ask(1, "api", "keep v1?")
    env = {**os.environ, "WAVE_SANDBOX": "bubblewrap"}
    child = subprocess.Popen([sys.executable, "-c", WAITER, str(tmp_path), asked.id], env=env)
    try:
        until(lambda: stored(store, asked.id).waited_on(time.time(), HOST), "never waited on")
        deadline = time.monotonic() + 2.5  # over two leases: renewed, still waited on
        while time.monotonic() < deadline:
            assert stored(store, asked.id).waited_on(time.time(), HOST)
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        assert stored(store, asked.id).wait_seen is not None  # its mark is still there
        until(lambda: not stored(store, asked.id).waited_on(time.time(), HOST), "still waited")
        assert stored(store, asked.id).status == "pending"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_a_real_sandboxed_ask_wait_is_seen_waiting_by_the_launcher(
    outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wave feedback ask --wait` in a real bubblewrap sandbox (its own process ids): the
    launcher's follower, outside, counts its agent as waiting; answered, it prints the answer
    and waits no more."""
    repo, layout, env = sandboxed_agent_site(outside_tmp)
    layout.coordination_dir.mkdir()
    plan = plan_sandbox(
        SandboxSettings(mode="bubblewrap"),
        layout=layout,
        repo=repo,
        wave=1,
        agent_id="A1",
        executor="local",
        env=env,
    )
    prepare(plan)
    coordinator = Coordinator(
        layout, EventLog(outside_tmp / "events.jsonl"), lambda _: None, echo=lambda _: None
    )
    coordinator.begin(1, {"A1": ()})
    ask = ["wave", "feedback", "ask", "--question", "which port?", "--wait"]
    script = shell_line([*ask, "--timeout-seconds", "60"])
    argv = to_argv(build_binds(plan), ["bash", "-c", script], bwrap=probe().require())
    child = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    store = FeedbackStore(layout.feedback, "main", layout.coordination_log)
    try:

        def waiting() -> bool:
            coordinator.tick()
            return coordinator.waiting_human() == frozenset({"A1"})

        until(waiting, "the launcher did not see A1 waiting", 30)
        (asked,) = store.pending()
        assert asked.wait_pid is None and asked.wait_seen is not None
        store.respond(asked.id, "8080", "ana")
        out, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        assert out.decode().strip() == "8080"
        coordinator.tick()
        assert coordinator.waiting_human() == frozenset()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
