"""The errors users meet; the CLI maps each class to one exit code (see ``cli.main``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple


class WaveError(Exception):
    """Base of every error `wave` reports to a user instead of a traceback."""

    exit_code = 1


class UsageError(WaveError):
    """Bad command-line input: a flag, a missing lane, an unknown agent."""

    exit_code = 2


class NotSupportedYet(UsageError):
    """A documented flag or command whose implementation has not landed."""


class LaneProblem(NamedTuple):
    """One broken rule in one lane file, located to the YAML node that breaks it.

    A NamedTuple, not a dataclass: every command imports this module, and `dataclasses`
    (with `inspect` behind it) costs `wave --help` a third of its start-up."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


def _problem_order(problem: LaneProblem) -> tuple[Any, ...]:
    parts = re.split(r"(\d+)", problem.file)
    natural = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)
    return (natural, problem.line, problem.column)


class LaneInvalid(WaveError):
    """The lane failed validation; carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: Sequence[LaneProblem]) -> None:
        # by file (wave-2 before wave-10), then line and column: read top to bottom
        self.problems = sorted(problems, key=_problem_order)
        super().__init__("\n".join(str(p) for p in self.problems))


class LockHeld(WaveError):
    """Another launcher is active on the lane (or a dead one left live sessions)."""

    exit_code = 3


class ExecutorMissing(WaveError):
    """An agent's CLI is not on PATH; raised before any session starts."""

    exit_code = 1


class TmuxMissing(WaveError):
    """tmux is not on PATH: one line naming it and how to install it, never a traceback."""

    exit_code = 1


class PlacementError(WaveError):
    """The placement (tmux here, or a cluster's scheduler) could not start, follow or stop an
    agent; the message names the command and its own words."""

    exit_code = 1


class TmuxError(PlacementError):
    """A tmux command failed; the message names the subcommand and tmux's own words."""

    exit_code = 1


class SlurmError(PlacementError):
    """A Slurm command (sbatch, squeue, scancel...) failed or is missing."""

    exit_code = 1


class PlacementRefused(SlurmError):
    """The scheduler refused a job as submitted (a partition, account or QOS it does not
    have, an option it rejects): submitting it again cannot help, so it is never retried."""


class PlacementUnreachable(SlurmError):
    """The scheduler's controller does not answer: its jobs are unknown, not gone.
    ``given_up``: it has not answered for longer than the lane allows."""

    def __init__(self, message: str, since: float, given_up: bool = False) -> None:
        super().__init__(message)
        self.since = since  # when it stopped answering, seconds since the epoch
        self.given_up = given_up
