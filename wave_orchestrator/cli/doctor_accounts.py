"""`wave doctor`'s lines for each account the lanes' agents use (``governor.account_health``):
its CLI is there, the CLI says it is logged in, and the limits wave has on record for it. The
CLIs are asked at once, each for a few seconds at most: a hung one costs one wait, not one per
account. An account whose CLI is missing everywhere gets no line of its own (its executor's
line says so) unless a limit of it is on record."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .doctor import LOGIN_HINT, Check

if TYPE_CHECKING:
    from ..governor.account_health import AccountUse, Answer


def account_checks(lanes: list[Any]) -> list[Check]:
    from ..governor.account_health import accounts_used, limit_state, logged_in, on_path

    uses = accounts_used(lanes, os.environ)
    if not uses:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(uses))) as pool:
        answers = list(pool.map(lambda use: logged_in(use) if on_path(use) else None, uses))
    checks = []
    for use, answer in zip(uses, answers, strict=True):
        name = f"account {use.account}"
        on_record = [
            s for lane in lanes if lane.name in use.lanes if (s := limit_state(lane, use.account))
        ]
        if answer is not None or shutil.which(use.executor) is not None:
            checks.append(_login(use, answer))
        elif not on_record:
            continue
        if on_record:
            said = "; ".join(on_record) + ": its agents wait until then"
            checks.append(Check(f"{name} limits", False, said, blocking=False, informational=True))
        else:
            checks.append(Check(f"{name} limits", True, "none on record"))
    return checks


def _login(use: AccountUse, answer: Answer | None) -> Check:
    """Its CLI's verdict: a failure only when the CLI says it is logged out."""
    name, who = f"account {use.account} login", f"(lanes: {', '.join(use.lanes)})"
    if answer is None:
        said = f"cannot tell: {use.executor} is not on the PATH its agents get {who}"
        return Check(name, False, said, blocking=False)
    if answer.ok is None:
        return Check(name, False, f"{answer.words} {who}", blocking=False, informational=True)
    if answer.ok:
        return Check(name, True, f"{answer.words} {who}")
    fix = LOGIN_HINT.get(use.executor, "")
    return Check(
        name, False, f"{answer.words}, its CLI says {who}: its agents fail; fix: {fix}", fix=fix
    )
