"""What can be told of each account a lane's agents use, without spending a request: its CLI
is on PATH, the CLI says it is logged in (where it has a command that asks only its own files:
``claude auth status``, ``codex login status``, ``opencode auth list``), and what wave's own
records say of its limits (parked until a reset, a rate-limit backoff its wrappers wait out).

Nothing here prints what a CLI said: a login's words may hold a key. Each answer is wave's own
words; a command that cannot run says why, and is no failure."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..definitions.model import LaneDef
from ..state.events import short_clock as clock
from ..state.fsutil import read_text
from ..state.layout import StateLayout
from ..state.ledger import ledger_path, read_ledger
from .accounts import API_KEYS, account_of

COMMAND_SECONDS = 5.0  # a login check asks local files: more is a hung CLI
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class AccountUse(NamedTuple):
    """One account, the executor it is a login of, the environment its agents run with (the
    launcher's plus theirs: what selects the login), and the lanes that use it."""

    account: str
    executor: str
    env: Mapping[str, str]
    lanes: tuple[str, ...]


class Answer(NamedTuple):
    """A check's result: True, False, or None when it cannot tell (then never a failure)."""

    ok: bool | None
    words: str


def accounts_used(lanes: list[LaneDef], environ: Mapping[str, str]) -> list[AccountUse]:
    """Every account some agent of ``lanes`` uses, on its executor or a fallback, as
    ``runtime.agent.plan`` names it (a lane account only on the executor it is a login of)."""
    found: dict[str, AccountUse] = {}
    for lane in lanes:
        for wave in lane.waves:
            for agent in wave.agents:
                ex = agent.executor
                for executor in dict.fromkeys((ex.id, *ex.fallbacks)):
                    if executor == "local":
                        continue
                    named = ex.account if executor == ex.id else None
                    account = account_of(executor, named, ex.env, environ)
                    if account is None:
                        continue
                    use = found.get(account)
                    if use is None:
                        env = {**environ, **ex.env}
                        found[account] = AccountUse(account, executor, env, (lane.name,))
                    elif lane.name not in use.lanes:
                        found[account] = use._replace(lanes=(*use.lanes, lane.name))
    return [found[name] for name in sorted(found)]


def on_path(use: AccountUse) -> str | None:
    """Where its CLI is found on the PATH its agents get (None: not found)."""
    return shutil.which(use.executor, path=use.env.get("PATH"))


def logged_in(use: AccountUse, seconds: float = COMMAND_SECONDS) -> Answer:
    """Whether its CLI says it can authenticate, asked under the account's environment."""
    keys = [v for v in API_KEYS.get(use.executor, ()) if use.env.get(v)]
    if use.executor == "codex" and keys:  # `codex login status` does not read them
        return Answer(True, f"{keys[0]} is set (checked at its first request)")
    argv = {
        "claude": ["claude", "auth", "status", "--json"],
        "codex": ["codex", "login", "status"],
        "opencode": ["opencode", "auth", "list"],
    }.get(use.executor)
    if argv is None:
        return Answer(None, f"cannot tell: {use.executor} has no login check")
    said = _run(argv, use.env, seconds)
    if isinstance(said, str):
        return Answer(None, f"cannot tell: `{' '.join(argv)}` {said}")
    code, out = said
    if use.executor == "claude":
        return _claude(code, out)
    if use.executor == "codex":
        if code in (0, 1):
            return Answer(code == 0, "logged in" if code == 0 else "not logged in")
        return Answer(None, f"cannot tell: `codex login status` exited {code}")
    return _opencode(code, out)


def _run(argv: list[str], env: Mapping[str, str], seconds: float) -> tuple[int, str] | str:
    """(exit code, stdout) of ``argv``, or why it did not run (its words are never shown)."""
    try:
        done = subprocess.run(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=seconds,
            check=False,
            cwd=env.get("HOME") or None,
        )
    except subprocess.TimeoutExpired:
        return f"gave no answer in {seconds:g}s"
    except OSError as exc:
        return f"did not start ({exc.strerror or type(exc).__name__})"
    return done.returncode, done.stdout[:65536].decode("utf-8", "replace")


def _claude(code: int, out: str) -> Answer:
    import json

    try:
        data: Any = json.loads(out)
    except ValueError:
        data = None
    state = data.get("loggedIn") if isinstance(data, dict) else None
    if not isinstance(state, bool):
        return Answer(None, f"cannot tell: `claude auth status` exited {code} with no verdict")
    method = data.get("authMethod")
    how = (
        f" ({method})" if isinstance(method, str) and re.fullmatch(r"[\w.-]{1,40}", method) else ""
    )
    return Answer(state, f"logged in{how}" if state else "not logged in")


def _opencode(code: int, out: str) -> Answer:
    """``opencode auth list`` draws boxes ending in ``N credentials`` and ``N environment
    variable(s)``: any of either is a login."""
    text = ANSI.sub("", out)
    counts = re.findall(r"(\d+) (credentials?|environment variables?)\b", text)
    if code != 0 or not counts:
        return Answer(None, f"cannot tell: `opencode auth list` exited {code} with no count")
    stored = sum(int(n) for n, kind in counts if kind.startswith("credential"))
    variables = sum(int(n) for n, kind in counts if kind.startswith("environment"))
    if stored + variables == 0:
        return Answer(False, "no credential and no provider key variable")
    return Answer(True, f"{stored} credential(s), {variables} key variable(s)")


def limit_state(lane: LaneDef, account: str, now: float | None = None) -> str | None:
    """What wave's records say ``account`` waits on in ``lane``, None: nothing. The parked
    reset from the launcher's ledger (governor.json is agents' to write); the rate-limit
    backoff its wrappers share from the state dir, read as hostile."""
    now = time.time() if now is None else now
    said = []
    try:
        view = read_ledger(ledger_path(lane.repo, lane.name))
    except (OSError, ValueError):
        view = None
    data = view.governor if view is not None else None
    until = data.get("limited_until") if isinstance(data, dict) else None
    at = until.get(account) if isinstance(until, dict) else None
    if isinstance(at, int | float) and not isinstance(at, bool) and now < at < now + 8 * 86400:
        said.append(f"parked on a usage limit until {clock(at)} (lane {lane.name})")
    backoff = backoff_until(StateLayout(lane.state_dir, lane.name).accounts, account)
    if backoff is not None and now < backoff < now + 86400:
        said.append(f"rate-limit backoff until {clock(backoff)} (lane {lane.name})")
    return "; ".join(said) or None


def backoff_until(folder: Path, account: str) -> float | None:
    """The end (epoch) of ``account``'s shared backoff, as run.sh reads it: a plain file
    of 13 digits, milliseconds (named as ``runtime.agent.plan`` names it)."""
    path = folder / hashlib.sha256(account.encode()).hexdigest()[:16]
    try:
        text = read_text(path, 64).strip()
    except (OSError, ValueError):
        return None
    return int(text) / 1000 if re.fullmatch(r"[0-9]{13}", text) else None
