"""`wave summary`: an agent's execution summary, what its gate decision read."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..sanitize import clean_tree
from ..state.untrusted import read_object
from ._common import (
    add_agent_argument,
    add_json,
    add_lane,
    add_repo,
    emit_json,
    repo_and_lane,
    state_layout,
)
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "summary",
        "an agent's execution summary: markers, files, how it ended, the gate's verdict",
        "Print the summary wave wrote when the agent's last attempt ended, rewritten after "
        "each gate that judged it (summary.json beside its status.json): how it ended and "
        "why (with a hint), each marker the gates read, its deliverables and proof artifacts "
        "with whether they exist and when they were written, the verdict of its stage's gate "
        "on it, and where its log and report are. It is what a gate decision was made on, "
        "without reading the raw log.",
        [
            ("wave summary A1", "agent A1 in its latest wave"),
            ("wave summary qa --wave 2 --json", "the whole summary.json of qa in wave 2"),
        ],
    )
    add_repo(p)
    add_lane(p)
    add_agent_argument(p, "agent", metavar="AGENT", help="agent id, as in the wave file (e.g. A1)")
    p.add_argument(
        "--wave", type=int, metavar="N", help="the wave, when the agent id is in several"
    )
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from .logs import find_agent_wave

    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    wave = args.wave if args.wave is not None else find_agent_wave(layout, args.agent)
    path = layout.agent(wave, args.agent).summary
    data = read_object(path)
    if data is None:
        raise UsageError(
            f"no summary of agent {args.agent!r} in wave {wave} yet ({path}): it is written "
            "when the agent ends"
        )
    data = clean_tree(data)  # written by wave, but under .wave/: shown, never obeyed
    if args.json:
        emit_json(data)
    else:
        print("\n".join(render(data)))
    return 0


def render(data: dict[str, Any]) -> list[str]:
    """The summary for a person: one fact per line, the gate's verdict first."""
    verdict = _dict(data.get("verdict"))
    end = _dict(data.get("termination"))
    reused = " (reused from an earlier run)" if data.get("reused") is True else ""
    lines = [
        f"agent {data.get('agent')} of wave {data.get('wave')}, attempt {data.get('attempt')}"
        f"{reused}: {data.get('status')}, exit {_text(data.get('exit_code'))}, "
        f"{data.get('role')} on {data.get('executor')}",
    ]
    if end.get("hint"):
        lines.append(f"  why it ended: {end.get('detail') or end.get('reason')}; {end['hint']}")
    gates = ", ".join(str(g) for g in verdict.get("gates") or []) or "none yet"
    failures = [f for f in verdict.get("failures") or [] if isinstance(f, dict)]
    passed = "passed" if verdict.get("passed") is True else "failed" if failures else "not judged"
    lines.append(f"  gate ({gates}): {passed}")
    lines += [f"    {f.get('code')}: {f.get('detail')}" for f in failures]
    lines += [f"    warning: {w}" for w in verdict.get("warnings") or [] if isinstance(w, str)]
    markers = _dict(data.get("markers"))
    for kind, marker in markers.items():
        marker = _dict(marker)
        said = f"  (invalid: {marker['invalid']})" if marker.get("invalid") else ""
        lines.append(f"  marker {kind}: {marker.get('line')}{said}")
    if not markers:
        lines.append("  markers: none")
    for key, title in (("deliverables", "deliverable"), ("proof_artifacts", "proof artifact")):
        for item in data.get(key) or []:
            item = _dict(item)
            when = f"written {item['modified_at']}" if item.get("exists") else "MISSING"
            gate = f" (for the {item['gate']} gate)" if item.get("gate") else ""
            lines.append(f"  {title} {item.get('path')}{gate}: {when}")
    if data.get("report"):
        written = "written" if data.get("report_written") else "NOT written in this run"
        lines.append(f"  report: {data['report']} ({written})")
    lines.append(f"  log: {data.get('log')}")
    return lines


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return "-" if value is None else str(value)
