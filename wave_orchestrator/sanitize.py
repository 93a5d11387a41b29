"""Making untrusted text safe to show: secrets redacted, terminal control sequences stripped.

It sits below every room because the dry-run preview, the tmux placement, the dashboard,
`wave status` and the metrics table all show text that came from a lane file, the environment
or an agent, and each must hide the same secrets and drop the same escapes.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

REDACTED = "***"

# A variable whose name says it holds a credential. Matched on `_`-separated words so that
# `PATH` or `PWD_DIR` are not caught by `PW`, while `DB_PASS`, `GITHUB_PAT` and `MY_APIKEY` are.
SECRET_WORDS = (
    "KEY",
    "KEYS",
    "APIKEY",
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "PWD",
    "PAT",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "AUTHORIZATION",
    "PRIVATE",
    "COOKIE",
    "COOKIES",
    "SESSION",
    "SIGNATURE",
    "DSN",
    "BEARER",
    "JWT",
    "OAUTH",
    "CERT",
)
# Names that contain a secret word as a plain substring (no `_` around it) are also secrets,
# for the long words only: APIKEY, ANTHROPIC_APIKEY, GHTOKEN, DBPASSWORD.
SECRET_SUBSTRINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE")
# Names the shell and wave set that are never secrets although a word matches (`PWD`).
NOT_SECRET_NAMES = frozenset(
    {
        "PWD",
        "OLDPWD",
        "WAVE_SESSION",
        "XDG_SESSION_ID",
        "XDG_SESSION_TYPE",
        "XDG_SESSION_CLASS",
        "XDG_SESSION_DESKTOP",
        "DESKTOP_SESSION",
        "SSH_AUTH_SOCK",
        "KEYTIMEOUT",
    }
)

# Values that are credentials whatever their name: known token prefixes and URL passwords.
TOKEN_VALUE_RE = re.compile(
    r"""(?x)
    \b(?:
        gh[pousr]_[A-Za-z0-9]{20,}            # GitHub tokens
      | github_pat_[A-Za-z0-9_]{20,}          # GitHub fine-grained tokens
      | sk-[A-Za-z0-9_-]{16,}                 # OpenAI, Anthropic (sk-ant-...)
      | xox[abposr]-[A-Za-z0-9-]{10,}         # Slack
      | (?:AKIA|ASIA)[0-9A-Z]{16}             # AWS access key ids
      | AIza[0-9A-Za-z_-]{30,}                # Google API keys
      | glpat-[A-Za-z0-9_-]{20,}              # GitLab
      | npm_[A-Za-z0-9]{30,}                  # npm
      | hf_[A-Za-z0-9]{30,}                   # Hugging Face
      | eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}  # a JWT
    )"""
)
# scheme://user:password@host: the password is hidden, the rest kept for debugging.
URL_PASSWORD_RE = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@\s/]+(?=@)")
# A long run of token characters, judged by its entropy (see ``looks_random``).
LONG_RUN_RE = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential (remembered: a dry run asks
    about the same few names for every agent)."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    words = [w for w in re.split(r"[^A-Z0-9]+", upper) if w]
    if any(w in SECRET_WORDS for w in words):
        return True
    return any(s in upper for s in SECRET_SUBSTRINGS)


def looks_random(text: str) -> bool:
    """A long string with the entropy of a key (not a path, a word list or a hex colour)."""
    if len(text) < 32 or text.count("/") > 2:  # a path, not a key
        return False
    counts = Counter(text)
    entropy = -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
    classes = sum(
        1 for test in (str.isdigit, str.islower, str.isupper) if any(test(c) for c in text)
    )
    return entropy >= 4.0 and classes == 3


def redact_value(value: str) -> str:
    """``value`` with URL passwords and token-looking parts replaced by ``***``."""
    out = URL_PASSWORD_RE.sub(lambda m: m.group("head") + REDACTED, value)
    out = TOKEN_VALUE_RE.sub(REDACTED, out)
    return LONG_RUN_RE.sub(lambda m: REDACTED if looks_random(m.group()) else m.group(), out)


def secret_value(value: str) -> bool:
    """Whether ``value`` holds a credential that ``redact_value`` would hide."""
    return redact_value(value) != value


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment fit to show: secret names hidden whole, secret values hidden in part."""
    return {k: REDACTED if secret_name(k) else redact_value(v) for k, v in env.items()}


def is_secret(name: str, value: str) -> bool:
    """Whether a variable must not be shown or spread (by its name or by its value)."""
    return secret_name(name) or secret_value(value)


# -- terminal control sequences --------------------------------------------------------------
# CSI (ESC [ or the 8-bit CSI), OSC / DCS / SOS / PM / APC strings up to their terminator
# (BEL or ST, 7- or 8-bit) or the end of the text, two-byte escapes (ESC c resets the terminal),
# then any C0 or C1 control left. ``\n`` and ``\t`` survive only where the caller allows them.
CONTROL_RE = re.compile(
    r"""(?x)
      (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?
    | (?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?
    | \x1b[ -/]*[0-~]?
    | [\x00-\x08\x0b-\x1f\x7f-\x9f]
    """
)
SGR_RE = re.compile(r"\x1b\[[0-9;:]*m")


def strip_controls(text: str, *, newlines: bool = False, keep_colour: bool = False) -> str:
    """``text`` without control sequences; tabs become spaces, and newlines stay only when
    ``newlines`` is set (a one-line field stays one line). ``keep_colour`` keeps SGR colours."""
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    if not newlines:
        text = text.replace("\n", " ")
    if keep_colour:
        return CONTROL_RE.sub(lambda m: m.group() if SGR_RE.fullmatch(m.group()) else "", text)
    return CONTROL_RE.sub("", text)


_LEFT_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a sequence left behind


def one_line(text: str) -> str:
    """One line of agent text, safe for a terminal and for markdown list items."""
    return _LEFT_CONTROLS.sub("", strip_controls(text.replace("\n", " "))).strip()


def safe_text(text: str, *, newlines: bool = False) -> str:
    """``text`` fit to print where a person pastes it (a bug report, a terminal): no control
    sequence and no credential. Stripped first, so an escape inside a token cannot hide it."""
    return redact_value(strip_controls(text, newlines=newlines))


def clean_tree(value: Any, *, redact: bool = False) -> Any:
    """A JSON-like value with every string (keys too) stripped of control sequences: what a
    dashboard or `wave status` reads from a state file is shown, never obeyed. ``redact``
    hides credentials by value too (``safe_text``): for settings and environments printed."""
    if isinstance(value, str):
        return safe_text(value) if redact else strip_controls(value)
    if isinstance(value, list):
        return [clean_tree(v, redact=redact) for v in value]
    if isinstance(value, dict):
        return {
            clean_tree(k, redact=redact) if isinstance(k, str) else k: clean_tree(v, redact=redact)
            for k, v in value.items()
        }
    return value
