"""The docs as a newcomer pastes them (issue 23): every command a console block shows exists
with the flags it is shown with, docs/cli.md lists and describes every command, and the
pages ship with the package (`wave docs`)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from wave_orchestrator.cli import COMMANDS, build_parser, hoist_global_options

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted([*DOCS.glob("*.md"), DOCS.parent / "README.md"])
BLOCK_RE = re.compile(r"```(console|sh|bash)\n(.*?)```", re.S)


def shown_commands() -> list[tuple[str, str, bool]]:
    """(page, command line) of every `wave ...` a console block runs (its `$ ` lines) or a
    shell block holds (a line with `[--option]` is a synopsis, not a command)."""
    found = []
    for page in PAGES:
        for kind, block in BLOCK_RE.findall(page.read_text()):
            lines = block.splitlines()
            for i, line in enumerate(lines):
                if kind == "console" and not line.startswith("$ "):
                    continue  # output
                # shown failing on purpose: its output is a usage error
                output = lines[
                    i + 1 : next(
                        (j for j in range(i + 1, len(lines)) if lines[j].startswith("$ ")),
                        len(lines),
                    )
                ]
                refused = any(": error: " in x for x in output)
                line = line.removeprefix("$ ").split(" >", 1)[0].strip()
                if "[" in line:
                    continue
                for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
                    if part.startswith("wave ") or part == "wave":
                        command = part.split("  #")[0].split(" # ")[0]
                        found.append((page.name, command, refused))
    return found


@pytest.mark.parametrize(("page", "line", "refused"), shown_commands())
def test_every_command_the_docs_show_parses(page: str, line: str, refused: bool) -> None:
    """As shown: accepted, or refused with a usage error where the page shows one."""
    argv = hoist_global_options(shlex.split(line)[1:])
    err = io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    assert (code == 2) == refused, f"{page}: `{line}`: {err.getvalue().strip()}"


def test_cli_md_lists_and_describes_every_command() -> None:
    text = (DOCS / "cli.md").read_text()
    block = text.split("<!-- commands -->\n```\n", 1)[1].split("```", 1)[0]
    listed = {line.split()[1]: line.split(None, 2)[2] for line in block.splitlines()}
    assert listed == COMMANDS
    for name in COMMANDS:
        assert f"\n## wave {name}\n" in text, f"docs/cli.md has no section for wave {name}"
