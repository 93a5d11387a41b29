"""`wave docs [TOPIC]`: the user documentation, from wherever wave is installed (a checkout's
docs/, or the copy a wheel ships), so a pipx user has the same pages as a clone."""

from __future__ import annotations

import argparse
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
    print(found[matches[0]].read_text(encoding="utf-8"), end="")
    return 0
