"""A small scripted agent for the demo lane and tests: no model, no network.

It reads its prompt on stdin, prints progress, edits a file in a scratch folder, prints the
markers its role needs, and can simulate one rate limit so the retry path is visible.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROLE_MARKERS = {
    "cont-eval": ["[wave-eval] state=satisfied targets=1 benchmarks=0 regressions=0"],
    "security": ["[wave-security] state=clear findings=0 approvals=0"],
    "integration": [
        "[wave-integration] state=ready-for-doc-closure claims=1 conflicts=0 blockers=0"
    ],
    "documentation": ["[wave-doc-closure] state=no-change"],
    "cont-qa": [
        "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass",
        "[wave-verdict] pass",
    ],
}


# What a role prints when it wants more work done: the gate fails and the stage is retried.
FIRST_TRY_MARKERS = {
    "integration": [
        "[wave-integration] state=needs-more-work claims=2 conflicts=1 blockers=0 "
        "detail=store and api disagree on the key format"
    ],
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="wave-demo-agent", description=__doc__)
    p.add_argument("--file", help="file to edit, relative to the repository")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.5, help="seconds per step")
    p.add_argument("--rate-limit-once", action="store_true", help="fail the first try with a 429")
    p.add_argument(
        "--needs-more-work-once",
        action="store_true",
        help="on the first attempt, print a failing marker for the role (the gate fails once)",
    )
    p.add_argument(
        "--say", action="append", default=[], metavar="LINE", help="print LINE at the end"
    )
    return p.parse_args(argv)


def simulated_rate_limit() -> bool:
    """True on the first try of an attempt (the wrapper's ``WAVE_TRY``): nothing is written to
    remember it, so it works where the agent may write only its work (a sandbox)."""
    return os.environ.get("WAVE_TRY", "1") == "1"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    agent = os.environ.get("WAVE_AGENT_ID", "demo")
    role = os.environ.get("WAVE_ROLE", "implementation")
    prompt = sys.stdin.read()
    task = next(
        (ln for ln in prompt.split("## task", 1)[-1].splitlines() if ln.strip()), "(no task)"
    )
    print(f"demo agent {agent} ({role}) starting: {task.strip()}", flush=True)
    if args.rate_limit_once and simulated_rate_limit():
        print("Error: 429 Too Many Requests (simulated by the demo agent)", flush=True)
        return 1
    print("[wave-phase] coding", flush=True)
    for step in range(1, args.steps + 1):
        time.sleep(args.delay)
        print(f"step {step}/{args.steps}: working", flush=True)
    if args.file:
        target = Path(os.environ.get("WAVE_REPO", ".")) / args.file
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as fh:
            fh.write(f"- {agent} ({role}) wrote this at {time.strftime('%H:%M:%S')}\n")
            if role == "cont-qa":
                fh.write("Verdict: PASS\n")
        print(f"edited {args.file}", flush=True)
    print("[wave-phase] finalizing", flush=True)
    first_attempt = os.environ.get("WAVE_ATTEMPT", "1") == "1"
    markers = FIRST_TRY_MARKERS if args.needs_more_work_once and first_attempt else ROLE_MARKERS
    for line in [*markers.get(role, ROLE_MARKERS.get(role, [])), *args.say]:
        print(line, flush=True)
    print(f"demo agent {agent} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
