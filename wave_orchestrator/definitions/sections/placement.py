"""``placement`` of a lane (``local``, ``ssh`` or a Slurm block), and the ``cpus``/``mem`` a
wave or an agent may override: where each agent's ``run.sh`` runs (an ssh lane's hosts are its
``ssh:`` section, ``sections/ssh.py``)."""

from __future__ import annotations

import re
from typing import Any

from ..model import PlacementSettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

KINDS = ("local", "slurm", "ssh")
LANE_KEYS = (
    "kind",
    "partition",
    "account",
    "qos",
    "cpus",
    "mem",
    "extra",
    "tmux",
    "unreachable_minutes",
)
OVERRIDE_KEYS = ("cpus", "mem")  # what a wave or an agent may change
MEM_RE = re.compile(r"[1-9][0-9]*[KMGT]?")  # sbatch --mem: a size, megabytes without a unit
SLURM_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")  # partition, account, qos


def check_lane_placement(ck: Checker, value: Any) -> PlacementSettings:
    """A lane's ``placement:``: ``local`` (the default), ``ssh`` or ``{kind: slurm, ...}``."""
    if value is None or value == "local":
        return PlacementSettings()
    if value in ("slurm", "ssh"):
        return PlacementSettings(kind=value)
    if isinstance(value, str):
        expected = "local, slurm, ssh or a mapping"
        ck.error(("placement",), f"unknown placement {value!r}", expected)
        return PlacementSettings()
    raw = ck.mapping(value, ("placement",), LANE_KEYS)
    if raw is None:
        return PlacementSettings()
    kind = ck.string(raw.get("kind", "local"), ("placement", "kind"), choices=KINDS, noun="kind")
    out = PlacementSettings(kind=kind or "local")
    names: dict[str, str | None] = {}
    for key in ("partition", "account", "qos"):
        if raw.get(key) is not None:
            name = ck.string(raw[key], ("placement", key))
            if name is not None and not SLURM_NAME_RE.fullmatch(name):
                ck.error(("placement", key), f"invalid {key} {name!r}", "a Slurm name")
                name = None
            names[key] = name
    out = out._replace(
        partition=names.get("partition"), account=names.get("account"), qos=names.get("qos")
    )
    if "extra" in raw:
        extra = ck.string_list(raw["extra"], ("placement", "extra")) or []
        for i, arg in enumerate(extra):
            if not arg.startswith("-"):
                ck.error(("placement", "extra", i), f"not an option: {arg!r}", "--option=value")
            elif owned := wave_owned_option(arg):
                option, instead = owned
                given = arg.split("=", 1)[0]
                said = f"{given}{f' ({option})' if given != option else ''} is set by wave itself"
                ck.error(("placement", "extra", i), said, instead)
        out = out._replace(extra=tuple(extra))
    if "tmux" in raw:
        # A tmux server inside each job: a person attaches to a pane, not to `tail -f`.
        out = out._replace(tmux=bool(ck.boolean(raw["tmux"], ("placement", "tmux"))))
    if "unreachable_minutes" in raw:  # a controller that restarts is waited for this long
        path = ("placement", "unreachable_minutes")
        minutes = ck.number(raw["unreachable_minutes"], path, positive=True)
        out = out._replace(unreachable_minutes=float(minutes or out.unreachable_minutes))
    if out.kind != "slurm":  # cpus and mem are accepted, and unused
        slurm_only = [k for k in raw if k not in ("kind", "cpus", "mem")]
        for key in slurm_only:
            ck.error(("placement", key), f"{key} is a Slurm setting", "kind: slurm")
    return check_overrides(ck, raw, out, ("placement",))


# The sbatch options wave sets on every job (or that would take the job out of its hands), with
# what to use instead. `placement.extra` may not set them: a job named otherwise cannot be found,
# an output elsewhere is a log nobody reads, `--wait` blocks the launcher.
WAVE_OWNED_OPTIONS: dict[str, tuple[str, str]] = {
    "job-name": ("J", "none: wave names each job after its repository, lane and agent"),
    "output": ("o", "none: the job writes the agent's output.log"),
    "error": ("e", "none: stderr goes to the agent's output.log"),
    "input": ("i", "none: agents read no stdin"),
    "chdir": ("D", "none: the job starts where the agent works"),
    "export": ("", "the executor's env: setting"),
    "export-file": ("", "the executor's env: setting"),
    "parsable": ("", "none: wave asks for it"),
    "wrap": ("", "none: wave submits the agent's run.sh"),
    "dependency": ("d", "depends_on: in the wave file"),
    "time": ("t", "timeout_minutes: (the job's --time follows the agent's budget)"),
    "open-mode": ("", "none: wave appends to the agent's log"),
    "array": ("a", "one agent per job: list the agents in the wave file"),
    "nodes": ("N", "none: an agent is one task on one node"),
    "ntasks": ("n", "none: an agent is one task on one node"),
    "cpus-per-task": ("c", "placement.cpus"),
    "mem": ("", "placement.mem"),
    "partition": ("p", "placement.partition"),
    "account": ("A", "placement.account"),
    "qos": ("q", "placement.qos"),
    "wait": ("W", "none: the launcher follows the job itself"),
    "test-only": ("", "wave launch --dry-run"),
    "hold": ("H", "none: a held job never starts its agent"),
}


def wave_owned_option(arg: str) -> tuple[str, str] | None:
    """(``--option``, what to use instead) when ``arg`` sets an option wave owns: by its long
    name, an abbreviation sbatch would take for it (``--job=x``, ``--out=``), or its short
    letter (``-J x``, ``-Jx``); else None."""
    if arg.startswith("--"):
        given = arg[2:].split("=", 1)[0]
        for name, (_, instead) in WAVE_OWNED_OPTIONS.items():
            if given and name.startswith(given):
                return f"--{name}", instead
        return None
    letter = arg[1:2]
    for name, (short, instead) in WAVE_OWNED_OPTIONS.items():
        if short and letter == short:
            return f"--{name}", instead
    return None


def check_overrides(
    ck: Checker, raw: Any, inherited: PlacementSettings, where: FieldPath
) -> PlacementSettings:
    """``cpus`` and ``mem`` of ``raw`` over ``inherited`` (a wave's or an agent's
    ``placement:`` block, or the lane's own)."""
    out = inherited
    if "cpus" in raw:
        cpus = ck.number(raw["cpus"], (*where, "cpus"), integer=True, positive=True)
        out = out._replace(cpus=int(cpus)) if cpus is not None else out
    if "mem" in raw:
        mem = raw["mem"]
        text = str(mem) if isinstance(mem, int) and not isinstance(mem, bool) else mem
        got = ck.string(text, (*where, "mem"), what="a size such as 2G or 500M")
        if got is not None and not MEM_RE.fullmatch(got):
            ck.error((*where, "mem"), f"invalid size {got!r}", "a size such as 2G or 500M")
            got = None
        out = out._replace(mem=got or out.mem)
    return out


def check_placement_override(
    ck: Checker, value: Any, inherited: PlacementSettings, where: FieldPath = ()
) -> PlacementSettings:
    """A wave's or an agent's ``placement: {cpus, mem}``: the lane chose the placement."""
    if value is None:
        return inherited
    path: FieldPath = (*where, "placement")
    raw = ck.mapping(value, path, OVERRIDE_KEYS)
    if raw is None:
        return inherited
    return check_overrides(ck, raw, inherited, path)
