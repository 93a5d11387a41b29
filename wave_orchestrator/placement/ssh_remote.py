"""What wave runs on an SSH host, and reading what the host answers.

Each script is POSIX ``sh`` given as one quoted word with its values as separate arguments
(``sh -c SCRIPT sh ARG...``), so nothing a lane, an agent or a host says is ever run as code.
On the host, wave keeps everything under one root per checkout (``<workdir>/<repo tag>``):
``mirror.git`` (the bare repository fed by ``git push``), ``root/`` (this machine's paths, each
under it: the agents' folders and worktrees) and ``tmux`` (the lane's tmux socket, a path of
its own: a host may be this very machine, whose tmux must never be met).

Everything read back (panes, file contents) is hostile input: each line is checked, each file
bounded and base64 framed, and a malformed line is dropped.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

# A host path wave made or was told: absolute, no space, quote or `..` (it goes into scripts).
HOST_PATH_RE = re.compile(r"/[A-Za-z0-9_.+/-]{1,300}")
LOG_CHUNK = 1 << 18  # the most of one agent's output.log brought back per look
FILE_LIMIT = 1 << 16  # status.json, backoff.json: at most this much of each
MIRRORED = ("status.json", "backoff.json")  # what the wrapper writes beside output.log
REQ_CHUNK = 1 << 18  # the most of an agent's `wave` requests brought per look
LEFTOVERS_LIMIT = 256  # the most processes of one agent's noted as left running
# The tmux socket names whose agents' tokens a host is searched for (they go into a pattern).
SOCKET_RE = re.compile(r"[A-Za-z0-9_.+-]{1,200}")

# Makes the root and the bare mirror; prints the root, free space and what is missing, and
# "noscan" when what agents leave running cannot be searched for there (no GNU grep or /proc).
PREPARE = r"""
set -e
w=$1 tag=$2; shift 2
case $w in
  "") w=${XDG_CACHE_HOME:-$HOME/.cache}/wave ;;
  "~/"*) w=$HOME/${w#"~/"} ;;
esac
r=$w/$tag
case $r in /*) ;; *) echo "workdir $r is not absolute" >&2; exit 4 ;; esac
case $r in *[!A-Za-z0-9_.+/-]*) echo "workdir has characters wave does not use" >&2; exit 4 ;; esac
umask 077
mkdir -p "$r/root"
[ -d "$r/mirror.git" ] || git init -q --bare "$r/mirror.git" 2>/dev/null || true
printf 'root %s\n' "$r"
printf 'free %s\n' "$(df -Pk "$r" 2>/dev/null | awk 'NR==2 {print $4}')"
for p in "$@"; do command -v -- "$p" >/dev/null 2>&1 || printf 'missing %s\n' "$p"; done
printf 'x\000' | grep -qzx x 2>/dev/null && [ -r /proc/self/environ ] || echo noscan
"""

# Said of a host that answers "noscan".
NO_SCAN = (
    "what agents leave running there is not ended, only their panes' process groups"
    " (it has no GNU grep or no /proc)"
)

# Gets the agent's worktree at its commit, unpacks its files (tar on stdin, unless its host
# shares this checkout: "ship" empty) and starts its session; prints the pane's pid.
# Arguments: root, session, cwd, run.sh, agent dir, branch and commit ("" when it works in a
# shared checkout), ship.
START = r"""
set -e
r=$1 name=$2 cwd=$3 script=$4 dir=$5 branch=$6 sha=$7 ship=$8
umask 077
if [ -n "$branch" ]; then
  if [ -e "$cwd/.git" ]; then
    git -C "$cwd" checkout -q -B "$branch" "$sha" >&2
  else
    mkdir -p "$(dirname "$cwd")"
    git -C "$r/mirror.git" worktree prune >&2
    git -C "$r/mirror.git" worktree add -q -f -B "$branch" "$cwd" "$sha" >&2
  fi
fi
if [ -n "$ship" ]; then
  mkdir -p "$dir"
  rm -f "$dir/output.log" "$dir/status.json" "$dir/backoff.json"
  tar -x -f - -C "$r/root"
fi
tmux -S "$r/tmux" kill-session -t "=$name" 2>/dev/null || true
# One invocation: a server started alone, with no session, exits at once (its options too).
tmux -S "$r/tmux" start-server \; set-option -g remain-on-exit on \; \
  set-option -g history-limit 10000 \; \
  new-session -d -P -F '#{pane_pid}' -s "$name" -x 200 -y 50 -c "$cwd" \
  env PATH="$dir/bin:$PATH" bash "$script"
"""

# What an agent leaves running carries its token (WAVE_AGENT_TOKEN, "<socket>/<session>") in
# its environment, whatever its process group or session. ``scan`` reads tokens on stdin, one
# per line, none empty, and prints "left <session> <pid>" for each process of the login user
# that carries one: GNU grep over /proc (elsewhere nothing is found), given 5 s at most
# (reading a process's environment waits on its memory, which one stuck on a dead mount holds).
SCAN = r"""
scan() {
  t=; command -v timeout >/dev/null 2>&1 && t="timeout -s KILL 5"
  $t grep -aHzxoF -f - /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' |
    sed -n 's#^/proc/\([0-9][0-9]*\)/environ:WAVE_AGENT_TOKEN=.*/\([^/]*\)$#left \2 \1#p'
}
"""

# One look: every pane of the lane's server; what agents left running, searched for (with
# the lane's socket, the first half of their tokens) for each dead pane and for the ``n``
# sessions named next (ended agents whose leftovers the last look found, their panes perhaps
# gone since); then for each agent (name, folder, offset, or "offset:requests offset") what
# its `wave` requests and output.log grew by, and its status and backoff files. Ends with
# "end" (a cut answer is no look). tmux 3.3 may miss a pane's SIGCHLD, its exit status never
# coming until another child of the server ends: a dead pane with neither status nor signal
# gets one to end (run-shell waits for it), and the panes are listed again.
LOOK = (
    (
        SCAN
        + r"""
