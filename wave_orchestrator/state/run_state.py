"""``run-state.json``: which waves are pending, running, completed, failed or cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..names import AGENT_ID_RE
from .events import utc_now
from .fsutil import read_json, write_json_atomic
from .snapshot_schema import GATE_FIELDS
from .untrusted import count

WAVE_STATES = ("pending", "running", "completed", "failed", "cancelled")


_ENTRY_TEXT = ("started_at", "finished_at", "reason", "attempt_reason", "waiting_for")
HISTORY_LIMIT = 1000  # transitions kept: the file is rewritten after each one


def clean_entry(raw: Any) -> dict[str, Any] | None:
    """One wave's record with every field of its type: an unknown state is no state (the
    wave counts as not done), an odd attempt count is 0, other odd fields are dropped."""
    if not isinstance(raw, dict):
        return None
    state = raw.get("state")
    entry: dict[str, Any] = {"state": state if state in WAVE_STATES else "pending"}
    entry["attempts"] = count(raw.get("attempts")) or 0
    entry.update({k: raw[k][:2000] for k in _ENTRY_TEXT if isinstance(raw.get(k), str)})
    gate = raw.get("gate_failure")
    if isinstance(gate, dict):
        entry["gate_failure"] = {
            k: gate[k][:2000] for k in GATE_FIELDS if isinstance(gate.get(k), str)
        }
    if isinstance(raw.get("plan"), dict):  # checked against the wave by RetryPlan.restored
        entry["plan"] = raw["plan"]
    rerun = raw.get("rerun")  # `wave rerun`: the agents the next run must not reuse, and why
    if isinstance(rerun, dict) and isinstance(rerun.get("agents"), list):
        agents = [a for a in rerun["agents"][:100] if isinstance(a, str)]
        reason = rerun.get("reason")
        carry_on = rerun.get("continue")
        entry["rerun"] = {
            "agents": [a for a in agents if AGENT_ID_RE.fullmatch(a)],
            "reason": reason[:500] if isinstance(reason, str) else "",
            "continue": [  # `wave rerun --continue`: they continue their conversation
                a for a in carry_on[:100] if isinstance(a, str) and AGENT_ID_RE.fullmatch(a)
            ]
            if isinstance(carry_on, list)
            else [],
        }
    rejected = raw.get("rejected_agents")
    if isinstance(rejected, list):
        entry["rejected_agents"] = [
            a for a in rejected[:1000] if isinstance(a, str) and AGENT_ID_RE.fullmatch(a)
        ]
    return entry


def clean_transition(raw: Any) -> dict[str, Any] | None:
    """One history item with each field `wave lanes` shows, cut to size (None when one is
    missing or odd): the file is rewritten after every transition, and must not carry an
    agent's megabytes along."""
    if not isinstance(raw, dict):
        return None
    wave, reason = count(raw.get("wave"), minimum=1), raw.get("reason")
    states = [raw.get(k) for k in ("from", "to")]
    if (
        wave is None
        or not isinstance(raw.get("at"), str)
        or not all(isinstance(s, str) for s in states)
    ):
        return None
    return {
        "at": raw["at"][:40],
        "wave": wave,
        "from": raw["from"][:64],
        "to": raw["to"][:64],
        "reason": reason[:2000] if isinstance(reason, str) else "",
    }


class RunState:
    """Loaded once per launcher, saved atomically after every transition. The file is
    untrusted (a person may edit it): it is checked on load, and ``problem`` says what
    was wrong with it when it could not be read at all."""

    def __init__(self, path: Path, lane: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {"lane": lane, "waves": {}, "history": []}
        self.problem: str | None = None
        try:
            loaded = read_json(path)
        except FileNotFoundError:
            loaded = None
        except (OSError, ValueError) as exc:
            loaded, self.problem = None, f"{path} is unreadable ({exc}); starting from no waves"
        if not isinstance(loaded, dict):
            return
        waves = loaded.get("waves")
        for key, raw in (waves if isinstance(waves, dict) else {}).items():
            entry = clean_entry(raw)
            if key.isdigit() and len(key) < 10 and entry is not None:
                self.data["waves"][str(int(key))] = entry
        history = loaded.get("history")
        if isinstance(history, list):
            kept = (clean_transition(h) for h in history[-HISTORY_LIMIT:])
            self.data["history"] = [h for h in kept if h is not None]

    def wave(self, number: int) -> dict[str, Any]:
        entry = self.data["waves"].get(str(number))
        return entry if isinstance(entry, dict) else {"state": "pending", "attempts": 0}

    def waves_in(self, state: str | None = None) -> list[int]:
        """The wave numbers recorded (those in ``state`` only, when given), in order: the
        one reader of the waves' states that every command and the launcher share."""
        waves = self.data["waves"]
        return sorted(int(k) for k, e in waves.items() if state is None or e.get("state") == state)

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
            for done_with in ("gate_failure", "rejected_agents", "plan", "waiting_for", "rerun"):
                entry.pop(done_with, None)
        if to in ("completed", "failed", "cancelled"):
            entry["finished_at"] = now
        if reason:
            entry["reason"] = reason
        entry.update(fields)
        self.data["waves"][str(number)] = entry
        self.data["history"].append(
            {"at": now, "wave": number, "from": before, "to": to, "reason": reason}
        )
        del self.data["history"][:-HISTORY_LIMIT]
        self.save()

    def set_attempts(
        self, number: int, attempts: int, reason: str = "", plan: dict[str, Any] | None = None
    ) -> None:
        """Record the attempt now running, why it runs (empty for a first attempt) and what
        it relaunches (``plan``: what `--resume` carries on with)."""
        entry = dict(self.wave(number))
        entry["attempts"] = attempts
        if reason:
            entry["attempt_reason"] = reason
        else:
            entry.pop("attempt_reason", None)
        if plan is not None:
            entry["plan"] = plan
        else:
            entry.pop("plan", None)
        self.data["waves"][str(number)] = entry
        self.save()

    def set_waiting(self, number: int, waiting_for: str | None) -> None:
        """What a wave that has not started waits for (another lane's wave), or no more."""
        entry = dict(self.wave(number))
        if waiting_for:
            entry["waiting_for"] = waiting_for
        else:
            entry.pop("waiting_for", None)
        self.data["waves"][str(number)] = entry
        self.save()

    def ask_rerun(self, number: int, agent: str, reason: str, carry_on: bool = False) -> None:
        """`wave rerun`: the next run of the wave runs ``agent`` again (not reused), its prompt
        saying why; ``carry_on``: continuing its conversation, told ``reason``."""
        entry = dict(self.wave(number))
        asked = entry.get("rerun") or {"agents": [], "reason": ""}
        going_on = {*asked.get("continue", [])} - {agent} | ({agent} if carry_on else set())
        entry["rerun"] = {
            "agents": sorted({*asked["agents"], agent}),
            "reason": reason[:500],
            "continue": sorted(going_on),
        }
        self.data["waves"][str(number)] = entry
        self.save()

    def save(self) -> None:
        write_json_atomic(self.path, self.data)
