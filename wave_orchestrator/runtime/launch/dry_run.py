"""``--dry-run``: write everything a live run would write before starting a session,
under ``dry-run/``, and start nothing — no tmux server, no agent. What it prints and previews
hides credentials by value as well as by name: the agents' env and argv (``AgentLaunch.preview``),
the sbatch line (``placement.extra`` is the lane's), warnings and the table."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from json.encoder import encode_basestring  # C, as json.dumps(ensure_ascii=False) uses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agents.executors import model_for, reasoning_for
from ...definitions.model import AgentDef, LaneDef, WaveDef
from ...governor.plan import plan_lines
from ...sanitize import redact_value
from ...state.fsutil import (
    LONE_SURROGATE,
    folders_checked_once,
    write_if_changed,
    write_new,
)
from ...state.layout import StateLayout
from ...state.lock import LaneLock
from ...state.owned_trees import prune_owned
from ..agent.confine import warnings as sandbox_warnings
from ..agent.materialize import materialize
from ..agent.plan import AgentLaunch, Planner
from ..agent.programs import ensure_agent_bin

if TYPE_CHECKING:
    from ...governor.governor import Slot
    from ..wave.workspaces import Workspaces

# opencode providers whose models define reasoning variants; an openai-compatible provider
# (any provider of your own config) ignores `--variant`.
VARIANT_PROVIDERS = ("anthropic", "google", "openai")


@dataclass
class DryRunResult:
    """What a dry run made and found, for the table it prints and the preview it writes."""

    launches: list[AgentLaunch] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    preview_path: str = ""
    warnings: list[str] = field(default_factory=list)
    worktrees: dict[tuple[int, str], dict[str, str] | None] = field(default_factory=dict)
    commands: dict[tuple[int, str], str] = field(default_factory=dict)  # sbatch lines (Slurm)
    plans: dict[int, list[str]] = field(default_factory=dict)  # the governor's, per wave

    def to_json(self) -> dict[str, Any]:
        return {
            "preview": self.preview_path,
            "missing_executables": self.missing,
            "warnings": self.warnings,
            "agents": [
                preview(
                    lc,
                    self.worktrees.get((lc.wave.number, lc.agent.id)),
                    self.commands.get((lc.wave.number, lc.agent.id)),
                )
                for lc in self.launches
            ],
        }


def agent_warnings(wave: WaveDef, agent: AgentDef) -> list[str]:
    """What would run differently from what the lane says, though it is valid: a reasoning
    level that opencode (as primary or fallback executor) passes as ``--variant`` to a
    provider that ignores it."""
    spec, out = agent.executor, []
    for executor in dict.fromkeys((spec.id, *spec.fallbacks)):
        reasoning = reasoning_for(spec, executor)
        if executor != "opencode" or not reasoning:
            continue
        model = model_for(spec, executor)
        provider = model.split("/", 1)[0] if model and "/" in model else None
        if provider in VARIANT_PROVIDERS:
            continue
        on = f"model {model}" if model else "opencode's default model"
        out.append(
            f"agent w{wave.number}/{agent.id}: reasoning {reasoning!r} goes to opencode as "
            f"--variant {reasoning}, which openai-compatible providers ignore ({on}); it takes "
            "effect only for a model that defines that variant"
        )
    return out


def preview(
    launch: AgentLaunch, worktree: dict[str, str] | None = None, command: str | None = None
) -> dict[str, Any]:
    """``launch-preview.json`` for one agent, with its warnings (and worktree, if isolated;
    and the sbatch command, on Slurm)."""
    extra: dict[str, Any] = {"worktree": worktree} if worktree else {}
    if command is not None:
        extra["sbatch"] = command
    warnings = [redact_value(w) for w in agent_warnings(launch.wave, launch.agent)]
    if launch.sandbox is not None and launch.sandbox.refused:
        warnings.append(redact_value(f"{launch.agent.id}: {launch.sandbox.refused}"))
    return {**launch.preview(), **extra, "warnings": warnings}


def placement_command(lane: LaneDef, launch: AgentLaunch) -> str | None:
    """The exact ``sbatch`` command a live launch submits for this agent (Slurm lanes only),
    with the live run's paths rather than the dry run's, and its credentials hidden."""
    if not lane.placement.slurm:
        return None
    from ...placement.slurm import SlurmPlacement  # loaded for Slurm lanes only

    live = StateLayout(lane.state_dir, lane.name).agent(launch.wave.number, launch.agent.id)
    job = launch.job()._replace(
        argv=["bash", str(live.run_script)],
        agent_dir=live.dir,
        output_log=live.output_log,
    )
    argv = SlurmPlacement(lane.placement, lane.name, lane.repo).command_line(job)
    return shlex.join(redact_value(arg) for arg in argv)


def worktree(
    lane: LaneDef, layout: StateLayout, launch: AgentLaunch, spaces: dict[int, Workspaces]
) -> dict[str, str] | None:
    """Where the agent would work if its wave is isolated (git asked once per wave, into
    ``spaces``); None in the shared checkout, for which git and worktrees are not loaded."""
    wave = launch.wave
    if not wave.isolation.worktree:
        return None
    return _spaces(lane, layout, wave, spaces).describe(launch.agent)


def _spaces(
    lane: LaneDef, layout: StateLayout, wave: WaveDef, spaces: dict[int, Workspaces]
) -> Workspaces:
    from ..wave.workspaces import Workspaces

    if wave.number not in spaces:
        spaces[wave.number] = Workspaces(lane, layout, wave)
    return spaces[wave.number]


def _plan(
    planner: Planner, wave: WaveDef, agent: AgentDef, spaces: dict[int, Workspaces]
) -> AgentLaunch:
    """The agent's plan; a sandboxed one in an isolated wave with its worktree, which its
    sandbox binds (the others need no git to be planned)."""
    tree = None
    if wave.isolation.worktree and agent.sandbox_settings.enabled:
        tree = _spaces(planner.lane, planner.layout, wave, spaces).worktree(agent)
    return planner.plan(wave, agent, worktree=tree)


def write_file(path: Path, text: str, mode: int = 0o644) -> None:
    """A new file is written in place (nobody reads a dry run's tree while it is written: its
    lock); in an earlier dry run's tree, a file is rewritten only if it changed."""
    if not write_new(path, text, mode):
        write_if_changed(path, text, mode)


