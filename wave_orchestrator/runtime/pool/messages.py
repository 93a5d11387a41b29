"""What the agent pool needs from the coordination layer, and nothing more: a cheap look for
news, who waits on a person, and what a launching agent should read first. The launcher gives
the pool its coordinator (runtime/coordinator.py); tests and dry runs give it none.
"""

from __future__ import annotations

from typing import Any, Protocol


class Messages(Protocol):
    """The coordination layer as the pool sees it (runtime/coordinator.py implements it)."""

    def tick(self) -> bool: ...

    def waiting_human(self) -> frozenset[str]: ...

    def prompt_context(self, agent_id: str) -> str: ...

    def flush(self) -> None: ...

    def tell_person(self, payload: dict[str, Any]) -> None: ...


class NoMessages:
    def tick(self) -> bool:
        return False

    def waiting_human(self) -> frozenset[str]:
        return frozenset()

    def prompt_context(self, agent_id: str) -> str:
        return ""

    def flush(self) -> None:
        return None

    def tell_person(self, payload: dict[str, Any]) -> None:
        return None
