"""Commands of the SPEC whose issues have not landed yet: they say so and exit 2."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import NotSupportedYet

PENDING = {
    "metrics": "per-run metrics report",
}


def register(sub: Any) -> None:
    for name, text in PENDING.items():
        p = sub.add_parser(name, help=f"{text} (not supported yet)")
        p.set_defaults(handler=_not_yet(name), accepts_anything=True)


def _not_yet(name: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        raise NotSupportedYet(f"`wave {name}` is not supported yet")

    return handler