def write_preview(path: Path, text: str) -> None:
    """Owner-only, like run.sh: a preview redacts what it can recognise as a secret, and a
    secret it cannot recognise must not be readable by every user of the machine."""
    write_file(path, text + "\n", mode=0o600)


def indented(value: Any) -> str:
    """``json_text(value, indent=2)`` of a preview (string keys): the json module encodes with
    indentation in pure Python, a tenth of a dry run's own work; here each string goes through
    its C encoder, in half the time."""
    text = _indented(value, "\n")
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # as json_text


_WORDS = {None: "null", True: "true", False: "false"}


def _indented(value: Any, indent: str) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{_key(k)}: {_indented(v, inner)}" for k, v in value.items()]
        return "{" + ",".join(items) + indent + "}" if items else "{}"
    if isinstance(value, list | tuple):
        items = [inner + _indented(v, inner) for v in value]
        return "[" + ",".join(items) + indent + "]" if items else "[]"
    if value is None or isinstance(value, bool):
        return _WORDS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float) and math.isfinite(value):
        return float.__repr__(value)
    return json.dumps(value)  # NaN and the infinities as json writes them; else a TypeError


def _key(key: Any) -> str:
    """A mapping's key as json writes it: a number, a bool or null in words, quoted."""
    return encode_basestring(key if isinstance(key, str) else _indented(key, ""))


def json_list(items: list[str]) -> str:
    """``indented(list)`` (``json_text(list, indent=2)``) from the items' own texts: the
    whole preview holds every agent's, and encoding it twice was a third of a dry run's work.
    A JSON text has no newline inside a string, so indenting each line nests it exactly."""
    if not items:
        return "[]"
    return "[\n" + ",\n".join("  " + item.replace("\n", "\n  ") for item in items) + "\n]"


def dry_run(lane: LaneDef, waves: list[WaveDef]) -> DryRunResult:
    """Plan every agent of ``waves`` and write what a live launch would, under ``dry-run/``,
    holding the dry run's own lock: separate from the live one, it never blocks a launch."""
    layout = StateLayout(lane.state_dir, lane.name, dry_run=True)
    lock = LaneLock(layout.lock, lane.name)
    lock.acquire()
    try:
        planner = Planner(lane, layout)
        spaces: dict[int, Workspaces] = {}  # per isolated wave
        result = DryRunResult(
            [_plan(planner, wave, agent, spaces) for wave in waves for agent in wave.agents]
        )
        write_tree(lane, layout, result, spaces)
        result.missing = [redact_value(m) for m in planner.missing_at_start(waves)]
        result.warnings += [redact_value(w) for w in sandbox_warnings(waves)]
        slots: dict[int, list[tuple[str, Slot]]] = {wave.number: [] for wave in waves}
        for lc in result.launches:  # per account, the agents and the caps that apply
            slots[lc.wave.number].append((lc.agent.id, (lc.executor, lc.account, lc.model)))
        for wave in waves:
            result.plans[wave.number] = plan_lines(lane.governance, wave, slots[wave.number])
        if lane.placement.slurm:  # the partition, account and QOS, as the cluster knows them
            from ...placement.slurm import SlurmPlacement

            problems, notes = SlurmPlacement(lane.placement, lane.name, lane.repo).preflight()
            said = [f"a live launch would stop: {p}" for p in problems] + notes
            result.warnings += [redact_value(line) for line in said]
        result.preview_path = str(layout.launch_preview)
        return result
    finally:
        lock.release()


