"""What the interactive dashboard asks of a lane beyond its state files: the cli's own commands,
run as a person would type them, so a key and a command are one behaviour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..state.layout import StateLayout


@dataclass(frozen=True)
class Done:
    """What a command said: its exit code and its words."""

    code: int
    text: str


class Fleet(Protocol):
    """What the app asks of the lane beyond its state files (the cli's commands)."""

    def command(self, argv: list[str]) -> Done:
        """`wave ARGV --lane L --repo R`, as a person would type it."""

    def attach(self, argv: list[str]) -> Done:
        """Run an attach command line on this terminal (the app is suspended meanwhile)."""

    def launcher_alive(self) -> bool:
        """Whether a launcher holds the lane now."""

    def usage(self, wave: int) -> dict[str, tuple[int | None, float | None]]:
        """Tokens and cost each agent's last finished attempt reported (metrics)."""


class Lanes(Protocol):
    """The repository's other lanes, for switching the console to one (the cli's layouts)."""

    def lanes(self) -> list[tuple[str, str]]:
        """Each lane's name and how it stands (a launcher running, its last result)."""

    def open(self, lane: str) -> tuple[StateLayout, Fleet]:
        """The lane's state layout and the fleet its keys then act on."""
