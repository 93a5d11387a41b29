"""The sinks against a real local webhook: one POST per second of events, the shapes, a dead
URL warned of once and never in the way, the bell, and what `notify.on` leaves out."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from helpers import Hook, wait_for
from structlog.testing import capture_logs

from wave_orchestrator.definitions.model import NotifySettings
from wave_orchestrator.notify.documents import document
from wave_orchestrator.notify.sinks import Delivery, Teller


def question(n: int) -> dict[str, Any]:
    return document(
        "question",
        "main",
        wave=1,
        agent=f"A{n}",
        reason="which schema?",
        command=f"wave feedback respond q-{n:016x} --lane main --response '...'",
        question="which schema?",
    )


def test_one_event_is_one_post_of_its_document(hook: Hook) -> None:
    teller = Teller(NotifySettings(webhook_url=hook.url))
    doc = document(
        "wave-failed",
        "main",
        wave=2,
        agent="A1",
        reason="A1: failed (exit 3)",
        command="wave status --lane main",
    )
    teller.tell(doc)
    teller.drain(10)
    assert len(hook.posts) == 1
    headers, body = hook.posts[0]
    got = json.loads(body)
    assert got["kind"] == "wave-failed" and got["agent"] == "A1" and got["wave"] == 2
    assert got["command"] == "wave status --lane main" and got["at"].endswith("Z")
    assert headers["Content-Type"] == "application/json"


def test_200_questions_at_once_are_a_few_posts_and_none_is_lost(hook: Hook) -> None:
    teller = Teller(NotifySettings(webhook_url=hook.url))
    t0 = time.monotonic()
    for n in range(200):
        teller.tell(question(n))
    assert time.monotonic() - t0 < 0.5  # off the caller's loop: nothing waits on the network
    teller.drain(15)
    assert 1 <= len(hook.posts) <= 3, len(hook.posts)
    agents = [e["agent"] for _, body in hook.posts for e in json.loads(body)["events"]]
    assert sorted(agents) == sorted(f"A{n}" for n in range(200))


def test_slack_and_ntfy_shapes(hook: Hook) -> None:
    for form in ("slack", "ntfy"):
        teller = Teller(NotifySettings(webhook_url=hook.url, webhook_format=form))
        teller.tell(question(7))
        teller.drain(10)
    (_, slack), (ntfy_headers, ntfy) = hook.posts
    text = json.loads(slack)["text"]
    assert "lane main, wave 1: A7 asks: which schema?" in text and "`wave feedback respond" in text
    assert ntfy_headers["Title"] == "wave: question"
    assert ntfy.decode().splitlines() == [
        "lane main, wave 1: A7 asks: which schema?",
        "wave feedback respond q-0000000000000007 --lane main --response '...'",
    ]


def test_a_dead_url_is_warned_of_once_and_never_holds_the_caller() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delivery = Delivery(NotifySettings(webhook_url=f"http://127.0.0.1:{port}/x"))
    with capture_logs() as logged:
        for batch in range(2):
            t0 = time.monotonic()
            delivery.send(question(batch))
            assert time.monotonic() - t0 < 0.2
            delivery.drain(20)
    warnings = [e["event"] for e in logged if e["log_level"] == "warning"]
    assert warnings == [warnings[0]] and "notify webhook not reached" in warnings[0]


def test_notify_on_leaves_kinds_out_and_the_bell_rings_on_a_terminal(hook: Hook) -> None:
    class Terminal:
        def __init__(self) -> None:
            self.written = ""

        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> None:
            self.written += text

        def flush(self) -> None:
            return None

    bell = Terminal()
    settings = NotifySettings(webhook_url=hook.url, bell=True, on=("wave-failed",))
    teller = Teller(settings, bell)
    teller.tell(question(1))  # not wanted
    teller.tell(document("wave-failed", "main", wave=1))
    teller.drain(10)
    assert [json.loads(b)["kind"] for _, b in hook.posts] == ["wave-failed"]
    assert bell.written == "\a"


def test_a_desktop_note_runs_notify_send_once_per_batch(tmp_path: Any, monkeypatch: Any) -> None:
    calls = tmp_path / "calls"
    fake = tmp_path / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s|%s\\n" "$1" "$2" >> {calls}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    teller = Teller(NotifySettings(desktop=True))
    for n in range(8):
        teller.tell(question(n))
    teller.drain(10)
    wait_for(lambda: calls.exists(), 5, what="notify-send")
    said = calls.read_text()
    assert said.count("wave|") == 1  # one notify-send for the 8 questions of one second
    assert said.startswith("wave|lane main, wave 1: A0 asks: which schema?\n")
    assert said.endswith("... and 3 more\n")  # the first five, and a count