def write_tree(
    lane: LaneDef, layout: StateLayout, result: DryRunResult, spaces: dict[int, Workspaces]
) -> None:
    """Each agent's prompt, run.sh and preview, and the whole preview. In a tree an earlier
    dry run made, what this one writes the same is left alone, and what it does not write goes."""
    launches, previews = result.launches, []
    files = [p for lc in launches for p in (lc.paths.prompt, lc.paths.run_script)]
    prune_owned(layout.base, "waves", [*files, *(lc.paths.preview for lc in launches)])
    # The folders are made and checked by this command, for this command: once each.
    with folders_checked_once():
        ensure_agent_bin(layout.agent_bin)  # once: nothing runs that could change it
        for launch in launches:
            key = (launch.wave.number, launch.agent.id)
            materialize(launch, write=write_file, live=False)
            result.worktrees[key] = worktree(lane, layout, launch, spaces)
            command = placement_command(lane, launch)
            if command is not None:
                result.commands[key] = command
            data = preview(launch, result.worktrees[key], command)
            previews.append(indented(data))
            write_preview(launch.paths.preview, previews[-1])
            result.warnings += data["warnings"]
        write_preview(layout.launch_preview, json_list(previews))


def sandbox_line(launch: AgentLaunch) -> str:
    """A sandboxed agent's line under the table; its every option, with why, is in the
    preview."""
    sandbox = launch.sandbox
    assert sandbox is not None
    if sandbox.refused:
        return f"bubblewrap: a live launch would fail it: {sandbox.refused}"
    network = "with the network" if sandbox.settings.network else "without network"
    return f"{launch.sandbox_label} ({network}; each bwrap option and why: in the preview)"


def format_table(result: DryRunResult) -> str:
    """One table per wave: agent, role, executor, model, budget, session."""
    out: list[str] = []
    header = ("agent", "role", "executor", "model", "budget", "session")
    by_wave: dict[int, list[AgentLaunch]] = {}
    for launch in result.launches:
        by_wave.setdefault(launch.wave.number, []).append(launch)
    for number, launches in by_wave.items():
        rows = [header] + [
            (
                lc.agent.id,
                lc.agent.role,
                lc.executor,
                lc.model or "-",
                f"{lc.deadline_minutes:g}m",
                lc.session,
            )
            for lc in launches
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        out.append(f"wave {number}: {launches[0].wave.title}")
        out += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in rows
        ]
        for lc in launches:
            tree = result.worktrees.get((number, lc.agent.id))
            if tree:
                out.append(
                    f"  {lc.agent.id}: worktree {tree['path']} on {tree['branch']} "
                    f"from {tree['base'][:12]}"
                    + (f" with {tree['merged_from']} merged in" if "merged_from" in tree else "")
                )
            if (number, lc.agent.id) in result.commands:
                out.append(f"  {lc.agent.id}: {result.commands[(number, lc.agent.id)]}")
            if lc.sandbox is not None:
                out.append(f"  {lc.agent.id}: sandbox {sandbox_line(lc)}")
            if lc.skills is not None:
                out.append(f"  {lc.agent.id}: skills {', '.join(lc.skills.ids)}")
            if lc.docs is not None and (picked := lc.docs.selection) is not None:
                names = ", ".join(i or n for i, n, _ in picked.libraries) or "none"
                said = "disabled" if lc.docs.mode == "disabled" else "fetched when it starts"
                out.append(
                    f"  {lc.agent.id}: library docs (Context7) bundle {picked.bundle}: {names} "
                    f"({said})"
                )
        out += [f"  {line}" for line in result.plans.get(number, [])]
        out.append("")
    if result.missing:
        out.append("warning: executables missing (a live launch would stop):")
        out += [f"  {m}" for m in result.missing]
    out += [f"warning: {w}" for w in result.warnings]
    out.append(f"dry run: nothing started; preview in {result.preview_path}")
    return redact_value("\n".join(out))  # models, accounts, paths: the lane's settings too
