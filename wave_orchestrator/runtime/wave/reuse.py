"""Finished work reused by a new run of a wave (not ``--resume``): an implementation agent
whose last attempt succeeded is not launched again while nothing that shapes its work changed.

What shapes its work is its *fingerprint*: its whole definition (prompt, role, owned paths,
deliverables, exit contract, dependencies, executor and its settings: model, reasoning,
flags), the executor it ran on, and in worktree mode the commit its branch started from. It
is recorded in the attempt's ``launch.json``; a reused agent's folder is copied into the new
run, so its output (and markers), status and branch stand for the gates, which always judge
again. A fingerprint made on an earlier base of the wave's runs still holds when the base moved
only by the wave's own work (the person merged its branch: ``base_moves``). An agent is
launched again when its fingerprint changed, when its last attempt did
not succeed, when the implementation gate that failed the earlier run named it, or when an
agent it depends on is launched again (its input changed). ``--fresh`` reuses nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agents.conversations import valid_id
from ...definitions.model import AgentDef, WaveDef
from ...sanitize import strip_controls
from ...state.fsutil import write_json_atomic
from ...state.layout import AgentPaths, StateLayout, WaveFolder
from ...state.ledger import LedgerView, success_doubt
from ...state.lifecycle import AgentState
from ...state.logs import Logger
from ...state.status import StatusUnreadable, read_status
from ...state.untrusted import read_launch_record, read_object
from ..agent.continuation import RERUN_CONTINUE, Carried

if TYPE_CHECKING:
    from .base_moves import BaseMoves
    from .context import WaveContext
    from .workspaces import Workspaces

log = Logger(__name__)
FINGERPRINT_VERSION = 2  # bumped when what goes into a fingerprint changes: nothing reused


def fingerprint(agent: AgentDef, executor: str, base: str = "") -> str:
    """A digest of what shapes an agent's work (never stored in the clear: env values may
    hold secrets)."""
    shape = {
        "version": FINGERPRINT_VERSION,
        "agent": _plain(agent),
        "executor": executor,
        "base": base,
    }
    text = json.dumps(shape, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """Mappings, tuples and paths as JSON has them, so equal definitions digest equally; a
    key whose value is empty (None, "", False, an empty list or mapping) is left out, so that
    a newer wave with one more optional setting still reuses work the older one did."""
    if hasattr(value, "_asdict"):  # a definition record: by its field names
        return _plain(value._asdict())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if not _empty(v)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _empty(value: Any) -> bool:
    if value is None or value is False:
        return True
    return isinstance(value, str | Mapping | list | tuple) and not value


def succeeded_with(paths: AgentPaths, wanted: str) -> bool:
    """Whether the agent's last attempt there succeeded, launched with fingerprint
    ``wanted`` (every field read as hostile: a torn or foreign file is no success)."""
    try:
        status = read_status(paths.status)
    except (StatusUnreadable, ValueError):
        return False
    if status is None or status.state is not AgentState.COMPLETED:
        return False
    record = read_launch_record(paths.launch_record)
    if status.attempt is not None and record.attempt != status.attempt:
        return False  # the record is of another attempt than the status
    return record.fingerprint == wanted


def earlier_attempt(paths: AgentPaths) -> int:
    """The attempt of the earlier run whose success is reused (its metrics record's id)."""
    return read_launch_record(paths.launch_record).attempt or 1


def choose_reused(
    agents: Sequence[AgentDef],
    fingerprints: Mapping[str, str],
    earlier: Mapping[str, AgentPaths],
    ledger: LedgerView | None,
    wave: int,
    rejected: Iterable[str] = (),
) -> list[str]:
    """The ids (in wave-file order) of the implementation agents a new run reuses (see
    ``judge_reuse``)."""
    again = judge_reuse(agents, fingerprints, earlier, ledger, wave, rejected)
    return [a.id for a in agents if a.id not in again]


def judge_reuse(
    agents: Sequence[AgentDef],
    fingerprints: Mapping[str, str],
    earlier: Mapping[str, AgentPaths],
    ledger: LedgerView | None,
    wave: int,
    rejected: Iterable[str] = (),
    moves: BaseMoves | None = None,
) -> dict[str, str]:
    """Why each implementation agent a new run does not reuse runs again (in wave-file
    order; an agent left out is reused). Reused: the launcher's ledger saw it end completed
    with the same fingerprint, and its files (which the gates judge again) still say so.
    Where the two disagree the work runs again, and the log says why: files alone never
    decide. In worktree mode (``moves``) the fingerprint may also be the one an earlier base
    gave, when moving from that base to the base now left the agent's files alone."""
    rejected = set(rejected)
    if ledger is None:  # a lane last run by a wave that kept no ledger, or never run
        why = success_doubt(None, wave, "", "") or ""
        if any(
            succeeded_with(earlier[a.id], fingerprints[a.id]) for a in agents if a.id in earlier
        ):
            log.warning("nothing reused", why=why)
        return {a.id: why for a in agents}
    again: dict[str, str] = {}
    for a in agents:
        if a.id in rejected:
            again[a.id] = "the implementation gate rejected its work"
        elif a.id not in earlier:
            again[a.id] = "no earlier work of it is left to reuse"
        elif doubt := _doubt(a, fingerprints[a.id], earlier[a.id], ledger, wave, moves):
            again[a.id] = doubt
    grew = True
    while grew:  # what depends on work done again is done again
        more = {
            a.id: f"it depends on {', '.join(sorted(again.keys() & set(a.depends_on)))}, "
            "which runs again"
            for a in agents
            if a.id not in again and again.keys() & set(a.depends_on)
        }
        grew = bool(more)
        again |= more
    return {a.id: again[a.id] for a in agents if a.id in again}


def _doubt(
    a: AgentDef,
    wanted: str,
    paths: AgentPaths,
    ledger: LedgerView,
    wave: int,
    moves: BaseMoves | None,
) -> str | None:
    """Why the agent's earlier success is not reused (None: it is)."""
    prints = {moves.now if moves else "": wanted}
    if moves is not None:
        prints |= {b: fingerprint(a, a.executor.id, b) for b in moves.earlier}
    seen = next((b for b, fp in prints.items() if not success_doubt(ledger, wave, a.id, fp)), None)
    kept = next((b for b, fp in prints.items() if succeeded_with(paths, fp)), None)
    if seen is not None and kept is not None:
        return moves.stale(a, (kept, seen)) if moves is not None else None
    doubt = success_doubt(ledger, wave, a.id, wanted)
    if doubt is not None and kept is not None:
        log.warning("agent not reused", agent=a.id, why=f"{doubt}; its status.json says completed")
    elif seen is not None:
        doubt = "the launcher saw it complete, but its files no longer say so"
        log.warning("agent not reused", agent=a.id, why=doubt)
    return doubt or "its earlier run did not complete"


def reusable_agents(
    ctx: WaveContext, wave: WaveDef, previous: Mapping[str, Any], workspaces: Workspaces
) -> list[str]:
    """Before a new run sets the earlier one aside: the implementation agents it reuses
    (the plan `wave rerun` shows, see ``reuse_plan``)."""
    from .reuse_plan import plan_reuse

    ledger = ctx.ledger.view if ctx.ledger else None
    return list(plan_reuse(wave, ctx.layout, ledger, previous, workspaces).reused)


def rerun_notes(previous: Mapping[str, Any]) -> dict[str, str]:
    """The agents `wave rerun` asked to run again, each with its prompt's "why you run again"
    (run-state's ``rerun``, already checked on read)."""
    rerun = previous.get("rerun")
    if not isinstance(rerun, dict):
        return {}
    reason = strip_controls(str(rerun.get("reason") or "")) or "no reason given"
    note = f"## why you are running again\nA person asked for it (`wave rerun`): {reason}\n"
    return dict.fromkeys(rerun.get("agents") or [], note)


def rerun_conversations(previous: Mapping[str, Any], earlier: WaveFolder) -> dict[str, Carried]:
    """The agents `wave rerun --continue` asked to go on, each with the executor and the
    conversation its try in the run set aside (``earlier``) had, and the person's words."""
    rerun = previous.get("rerun")
    if not isinstance(rerun, dict):
        return {}
    reason, carried = str(rerun.get("reason") or ""), {}
    for agent_id in rerun.get("continue") or []:
        record = read_launch_record(earlier.agent(agent_id).launch_record)
        conversation = valid_id(record.executor or "", record.conversation)
        if record.executor and conversation:
            carried[agent_id] = Carried(record.executor, conversation, RERUN_CONTINUE, reason)
    return carried


def carry_over(layout: StateLayout, wave: int, suffix: str, agents: Sequence[str]) -> list[str]:
    """Copy each reused agent's folder from the earlier run (set aside as ``suffix``) into
    the new one, marked reused. The agent made that folder: the copy takes regular files and
    folders only (a link, a FIFO or a device is not followed, not opened), goes by descriptor
    without recursing, and stops at 32 folders deep, 4 GiB or 20,000 entries. Returns the ids
    carried over: one that cannot be copied (too deep or big, a full disk, an unreadable
    file) is launched again instead, and the log says why."""
    earlier = layout.earlier_run(wave, suffix)
    carried = []
    for agent_id in agents:
        target = layout.agent(wave, agent_id)
        try:
            from ...state.trees import copy_plain_tree  # only once work is reused

            copy_plain_tree(
                earlier.agent(agent_id).dir,
                target.dir,
                max_depth=32,
                max_bytes=4 << 30,
                max_files=20_000,
            )
            record = read_object(target.launch_record) or {}
            write_json_atomic(target.launch_record, {**record, "reused": True})
        except (OSError, ValueError) as exc:
            shutil.rmtree(target.dir, ignore_errors=True)
            log.warning(
                "agent not reused: it runs again",
                agent=agent_id,
                why=f"its folder from the earlier run could not be copied: {exc}",
            )
            continue
        carried.append(agent_id)
    return carried
