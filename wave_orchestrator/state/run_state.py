"""``run-state.json``: which waves are pending, running, completed, failed or cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .events import utc_now
from .fsutil import read_json, write_json_atomic

WAVE_STATES = ("pending", "running", "completed", "failed", "cancelled")


class RunState:
    """Loaded once per launcher, saved atomically after every transition."""

    def __init__(self, path: Path, lane: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {"lane": lane, "waves": {}, "history": []}
        try:
            loaded = read_json(path)
        except (OSError, ValueError):
            loaded = None
        if isinstance(loaded, dict) and isinstance(loaded.get("waves"), dict):
            self.data["waves"] = loaded["waves"]
            history = loaded.get("history")
            self.data["history"] = history if isinstance(history, list) else []

    def wave(self, number: int) -> dict[str, Any]:
        entry = self.data["waves"].get(str(number))
        return entry if isinstance(entry, dict) else {"state": "pending", "attempts": 0}

    def state_of(self, number: int) -> str:
        return str(self.wave(number).get("state", "pending"))

    def transition(self, number: int, to: str, reason: str = "", **fields: Any) -> None:
        entry = dict(self.wave(number))
        before = entry.get("state", "pending")
        entry["state"] = to
        now = utc_now()
        if to == "running" and before != "running":
            entry["started_at"] = now
            entry.pop("finished_at", None)
            entry.pop("reason", None)
        if to in ("completed", "failed", "cancelled"):
            entry["finished_at"] = now
        if reason:
            entry["reason"] = reason
        entry.update(fields)
        self.data["waves"][str(number)] = entry
        self.data["history"].append(
            {"at": now, "wave": number, "from": before, "to": to, "reason": reason}
        )
        self.save()

    def set_attempts(self, number: int, attempts: int, reason: str = "") -> None:
        """Record the attempt now running and why it runs (empty for a first attempt)."""
        entry = dict(self.wave(number))
        entry["attempts"] = attempts
        if reason:
            entry["attempt_reason"] = reason
        else:
            entry.pop("attempt_reason", None)
        self.data["waves"][str(number)] = entry
        self.save()

    def save(self) -> None:
        write_json_atomic(self.path, self.data)
