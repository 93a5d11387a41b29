"""What getting-started.md shows of the demo lane is what a newcomer sees (issue 23): the
launch's lines and `wave status`, compared line by line once times, pids and hashes are
set aside (the order of agents that run side by side may differ)."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from helpers import Repo

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "docs"
VARIABLE = [
    (re.compile(r"\d{2}:\d{2}:\d{2}\.\d{3}Z"), "HH:MM:SS.mmmZ"),
    (re.compile(r"elapsed \d+s"), "elapsed Ns"),
    (re.compile(r"wave-demo-[0-9a-f]{8}|wave-test-[\w-]+|libtmux_test\w+"), "SOCKET"),
    (re.compile(r" {2,}"), " "),
]


def shape(line: str) -> str:
    for pattern, word in VARIABLE:
        line = pattern.sub(word, line)
    return line.strip()


def console_block(page: str, command: str) -> list[str]:
    """The output lines a page shows after ``$ command`` (up to the next prompt)."""
    text = (DOCS / page).read_text()
    block = text.split(f"```console\n$ {command}\n", 1)[1].split("```", 1)[0]
    return [line for line in block.split("\n$ ", 1)[0].splitlines() if line]


def test_getting_started_shows_what_the_demo_prints(tmux_repo: Repo) -> None:
    shutil.copytree(DOCS.parent / "lanes" / "demo", tmux_repo.root / "lanes" / "demo")
    launch = tmux_repo.wave("launch", "--lane", "demo", timeout=180)
    assert launch.returncode == 0, launch.stderr
    shown = [shape(x) for x in console_block("getting-started.md", "wave launch --lane demo")]
    real = [shape(x) for x in (launch.stderr + launch.stdout).splitlines() if x]
    assert Counter(shown) == Counter(real), "\n".join(
        [f"only in the docs: {x}" for x in (Counter(shown) - Counter(real))]
        + [f"only in reality: {x}" for x in (Counter(real) - Counter(shown))]
    )
    status = tmux_repo.wave("status", "--lane", "demo")
    shown = [shape(x) for x in console_block("getting-started.md", "wave status --lane demo")]
    real = [shape(x) for x in status.stdout.splitlines() if x]
    pairs = zip(shown, real, strict=False)
    assert shown == real, "\n".join(f"docs: {a}\nreal: {b}" for a, b in pairs if a != b)