r=$1 socket=$2 n=$3; shift 3
fmt='pane #{session_name} #{pane_dead} #{pane_dead_status} #{pane_pid} #{pane_dead_signal}'
panes=$(tmux -S "$r/tmux" list-panes -a -F "$fmt" 2>/dev/null)
case $panes in *" 1  "*)
  if printf '%s\n' "$panes" | grep -q ' 1  [0-9]* $'; then
    again=$(tmux -S "$r/tmux" run-shell true \; list-panes -a -F "$fmt" 2>/dev/null) &&
      panes=$again
  fi ;;
esac
[ -z "$panes" ] || printf '%s\n' "$panes"
tokens=
while read -r _ name dead _; do
  [ "$dead" = 1 ] && [ -n "$socket" ] && tokens="${tokens:+$tokens
}WAVE_AGENT_TOKEN=$socket/$name"
done <<EOF
$panes
EOF
while [ "$n" -gt 0 ] 2>/dev/null; do
  [ -z "$socket" ] || tokens="${tokens:+$tokens
}WAVE_AGENT_TOKEN=$socket/$1"
  shift; n=$((n - 1))
done
[ -z "$tokens" ] || printf '%s\n' "$tokens" | scan
while [ $# -ge 3 ]; do
  name=$1 dir=$2 at=${3%%:*} rq=${3#*:}; shift 3
  [ "$rq" = "$at" ] && rq=0
  if [ -f "$dir/requests" ] && [ "$(wc -c < "$dir/requests")" -gt "$rq" ]; then
    printf 'req %s %s ' "$name" "$rq"
    tail -c "+$((rq + 1))" "$dir/requests" | head -c REQ_CHUNK | base64 | tr -d '\n'
    echo
  fi
  if [ -f "$dir/output.log" ]; then
    size=$(wc -c < "$dir/output.log")
    if [ "$size" -gt "$at" ]; then
      printf 'log %s %s ' "$name" "$at"
      tail -c "+$((at + 1))" "$dir/output.log" | head -c LOG_CHUNK | base64 | tr -d '\n'
      echo
    fi
  fi
  for f in MIRRORED; do
    if [ -f "$dir/$f" ]; then
      printf 'file %s %s ' "$name" "$f"
      head -c FILE_LIMIT "$dir/$f" | base64 | tr -d '\n'
      echo
    fi
  done
done
echo end
"""
    )
    .replace("LOG_CHUNK", str(LOG_CHUNK))
    .replace("FILE_LIMIT", str(FILE_LIMIT))
)
LOOK = LOOK.replace("MIRRORED", " ".join(MIRRORED)).replace("REQ_CHUNK", str(REQ_CHUNK))

# Signals a pane's process group (the wrapper and all it started) and, given the agent's
# token, every process that carries it (what left the group: setsid, a daemon).
SIGNAL = (
    SCAN
    + r"""
sig=$1 pid=$2 token=$3 sent=1
kill -s "$sig" -- "-$pid" 2>/dev/null && sent=0
if [ -n "$token" ]; then
  for p in $(printf 'WAVE_AGENT_TOKEN=%s\n' "$token" | scan | sed 's/.* //'); do
    case $p in '' | *[!0-9]*) continue ;; esac
    kill -s "$sig" "$p" 2>/dev/null && sent=0
  done
fi
exit $sent
"""
)

# Kills sessions by name; a server with none left ends.
KILL = r"""
r=$1; shift
for name in "$@"; do tmux -S "$r/tmux" kill-session -t "=$name" 2>/dev/null || true; done
"""

# An ended agent's worktree: what it left uncommitted committed on its branch, as a local
# agent's would be; prints the branch's commit (nothing when it never had a worktree there).
SETTLE = r"""
cwd=$1 branch=$2 message=$3
[ -e "$cwd/.git" ] || exit 0
if [ -n "$(git -C "$cwd" status --porcelain 2>/dev/null | head -c 1)" ]; then
  git -C "$cwd" add -A >&2 || exit 3
  git -C "$cwd" commit -q --no-verify -m "$message" >&2 || exit 3
fi
git -C "$cwd" rev-parse --verify -q "refs/heads/$branch"
"""


# Worktrees whose work is here: removed from the host's mirror (their branches stay there).
PRUNE = r"""
r=$1; shift
for cwd in "$@"; do git -C "$r/mirror.git" worktree remove --force "$cwd" 2>/dev/null || true; done
git -C "$r/mirror.git" worktree prune 2>/dev/null || true
"""


def look_limit(agents: int) -> int:
    """The most a look's answer can be for ``agents`` (base64 is 4/3 of its bytes), with room
    for the panes: what wave reads of it, so a full answer is never cut."""
    per_agent = (LOG_CHUNK + REQ_CHUNK + len(MIRRORED) * FILE_LIMIT) * 4 // 3 + 1024
    return (agents + 1) * per_agent + (1 << 20)


def script(text: str, *args: str) -> list[str]:
    """The remote words that run ``text`` with ``args`` as its positional parameters."""
    return ["sh", "-c", text, "sh", *args]


class Pane(NamedTuple):
    session: str
    dead: bool
    status: int | None
    pid: int | None


class Look(NamedTuple):
    """One look at a host: its panes, the new output of each agent, and its small files."""

    panes: dict[str, Pane]
    logs: dict[str, tuple[int, bytes]]  # session -> (offset, bytes from there)
    files: dict[tuple[str, str], bytes]  # (session, file name) -> content
    requests: Mapping[str, tuple[int, bytes]] = MappingProxyType({})  # as logs: its `wave`s
    # session (of a dead pane) -> the pids of what its agent left running
    leftovers: Mapping[str, tuple[int, ...]] = MappingProxyType({})


def read_look(text: str, sessions: Sequence[str], hunted: Sequence[str] = ()) -> Look | None:
    """A host's answer to ``LOOK``, or None when it is cut short (no ``end`` line). Only lines
    about ``sessions`` (the ones asked for) and well-formed ones count; what was left running,
    only for a pane it lists or a session of ``hunted`` (the ones searched for by name)."""
    lines = text.split("\n")
    if "end" not in lines:
        return None
    asked, searched = set(sessions), set(hunted)
    panes: dict[str, Pane] = {}
    logs: dict[str, tuple[int, bytes]] = {}
    files: dict[tuple[str, str], bytes] = {}
    requests: dict[str, tuple[int, bytes]] = {}
    leftovers: dict[str, list[int]] = {}
    for words in _split(lines):
        kind = words[0]
        if kind == "pane" and (pane := _pane(words)) is not None and pane.session not in panes:
            panes[pane.session] = pane
        elif kind == "log" and len(words) in (3, 4) and words[1] in asked:
            offset, data = _int(words[2]), _decode(words[3] if len(words) == 4 else "")
            if offset is not None and data is not None:
                logs[words[1]] = (offset, data[:LOG_CHUNK])
        elif kind == "req" and len(words) in (3, 4) and words[1] in asked:
            offset, data = _int(words[2]), _decode(words[3] if len(words) == 4 else "")
            if offset is not None and data is not None:
                requests[words[1]] = (offset, data[:REQ_CHUNK])
        elif kind == "file" and len(words) in (3, 4) and words[1] in asked:
            data = _decode(words[3] if len(words) == 4 else "")
            if words[2] in MIRRORED and data is not None:
                files[(words[1], words[2])] = data[:FILE_LIMIT]
        elif kind == "left" and len(words) == 3 and (pid := _pid(words[2])) is not None:
            known = words[1] in panes or words[1] in searched
            left = leftovers.setdefault(words[1], []) if known else []
            if len(left) < LEFTOVERS_LIMIT:
                left.append(pid)
    left_running = {name: tuple(pids) for name, pids in leftovers.items()}
    return Look(panes, logs, files, requests, left_running)


def _pane(words: Sequence[str]) -> Pane | None:
    """A ``pane`` line: its session, whether dead, exit status and pid, then the signal that
    killed it (counted as a shell does, 128 + its number); None when malformed."""
    if len(words) not in (5, 6):
        return None
    signal = words[5] if len(words) == 6 else ""
    number = _int(signal)
    if signal and (number is None or number >= 128):
        return None
    status = _int(words[3])
    if status is None and number is not None:
        status = 128 + number
    return Pane(words[1], words[2] == "1", status, _pid(words[4]))


def _split(lines: Sequence[str]) -> Iterator[list[str]]:
    for line in lines:
        words = line.split(" ")
        if words and words[0] in ("pane", "log", "file", "req", "left"):
            yield words


def _int(word: str) -> int | None:
    """A non-negative number of ASCII digits (``str.isdigit`` also takes ``²``)."""
    return int(word) if word.isascii() and word.isdigit() and len(word) < 12 else None


def _pid(word: str) -> int | None:
    """A process id: it is packed into 32 bits of a handle (beside its host's index)."""
    pid = _int(word)
    return pid if pid is not None and 0 < pid < 1 << 31 else None


def _decode(word: str) -> bytes | None:
    try:
        return base64.b64decode(word, validate=True)
    except (binascii.Error, ValueError):
        return None


def prepared(text: str) -> tuple[str | None, int | None, list[str]]:
    """What ``PREPARE`` printed: the root (None when it is no safe path), the free space in
    KiB, and the programs missing there."""
    root: str | None = None
    free: int | None = None
    missing: list[str] = []
    for line in text.splitlines()[:200]:
        key, _, value = line.partition(" ")
        if key == "root" and HOST_PATH_RE.fullmatch(value) and "/../" not in value + "/":
            root = value
        elif key == "free":
            free = _int(value)
        elif key == "missing" and value:
            missing.append(value[:100])
    return root, free, missing
