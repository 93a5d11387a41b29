"""`wave docs [TOPIC]`: the user documentation, from wherever wave is installed (a checkout's
docs/, or the copy a wheel ships), so a pipx user has the same pages as a clone."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._help import add_command


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "docs",
        "print the user documentation (the pages shipped with wave)",
        "Print one page of wave's documentation, or list the pages. They are the docs/ pages "
        "of the wave repository, shipped inside the package: what `--help` points to works "
        "after `pipx install` too.",
        [
            ("wave docs", "the pages, with their titles"),
            ("wave docs lanes", "lane.yaml and wave files, every key"),
            ("wave docs cli | less", "every command"),
        ],
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a page: lanes, cli, operating...")
    p.set_defaults(handler=run)


def docs_folder() -> Path:
    """The checkout's docs/ when wave runs from one, else the copy inside the package."""
    package = Path(__file__).resolve().parents[1]
    for folder in (package.parent / "docs", package / "docs"):
        if folder.is_dir() and any(folder.glob("*.md")):
            return folder
    raise UsageError(
        "no documentation found next to this wave (a build without docs/); read "
        "docs/ in the wave repository"
    )


# A file only a clone of wave's repository has (its benchmarks, tests, developer scripts), as
# the pages' prose cites it; paths inside code blocks are the reader's own files.
CHECKOUT_PATH = re.compile(r"`(?:bench|scripts|tests)/[^`\s]*`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CLONE = "a clone of wave's repository"
NOTE = (
    "> The paths of wave's own benchmarks, tests and scripts on this page (`bench/...`,\n"
    f"> `scripts/...`, `tests/...`) are files of {CLONE}: an installed wave does not have them.\n"
)


def cites_checkout(text: str) -> bool:
    return bool(CHECKOUT_PATH.search(FENCE.sub("", text)))


def from_checkout(folder: Path) -> bool:
    """Whether the pages are a checkout's own docs/, next to the files they cite."""
    return folder == Path(__file__).resolve().parents[2] / "docs"


def for_reader(text: str, checkout: bool) -> str:
    """The page as its reader can use it: outside a checkout, a page that cites the
    checkout's files says so under its title (unless its opening already does)."""
    if checkout or not cites_checkout(text):
        return text
    if CLONE in text.split("\n## ", 1)[0]:
        return text
    lines = text.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
    return "\n".join([*lines[:at], "", NOTE.rstrip("\n"), *lines[at:]])


def pages() -> dict[str, Path]:
    return {page.stem: page for page in sorted(docs_folder().glob("*.md"))}


def title(page: Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


def run(args: argparse.Namespace) -> int:
    found = pages()
    if not args.topic:
        width = max(map(len, found))
        for name, page in found.items():
            print(f"{name:<{width}}  {title(page)}")
        print(f"\n`wave docs TOPIC` prints one ({docs_folder()})")
        return 0
    name = args.topic.removesuffix(".md")
    matches = [n for n in found if n == name] or [n for n in found if n.startswith(name)]
    if len(matches) != 1:
        import difflib  # only to name the closest pages of a wrong topic

        close = difflib.get_close_matches(name, found, n=3) or matches
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"no page {args.topic!r}{hint} (pages: {', '.join(found)})")
    page = found[matches[0]]
    print(for_reader(page.read_text(encoding="utf-8"), from_checkout(page.parent)), end="")
    return 0
