"""`wave coord` and `wave feedback` for an agent on an SSH host.

wave is not installed on a host. Its agents get a small ``wave`` there (``SHIM``, first on
their PATH) that appends the command's words to ``requests`` in the agent's folder and waits
for the answer in ``answers/``. The host's follower brings the requests here with its look;
the launcher runs each one with this machine's wave, as that agent and as a sandboxed agent
would (its posts and questions go to its own outboxes, merged under its name: an agent on a
host speaks only for itself), and writes the answer back over the host's connection.

A request line is hostile input: an id of digits, at most ``MAX_WORDS`` base64 words, only
the ``coord`` and ``feedback`` commands; anything else is answered with an error.
"""

from __future__ import annotations

import base64
import binascii
import os
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..self_command import wave_argv
from ..state.fsutil import ensure_dir, write_new
from ..state.layout import StateLayout
from ..state.logs import Logger
from .ssh_client import SshClient
from .ssh_remote import script

log = Logger(__name__)

COMMANDS = ("coord", "feedback")  # what an agent on a host may ask wave to run
MAX_WORDS = 64
MAX_WORD = 16 << 10
ANSWER_LIMIT = 1 << 20  # what of a command's output goes back
REQUEST_SECONDS = 24 * 3600  # `wave feedback ask --wait` waits for a person

# `wave` on the host: its words to `requests`, its answer from `answers/`.
SHIM = r"""#!/bin/sh
# wave for an agent on an SSH host: the launcher runs its `wave coord` and `wave feedback`
# as this agent, and answers here.
dir=$(cd "$(dirname "$0")/.." && pwd)
id="$(date +%s)$$"
line="req $id"
for word in "$@"; do
  if [ -z "$word" ]; then line="$line -"
  else line="$line $(printf '%s' "$word" | base64 | tr -d '\n')"; fi
done
mkdir -p "$dir/answers"
printf '%s\n' "$line" >> "$dir/requests"
while [ ! -f "$dir/answers/$id.code" ]; do sleep 0.2; done
cat "$dir/answers/$id.out"
cat "$dir/answers/$id.err" >&2
code=$(cat "$dir/answers/$id.code")
rm -f "$dir/answers/$id.out" "$dir/answers/$id.err" "$dir/answers/$id.code"
exit "$code"
"""

# An answer: its output on stdin, its error words and exit code as arguments; the code last.
ANSWER = r"""
d=$1/answers id=$2 code=$3 err=$4
mkdir -p "$d"
cat > "$d/$id.out"
printf '%s' "$err" > "$d/$id.err"
printf '%s' "$code" > "$d/$id.code.tmp" && mv "$d/$id.code.tmp" "$d/$id.code"
"""


def parse(line: bytes) -> tuple[str, list[str]] | None:
    """(id, words) of a request line, or None when it is not one wave's shim writes."""
    parts = line.decode("ascii", "replace").split(" ")
    if len(parts) < 2 or parts[0] != "req" or len(parts) > MAX_WORDS + 2:
        return None
    rid = parts[1]
    if not (rid.isascii() and rid.isdigit() and len(rid) <= 30):
        return None
    words = []
    for part in parts[2:]:
        try:
            word = b"" if part == "-" else base64.b64decode(part, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(word) > MAX_WORD:
            return None
        words.append(word.decode("utf-8", "replace"))
    return rid, words


class Requests:
    """Runs the requests of a launch's agents on hosts, a few at once (a question waits for
    a person), and answers each on its host."""

    def __init__(self, layout: StateLayout, repo: Path) -> None:
        self.layout, self.repo = layout, repo
        self._pool = ThreadPoolExecutor(4, "wave-ssh-request")
        self._running: set[subprocess.Popen[bytes]] = set()  # ended with the launch
        self._lock = threading.Lock()
        self._closed = False

    def take(self, client: SshClient, host_dir: str, session: str, line: bytes) -> None:
        """One request line of ``session``'s agent (``w<n>-<id>``), whose folder on its host
        is ``host_dir``: run off the follower's thread, answered there."""
        found = parse(line)
        if found is None:
            log.warning("request from a host dropped", session=session)
            return
        rid, words = found
        wave, _, agent = session[1:].partition("-")
        self._pool.submit(self._answer, client, host_dir, rid, int(wave), agent, words)

    def _answer(
        self, client: SshClient, host_dir: str, rid: str, wave: int, agent: str, words: list[str]
    ) -> None:
        code, out, err = self._run(wave, agent, words)
        answer = script(ANSWER, host_dir, rid, str(code), err[:MAX_WORD])
        client.run(answer, out[:ANSWER_LIMIT], timeout=60)

    def _run(self, wave: int, agent: str, words: Sequence[str]) -> tuple[int, bytes, str]:
        if not words or words[0] not in COMMANDS:
            said = f"wave: on an SSH host an agent may run: {', '.join(COMMANDS)}\n"
            return 2, b"", said
        outboxes = self.layout.outboxes(wave)
        ensure_dir(outboxes.dir)
        for path in (outboxes.coordination(agent), outboxes.questions(agent)):
            write_new(path, "")  # its own outboxes (already there: kept as they are)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WAVE_")}
        env |= {
            "WAVE_LANE": self.layout.lane,
            "WAVE_REPO": str(self.repo),
            "WAVE_WAVE": str(wave),
            "WAVE_NUMBER": str(wave),
            "WAVE_AGENT_ID": agent,
            "WAVE_SANDBOX": "ssh",  # it speaks only for itself, through its outboxes
        }
        argv = wave_argv(*words)
        pipe = subprocess.PIPE
        try:
            with self._lock:
                if self._closed:
                    return 1, b"", "wave: the launch has ended\n"
                proc = subprocess.Popen(
                    argv, cwd=self.repo, env=env, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe
                )
                self._running.add(proc)
            try:
                out, err = proc.communicate(timeout=REQUEST_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            finally:
                with self._lock:
                    self._running.discard(proc)
        except OSError as exc:
            return 1, b"", f"wave: {exc}\n"
        return proc.returncode, out, err.decode("utf-8", "replace")

    def close(self) -> None:
        """No new request runs; one still running (a question waiting for a person) ends
        with the launch, which would otherwise wait for it."""
        with self._lock:
            self._closed = True
            for proc in self._running:
                proc.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)
