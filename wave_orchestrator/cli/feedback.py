"""`wave feedback`: an agent asks a person a question; a person lists and answers them.

Agents run `ask` bare (lane, wave and agent from their WAVE_* environment). With --wait the
agent blocks until the answer comes and reads it on stdout, or exits 4 when it times out. In
an agent's sandbox the question goes to the agent's own outbox, asked by it whatever --agent
says, and the launcher asks the person (coordination/outbox.py).
"""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from typing import Any

from ..coordination.feedback import FeedbackRequest, FeedbackStore, answer_command
from ..errors import UsageError
from ..names import AGENT_ID_RE
from ..sanitize import one_line as clean
from ._common import (
    agent_action,
    current_wave,
    emit_json,
    person_only,
    repo_and_lane,
    seconds,
    state_layout,
)
from ._help import COMMAND_EXIT_CODES, exit_codes_text, wrap

EXAMPLES = """examples:
  wave feedback ask --question "keep the v1 endpoint?" --context "clients X, Y" --wait
  wave feedback list --pending
  wave feedback respond q-1a2b3c4d --response "yes, keep it until March"
"""
EXAMPLES += "\n" + exit_codes_text(COMMAND_EXIT_CODES["feedback"])


def register(sub: Any) -> None:
    p = sub.add_parser(
        "feedback",
        help="questions from agents to a person: ask, list, show, respond, watch",
        description=wrap(
            "An agent that meets an ambiguity asks a person instead of guessing; the "
            "launcher shows the question and the exact command to answer it."
        ),
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="feedback_command", metavar="ACTION", required=True)
    ask = _action(actions, "ask", "ask a person a question (prints its id)", _ask)
    ask.add_argument("--question", required=True, help="what you need to know")
    ask.add_argument("--context", default="", help="what the person needs to answer it")
    ask.add_argument("--wait", action="store_true", help="block until answered; print the answer")
    ask.add_argument(
        "--timeout-seconds", type=seconds, metavar="S", help="with --wait: give up after S (exit 4)"
    )
    lst = _action(actions, "list", "the lane's questions, newest first", _list)
    lst.add_argument("--pending", action="store_true", help="only unanswered ones")
    show = _action(actions, "show", "one question and its answer", _show)
    show.add_argument("request_id", metavar="ID", help="the question's id (q-...)")
    respond = _action(actions, "respond", "answer a question", _respond)
    respond.add_argument("request_id", metavar="ID", help="the question's id (q-...)")
    respond.add_argument("--response", required=True, help="your answer")
    respond.add_argument("--operator", default=None, help="your name (default: your login)")
    respond.add_argument("--force", action="store_true", help="replace an earlier answer")
    watch = _action(actions, "watch", "live list of pending questions (Ctrl-C ends)", _watch)
    watch.add_argument("--interval", type=seconds, default=1.0, help=argparse.SUPPRESS)
    watch.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)


def _action(actions: Any, name: str, text: str, handler: Any) -> argparse.ArgumentParser:
    return agent_action(actions, name, text, handler, "who asks (default: $WAVE_AGENT_ID)")


def _store(args: argparse.Namespace) -> tuple[FeedbackStore, Any]:
    repo, lane = repo_and_lane(args)
    layout = state_layout(repo, lane)
    return FeedbackStore(layout.feedback, lane, layout.coordination_log), layout


def _ask(args: argparse.Namespace) -> int:
    store, layout = _store(args)
    if not args.agent or not AGENT_ID_RE.fullmatch(args.agent):
        raise UsageError("who asks? pass --agent ID (agents get $WAVE_AGENT_ID)")
    request = store.ask(current_wave(args.wave, layout), args.agent, args.question, args.context)
    if not args.wait:
        if args.json:
            emit_json(request.to_json())
        else:
            print(request.id)
        return 0
    answered = store.wait(request.id, args.timeout_seconds)
    if args.json:
        emit_json(answered.to_json())
    elif answered.response is not None:
        print(answered.response.text)
    return 0


def _describe(r: FeedbackRequest) -> str:
    head = (
        f"{clean(r.id)}  {clean(r.status):<8} wave {r.wave} {clean(r.agent)}: {clean(r.question)}"
    )
    if r.response is not None:
        head += f"\n    answer from {clean(r.response.operator)}: {clean(r.response.text)}"
    return head


def _list(args: argparse.Namespace) -> int:
    store, _ = _store(args)
    items = sorted(store.requests().values(), key=lambda r: r.created_at, reverse=True)
    items = [r for r in items if r.status == "pending" or not args.pending]
    if args.json:
        emit_json([r.to_json() for r in items])
        return 0
    for r in items:
        print(_describe(r))
    if not items:
        print("no pending questions" if args.pending else "no questions")
    return 0


def _show(args: argparse.Namespace) -> int:
    store, _ = _store(args)
    r = store.get(args.request_id)
    if args.json:
        emit_json(r.to_json())
        return 0
    print(_describe(r))
    if r.context:
        print(f"    context: {clean(r.context)}")
    return 0


def _respond(args: argparse.Namespace) -> int:
    person_only("wave feedback respond")
    store, _ = _store(args)
    operator = args.operator or _login()
    r = store.respond(args.request_id, args.response, operator, force=args.force)
    if args.json:
        emit_json(r.to_json())
    else:
        print(f"answered {r.id} ({r.agent}, wave {r.wave})")
    return 0


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


def _watch(args: argparse.Namespace) -> int:
    store, _ = _store(args)
    try:
        _watch_loop(store, args)
    except KeyboardInterrupt:  # Ctrl-C is how a watch ends
        print()
    return 0


def _watch_loop(store: FeedbackStore, args: argparse.Namespace) -> None:
    """On a terminal, the pending list redrawn each interval; to a pipe or a file, one line
    per change only (a question that came, one that was answered), never the list again."""
    rounds = 0
    before_ids: dict[str, FeedbackRequest] | None = None
    redraw = sys.stdout.isatty()
    while True:
        pending = sorted(store.pending(), key=lambda r: r.created_at)
        if redraw:
            print(f"\x1b[2J\x1b[H{len(pending)} pending question(s) ({time.strftime('%H:%M:%S')})")
            for r in pending:
                print(_describe(r))
                print(f"    answer: {answer_command(r.id, store.lane)}")
        else:
            now = {r.id: r for r in pending}
            if before_ids is None:
                print(f"{len(pending)} pending question(s) ({time.strftime('%H:%M:%S')})")
            seen: dict[str, FeedbackRequest] = before_ids or {}
            for r in pending if before_ids is None else [r for r in pending if r.id not in seen]:
                print(f"pending {_describe(r)}")
                print(f"    answer: {answer_command(r.id, store.lane)}")
            for gone in [i for i in seen if i not in now]:
                print(f"no longer pending {clean(gone)}")
            before_ids = now
            sys.stdout.flush()
        rounds += 1
        if args.count and rounds >= args.count:
            return
        time.sleep(args.interval)
