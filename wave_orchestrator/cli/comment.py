"""`wave comment`: a person steers a running wave by leaving guidance for an agent or a wave.

The comment is a ``guidance`` item in the coordination log: it reaches the agent's inbox at once,
goes into the prompt of every later attempt, and shows on the board as pending until the agent
acks or resolves it.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..coordination.log import PERSON, CoordLog
from ..errors import UsageError
from ..names import AGENT_ID_RE
from ._common import (
    add_json,
    add_lane,
    add_repo,
    check_recipient,
    current_wave,
    emit_json,
    person_only,
    repo_and_lane,
    state_layout,
)
from ._help import COMMAND_EXIT_CODES, exit_codes_text, wrap

EXAMPLES = """examples:
  wave comment --agent api --text "use the pagination helper in lib/page.py"
  wave comment --wave 2 --text "do not touch the public API this wave"
"""
EXAMPLES += "\n" + exit_codes_text(COMMAND_EXIT_CODES["comment"])
EXAMPLES += """

A comment for --wave N (no --agent) reaches every agent of that wave: their inboxes now, the
prompts of their later attempts, and agents that start later. An agent id or wave the lane does
not have is exit 2. Agents cannot comment: in an agent's session ($WAVE_AGENT_ID set) it is
refused; agents post with `wave coord post`.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "comment",
        help="leave guidance for a running agent (or every agent of a wave)",
        description=wrap(
            "Guidance from a person, delivered to the agent's inbox and to every later "
            "attempt's prompt, without stopping anything."
        ),
        epilog=EXAMPLES,
    )
    add_repo(p)
    add_lane(p)
    p.add_argument("--agent", metavar="ID", help="the agent it is for (default: every agent)")
    p.add_argument("--wave", type=int, metavar="N", help="default: the running wave")
    p.add_argument("--text", required=True, help="the guidance")
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    person_only("wave comment")
    if args.agent is not None and not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError(f"invalid agent id {args.agent!r}")
    if args.agent is None and args.wave is None:
        raise UsageError("for whom? pass --agent ID or --wave N")
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    wave = current_wave(args.wave, layout)
    check_recipient(repo, lane, wave, args.agent)
    log = CoordLog(layout.coordination_log(wave), wave)
    text = args.text.strip()
    rid = log.post(
        kind="guidance",
        summary=text.splitlines()[0][:300] if text else "",
        detail=text if len(text) > 300 or "\n" in text else "",
        agent=PERSON,
        source="human",
        targets=[args.agent] if args.agent else [],
    )
    if args.json:
        emit_json(log.records()[rid].to_json())
    else:
        print(rid)
    return 0
