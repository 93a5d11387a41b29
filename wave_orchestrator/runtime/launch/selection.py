"""What a launch runs: the lane with the command line's overrides, and the waves selected.
Its own module so that a dry run loads it without the launcher's main loop (start-up speed)."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ...definitions.loading.lane_loader import load_lane
from ...definitions.model import EMPTY, LaneDef, WaveDef
from ...errors import UsageError

if TYPE_CHECKING:
    from ...state.ledger import LedgerView
    from ...state.run_state import RunState


class LaunchOptions(NamedTuple):
    """`wave launch`'s choices: which waves, and what the flags override in lane.yaml."""

    lane: str
    start_wave: int | None = None
    end_wave: int | None = None
    auto_next: bool = False
    dry_run: bool = False
    keep_sessions: bool = False
    keep_worktrees: bool = False
    no_dashboard: bool = False
    resume: bool = False
    fresh: bool = False  # a new run reuses no earlier run's finished work
    executor: str | None = None
    quiet: bool = False
    overrides: Mapping[str, Any] = EMPTY


def apply_overrides(lane: LaneDef, overrides: Mapping[str, Any]) -> LaneDef:
    """Command-line flags override lane.yaml defaults."""
    rate = {
        k.removeprefix("rate_limit_"): v
        for k, v in overrides.items()
        if k.startswith("rate_limit_") and v is not None
    }
    plain = {
        k: v for k, v in overrides.items() if not k.startswith("rate_limit_") and v is not None
    }
    policy = lane.defaults.rate_limit._replace(**rate)
    if policy.max_delay_seconds < policy.base_delay_seconds:
        raise UsageError("--rate-limit-max-delay-seconds must be >= the base delay")
    defaults = lane.defaults._replace(rate_limit=policy, **plain)
    return lane._replace(defaults=defaults)


def select_waves(lane: LaneDef, opts: LaunchOptions, completed: Container[int]) -> list[WaveDef]:
    """The waves a launch runs: the range asked for, less (``--auto-next``, ``--resume``)
    those ``completed`` (by the launcher's ledger, never by run-state.json alone)."""
    waves = [
        w
        for w in lane.waves
        if (opts.start_wave is None or w.number >= opts.start_wave)
        and (opts.end_wave is None or w.number <= opts.end_wave)
    ]
    if opts.auto_next or opts.resume:
        waves = [w for w in waves if w.number not in completed]
    if not waves and not (opts.auto_next or opts.resume):
        first = opts.start_wave if opts.start_wave is not None else "the first"
        last = opts.end_wave if opts.end_wave is not None else "the last"
        numbers = ", ".join(str(w.number) for w in lane.waves)
        raise UsageError(
            f"no waves of lane {lane.name!r} from {first} to {last} (waves: {numbers})"
        )
    return waves


def prepare_lane(repo: Path, opts: LaunchOptions) -> LaneDef:
    lane = load_lane(repo, opts.lane, default_executor=opts.executor)
    return apply_overrides(lane, opts.overrides)


def completed_waves(
    ledger: LedgerView | None, run_state: RunState, warn: Callable[[str], None]
) -> set[int]:
    """The waves the launcher's ledger saw complete; a wave run-state.json alone calls
    completed is not one, and ``warn`` says so."""
    done = {n for n, state in (ledger.waves.items() if ledger else ()) if state == "completed"}
    for number in run_state.waves_in("completed"):
        if number not in done:
            warn(
                f"run-state.json says wave {number} completed, but no launcher saw it complete "
                "(its ledger has no such record): it runs"
            )
    return done
