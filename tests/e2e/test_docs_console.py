"""What the docs show a newcomer is what wave prints (issue 23): every console block of the
demo lane and of `wave init` is run, command by command, in a repository of its own, and each
output compared line by line once times, pids, sockets, hashes and the repository's path are
set aside (agents that run side by side may print in another order: a launch is compared as a
multiset of lines)."""

from __future__ import annotations

import re
import shlex
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import Repo

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "docs"
VARIABLE = [
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"), "ISO-TIME"),
    (re.compile(r"\d{2}:\d{2}:\d{2}\.\d{3}Z"), "HH:MM:SS.mmmZ"),
    (re.compile(r"\bpid \d+"), "pid N"),
    (re.compile(r'"duration_ms": \d+'), '"duration_ms": N'),
    (re.compile(r"\b\d+h\d{2}m\b|\b\d+m\d{2}s\b"), "DURATION"),
    (re.compile(r"\b\d+(\.\d+)?s\b"), "Ns"),
    (re.compile(r"wave-[\w-]+?-[0-9a-f]{8}\b|wave-test-[\w-]+|libtmux_test\w+"), "SOCKET"),
    (re.compile(r"/\S*?/\.wave/"), "REPO/.wave/"),
    (re.compile(r" {2,}"), " "),
]


def shape(line: str) -> str:
    for pattern, word in VARIABLE:
        line = pattern.sub(word, line)
    return line.strip()


@dataclass(frozen=True)
class Shown:
    """One command of a console block and the lines the page shows it print."""

    page: str
    line: int
    command: str
    output: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: $ {self.command}"


def console_commands(page: str) -> Iterator[Shown]:
    """Every ``$ command`` of every ```console block of ``page``, with its output lines."""
    lines = (DOCS / page).read_text().splitlines()
    inside = False
    current: tuple[int, str] | None = None
    output: list[str] = []
    for number, text in enumerate(lines, 1):
        if text.startswith("```"):
            if inside and current is not None:
                yield Shown(page, current[0], current[1], tuple(output))
            inside, current, output = text.startswith("```console"), None, []
        elif inside and text.startswith("$ "):
            if current is not None:
                yield Shown(page, current[0], current[1], tuple(output))
            current, output = (number, text[2:].split("  #", 1)[0].strip()), []
        elif inside and text:
            output.append(text)


INIT_COMMANDS = {"wave init", "wave validate --lane main", "wave launch --lane main --dry-run"}


def in_scenario(scenario: str, shown: Shown) -> bool:
    if scenario == "demo":  # lanes.md's demo block shows a lane broken on purpose
        return "--lane demo" in shown.command and shown.page != "lanes.md"
    # worktrees.md's `--lane main` is a worktree lane of its own, not what init writes
    return shown.command in INIT_COMMANDS and shown.page != "worktrees.md"


def blocks_of(scenario: str) -> list[Shown]:
    """The commands of every page that belong to ``scenario`` (the demo lane, or a fresh
    `wave init`), each followed by the `echo $?` that reads its exit code; getting-started
    first, since it is where the demo is launched."""
    found = []
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    for page in sorted(pages, key=lambda name: name != "getting-started.md"):
        commands = list(console_commands(page))
        for index, shown in enumerate(commands):
            after = shown.command == "echo $?" and found and found[-1] == commands[index - 1]
            if in_scenario(scenario, shown) or after:
                found.append(shown)
    return found


def files_to_write(page: str) -> dict[str, str]:
    """The files ``page`` tells the reader to write: a ```yaml block right under a line that
    is a path in backticks followed by a colon (`lanes/main/lane.yaml`:)."""
    text = (DOCS / page).read_text()
    return dict(re.findall(r"^`([\w./-]+)`:\n\n```yaml\n(.*?)```", text, re.M | re.S))


Patterns = Sequence[tuple[re.Pattern[str], str]]


