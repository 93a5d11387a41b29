"""docs/coordination.md's worked example keeps the question in the file its notify command
writes: the lane, loaded as wave loads it, hands that command questions and nothing else (a
`lane-done` or `wave-completed` after the answer would overwrite the question)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import NOTIFY_KINDS
from wave_orchestrator.notify.sinks import Teller

PAGE = Path(__file__).resolve().parent.parent / "docs" / "coordination.md"


class Recorder:
    """Stands in for the command: what it would have been run with."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, doc: dict[str, Any]) -> None:
        self.sent.append(doc["kind"])


def test_the_worked_example_stores_only_questions(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    files = dict(re.findall(r"```yaml\n# (lanes/talk/[\w./-]+)\n(.*?)```", text, re.S))
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    notify = load_lane(tmp_path, "talk").notify
    assert notify.command and "last-question.json" in " ".join(notify.command)
    teller = Teller(notify)
    recorder = Recorder()
    teller.command = recorder  # type: ignore[assignment]
    for kind in NOTIFY_KINDS:
        teller.tell({"kind": kind, "lane": "talk", "wave": 1})
    assert recorder.sent == ["question"]