def compare(shown: Shown, printed: str, any_order: bool = False, extra: Patterns = ()) -> None:
    """``printed`` against the page, line by line once shaped (``extra`` first: what else
    varies on that page); a `...` line of the page stands for any lines, none or many."""

    def shaped(line: str) -> str:
        for pattern, word in extra:
            line = pattern.sub(word, line)
        return shape(line)

    want = [shaped(x) for x in shown.output]
    real = [shaped(x) for x in printed.splitlines() if x.strip()]
    if any_order:
        assert Counter(want) == Counter(real), f"{shown}\n" + "\n".join(
            [f"only in the docs: {x}" for x in (Counter(want) - Counter(real))]
            + [f"only in reality: {x}" for x in (Counter(real) - Counter(want))]
        )
    elif "..." in want:
        _elided(shown, want, real)
    else:
        pairs = zip(want, real, strict=False)
        assert want == real, f"{shown}\n" + "\n".join(
            [f"docs: {a}\nreal: {b}" for a, b in pairs if a != b]
            + [f"length: docs {len(want)}, real {len(real)}"]
        )


def _elided(shown: Shown, want: list[str], real: list[str]) -> None:
    """Each line of the page in order; after a `...` anywhere later, and the lines after the
    last `...` as the last lines printed."""
    at = 0
    for i, line in enumerate(want):
        if line == "...":
            continue
        if i == 0 or want[i - 1] != "...":  # right after the line before it
            assert real[at : at + 1] == [line], f"{shown}\nwanted here: {line}\nreal: {real}"
            at += 1
            continue
        if "..." not in want[i + 1 :]:  # the tail: the last lines
            tail = want[i:]
            assert real[-len(tail) :] == tail, f"{shown}\nwanted at the end: {tail}\nreal: {real}"
            return
        found = [j for j in range(at, len(real)) if real[j] == line]
        assert found, f"{shown}\nnot printed: {line}\nreal: {real}"
        at = found[0] + 1


def lane_files(page: str, lane: str) -> dict[str, str]:
    """The lane files ``page`` shows: each ```yaml block whose first line names one
    (`# lanes/<lane>/...`)."""
    text = (DOCS / page).read_text()
    return dict(re.findall(rf"```yaml\n# (lanes/{lane}/[\w./-]+)\n(.*?)```", text, re.S))


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)


def run_blocks(repo: Repo, commands: list[Shown]) -> int:
    """Run each command in ``repo`` and compare what it prints with the page; returns how
    many were compared."""
    code = 0
    for shown in commands:
        if shown.command == "echo $?":
            assert [str(code)] == list(shown.output), shown
            continue
        argv = shlex.split(shown.command)
        assert argv[0] == "wave", shown
        done = repo.wave(*argv[1:], timeout=180)
        code = done.returncode
        launch = argv[1] == "launch" and "--dry-run" not in argv
        compare(shown, done.stderr + done.stdout, any_order=launch)
    return len(commands)


def test_every_demo_block_shows_what_the_demo_prints(tmux_repo: Repo) -> None:
    shutil.copytree(DOCS.parent / "lanes" / "demo", tmux_repo.root / "lanes" / "demo")
    commands = blocks_of("demo")
    pages = {c.page for c in commands}
    assert {"getting-started.md", "cli.md"} <= pages, pages
    first = [c.command for c in commands[:1]]
    assert first == ["wave launch --lane demo"], first  # the rest read what it left
    assert run_blocks(tmux_repo, commands) >= 10


def test_every_init_block_shows_what_a_fresh_init_prints(repo: Repo) -> None:
    """As a newcomer without any agent CLI installed: init, validate, the dry run."""
    repo.env["PATH"] = ":".join(
        p
        for p in repo.env["PATH"].split(":")
        if not any((Path(p) / cli).exists() for cli in ("codex", "claude", "opencode"))
    )
    commands = blocks_of("init")
    assert len({c.page for c in commands if c.command == "wave init"}) == 2, commands
    seen = 0
    for page in sorted({c.page for c in commands}):
        shutil.rmtree(repo.root / "lanes", ignore_errors=True)
        (repo.root / ".gitignore").unlink(missing_ok=True)
        init, rest = (
            [c for c in commands if c.page == page and c.command == "wave init"],
            [c for c in commands if c.page == page and c.command != "wave init"],
        )
        seen += run_blocks(repo, init)
        for name, body in files_to_write(page).items():  # what the reader edits after init
            (repo.root / name).write_text(body)
        seen += run_blocks(repo, rest)
    assert seen >= 4
