"""Generates each agent's ``run.sh``: the rate-limit retry loop and the status file. A usage
limit it sees in a try's last lines ends the tries; whether it was one is the launcher's
verdict (``agents/limits.py``: the CLI's own error channel), never the status file's.

Every value is passed through ``shlex.quote`` into a fixed template, so nothing from a YAML file
can change the script's structure. The script is plain bash a person can read and rerun. It
exports the agent's environment, PATH included, before its loop: each tool of its own is named
by the absolute path found on the launcher's PATH when it is written (builtins need none).
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..definitions.model import RateLimitPolicy

q = shlex.quote


class WrapperSpec(NamedTuple):
    """Everything run.sh is written from; each value is shell-quoted when it is rendered."""

    lane: str
    wave: int
    agent: str
    attempt: int
    repo: str
    agent_dir: str
    prompt_file: str
    prompt_sha256: str
    argv: Sequence[str]
    env: Mapping[str, str]
    rate_limit: RateLimitPolicy
    env_file: str | None = None
    tools: Mapping[str, str] | None = None  # tool name -> path; None: found on our PATH
    model: str | None = None  # for the run's footer line in output.log
    account: str | None = None  # what its usage counts against (governor.accounts)
    account_backoff: str | None = None  # that account's backoff file, shared by its wrappers
    orchestrator_id: str = ""  # the launcher that wrote it, in its status file
    # From the second try on: the argv and stdin that go on with the first try's conversation
    # (claude refuses the id it was given once it has used it); empty: every try is the same.
    retry_argv: Sequence[str] = ()
    retry_prompt_file: str = ""


# Every program run.sh itself starts; it refers to each as "$bin_<name>".
WRAPPER_TOOLS = (
    "date",
    "grep",
    "head",
    "mv",
    "rm",
    "sed",
    "sleep",
    "stat",
    "tail",
    "timeout",
    "touch",
)


def wrapper_tools(path: str | None = None) -> dict[str, str]:
    """Each wrapper tool's absolute path on ``path`` (default: the launcher's PATH); a tool
    that is not found keeps its bare name, for the agent's PATH to resolve."""
    return dict(_find_tools(path if path is not None else os.environ.get("PATH", os.defpath)))


@functools.lru_cache(maxsize=8)
def _find_tools(search: str) -> tuple[tuple[str, str], ...]:
    found = {}
    for name in WRAPPER_TOOLS:
        where = shutil.which(name, path=search)
        found[name] = os.path.abspath(where) if where else name
    return tuple(found.items())


@functools.lru_cache(maxsize=8)
def _tools_line(tools: tuple[tuple[str, str], ...]) -> str:
    """``bin_date=/usr/bin/date bin_grep=...``: the same for every agent of a launch."""
    return " ".join(f"bin_{name}={q(path)}" for name, path in sorted(tools))


@functools.lru_cache(maxsize=64)
def _array(name: str, items: tuple[str, ...], flag: str = "") -> str:
    """A bash array ``name=(...)``; a lane's patterns are the same for each of its agents."""
    return f"{name}=({' '.join(f'{flag} {q(item)}' if flag else q(item) for item in items)})"


_BODY = r"""
# The fast path (an agent that ends well) starts no process but the agent, its shower and
# the `mv` of its status: each fork costs a wave's closure stages and a burst's finishes.
now() {  # now VAR: the UTC time as 2026-01-31T12:00:00.123Z, in VAR, by builtins alone
  local t=${EPOCHREALTIME/[^0-9]/.}  # its decimal point is the locale's
  TZ=UTC0 printf -v "$1" '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "${t%.*}" "${t:${#t}-6:3}"
}
# ANSI escape sequences (CSI, OSC, then any other ESC sequence) are removed before a pattern
# is matched: opencode prints `\e[91m\e[1mError: \e[0m...`, which a pattern reads as `Error: ...`.
esc=$'\e' bel=$'\a'
strip_ansi="s/${esc}\\[[0-?]*[ -/]*[@-~]//g; s/${esc}\\][^${bel}${esc}]*(${bel}|${esc}\\\\)//g; s/${esc}[ -/]*[0-~]//g"
# The output of the current try only: from the size the log had when the try began.
try_output() { "$bin_tail" -c "+$(( $1 + 1 ))" -- "$log" | LC_ALL=C "$bin_sed" -E "$strip_ansi"; }
try_matches() {  # try_matches OFFSET -e PATTERN...   (no pipefail: grep -q may end tail early)
  local offset=$1; shift
  try_output "$offset" | LC_ALL=C.UTF-8 "$bin_grep" -Eiq "$@"
}
# A usage limit is looked for in the try's last lines only, where a CLI prints the error it
# ends on: a transcript that quotes one earlier must not end the tries. This only stops the
# tries; the launcher judges the try again from the CLI's own error channel (agents/limits.py).
tail_matches() {  # tail_matches OFFSET -e PATTERN...
  local offset=$1; shift
  try_output "$offset" | "$bin_tail" -n 20 | LC_ALL=C.UTF-8 "$bin_grep" -Eiq "$@"
}
first_match() {  # first_match OFFSET -e PATTERN...: the first text that matched at the end
  local offset=$1; shift
  try_output "$offset" | "$bin_tail" -n 20 | LC_ALL=C.UTF-8 "$bin_grep" -Eio -m1 "$@" \
    | "$bin_head" -n 1
}
seconds() { if (( $1 % 1000 == 0 )); then echo $(( $1 / 1000 )); else printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )); fi; }
write_backoff() {  # write_backoff DELAY_MS [1: the account's wait, not this try's limit]
  local tmp="$agent_dir/.backoff.json.$$"
  printf '{"try": %d, "tries": %d, "delay_ms": %d, "until_ms": %d, "account_wait": %d}\n' \
    "$try" "$tries" "$1" $(( $("$bin_date" +%s%3N) + $1 )) "${2:-0}" > "$tmp" \
    && "$bin_mv" -f -- "$tmp" "$agent_dir/backoff.json"
}
say() {  # say LINE: into the log, and the pane when it shows the output
  printf '%s\n' "$1" >> "$log"
  if (( shows )); then printf '%s\n' "$1"; fi
}
# One backoff per account: a rate limit another agent of the same login met is waited out
# here too, rather than N agents hammering one limit. The file is in the state dir, which
# agents can write: it must be a plain file holding a time; the wait is capped at max_ms.
account_wait() {
  [[ -n $account_backoff && -f $account_backoff && ! -L $account_backoff ]] || return 0
  local until_ms now_ms wait_ms
  until_ms=$("$bin_timeout" 1 "$bin_head" -c 16 -- "$account_backoff" 2>/dev/null)
  [[ $until_ms =~ ^[0-9]{13}$ ]] || return 0
  now_ms=$("$bin_date" +%s%3N)
  (( until_ms > now_ms )) || return 0
  wait_ms=$(( until_ms - now_ms < max_ms ? until_ms - now_ms : max_ms ))
  say "[wave] account $account is backing off: waiting $(seconds "$wait_ms")s"
  write_backoff "$wait_ms" 1
  "$bin_sleep" "$(seconds "$wait_ms")"
  "$bin_touch" -- "$log"
  "$bin_rm" -f -- "$agent_dir/backoff.json"
}
account_backoff_until() {  # account_backoff_until DELAY_MS: tell the account's other wrappers
  [[ -n $account_backoff ]] || return 0
  local tmp="$account_backoff.$$"
  ( set -C; printf '%d\n' $(( $("$bin_date" +%s%3N) + $1 )) > "$tmp" ) 2>/dev/null \
    && "$bin_mv" -f -- "$tmp" "$account_backoff"
}

write_status() {  # write_status CODE EXTRA [-n]: status.json, atomically (-n: unless one is there)
  local tmp="$agent_dir/.status.json.$$" finished_at
  now finished_at
  printf '{"agent": %s, "wave": %d, "lane": %s, "attempt": %d, "code": %d, "tries": %d, "rate_limited": %d, "started_at": "%s", "finished_at": "%s", "prompt_sha256": "%s", "orchestrator_id": %s, "output_offset": %d%s}\n' \
    "$agent_json" "$wave" "$lane_json" "$attempt" "$1" "$try" "$rate_limited" \
    "$started_at" "$finished_at" "$prompt_sha256" "$orchestrator_json" "$offset" "$2" > "$tmp" \
    && "$bin_mv" "${3:--f}" -- "$tmp" "$agent_dir/status.json"
  [[ ${3:-} == -n ]] && "$bin_rm" -f -- "$tmp"  # not moved: a status was there
  return 0
}
# Under Slurm (WAVE_PLACEMENT=slurm) nobody else writes a status when the job is cancelled or
# runs out of time: the wrapper does, unless the launcher already did, then ends its group.
on_slurm_term() {
  trap '' TERM HUP
  (( ending )) && return
  ending=1
  [[ -n $cli ]] && kill -TERM "$cli" 2>/dev/null
  if (( ! finishing )) && [[ ! -e $agent_dir/status.json ]]; then
    local outcome=cancelled why='Slurm job cancelled (scancel)' limit
    if (( ${WAVE_TIME_LIMIT_SECONDS:-0} > 0 && EPOCHSECONDS - start_s + 5 >= WAVE_TIME_LIMIT_SECONDS )); then
      outcome=timeout why="Slurm time limit ($(( WAVE_TIME_LIMIT_SECONDS / 60 )) min) reached"
    elif limit=$(slurm_time_limit_reached); then  # the limit was changed since (scontrol)
      outcome=timeout why="Slurm time limit ($limit) reached"
    fi
    # No-clobber: the launcher's own verdict (a budget timeout) may land meanwhile, and wins.
    write_status 143 ", \"outcome\": \"$outcome\", \"detail\": \"$why\"" -n
  fi
  local pgrp
  pgrp=$(cut_pgrp </proc/$$/stat)
  [[ $pgrp == "$$" ]] && kill -TERM -- "-$$" 2>/dev/null
  exit 143
}
# Every job of this script (the CLI, the pane's tail), from the job table: a signal that comes
# between the CLI's start and `cli=$!` would find $cli empty and leave the CLI running.
end_jobs() { local pids; pids=$(jobs -p); [[ -n $pids ]] && kill -TERM $pids 2>/dev/null; }
cut_pgrp() { local line; read -r line; line=${line##*) }; set -- $line; echo "$3"; }
slurm_time_limit_reached() {  # prints the job's limit when Slurm ends it for it (its reason)
  local squeue reason limit
  squeue=$(type -P squeue) && [[ -n ${SLURM_JOB_ID:-} ]] || return 1
  read -r reason limit < <("$bin_timeout" 3 "$squeue" -h -j "$SLURM_JOB_ID" -o '%r %l' 2>/dev/null)
  [[ $reason == TimeLimit ]] && printf '%s\n' "${limit//[^0-9:-]/}"
}

# placement.tmux (WAVE_SLURM_TMUX=1): the job's batch script starts a tmux server of its own
# and runs this same script in its one session, for a person to attach to with srun --pty.
# The server is the job's child (-D: not a daemon), so Slurm ends it with the job whatever
# its process tracking; this script ends it too, once the wrapper in the pane is done.
host_in_tmux() {
  local tmux='' sock="wave-${SLURM_JOB_ID:-$$}" session=${WAVE_SESSION:-agent} server='' pane='' i
  local node=${SLURMD_NODENAME:-$HOSTNAME}
  local safe_node=${node//[^A-Za-z0-9.-]/}  # goes into status.json's JSON: a bare name
  printf '%s\n' "$node" > "$agent_dir/slurm-node"
  tmux=$(type -P tmux) || host_fail "tmux not found on node $safe_node"
  trap 'host_end 143' TERM INT HUP
  "$tmux" -D -L "$sock" -f /dev/null </dev/null &
  server=$!
  for (( i = 0; i < 100; i++ )); do  # the server answers within milliseconds
    "$tmux" -L "$sock" set-option -g remain-on-exit on 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || host_fail "tmux -D failed on node $safe_node (tmux 3.2 or later needed)"
    "$bin_sleep" 0.1
  done
  # Several words: tmux runs them as they are, no shell in between.
  "$tmux" -L "$sock" new-session -d -s "$session" -x 200 -y 50 \
    env WAVE_IN_PANE=1 "$BASH" "$agent_dir/run.sh" \
    || host_fail "tmux could not open the agent's session on node $safe_node"
  pane=$("$tmux" -L "$sock" display-message -p -t "=$session:" '#{pane_pid}')
  # Asked of tmux, not of the pid: tmux 3.3 may leave an ended pane unreaped for a while.
  while [[ $("$tmux" -L "$sock" display-message -p -t "=$session:" '#{pane_dead}') == 0 ]]; do
    "$bin_sleep" 0.5 & wait $!  # a TERM is handled at once, not after the sleep
  done
  local status='' json
  status=$("$tmux" -L "$sock" display-message -p -t "=$session:" '#{pane_dead_status}')
  if [[ ! $status =~ ^[0-9]+$ ]] && json=$(<"$agent_dir/status.json") \
    && [[ $json =~ \"code\":\ ([0-9]+) ]]; then
    status=${BASH_REMATCH[1]}
  fi
  pane=''  # it has ended: nothing to signal
  host_end "$status"
}
host_fail() {  # host_fail DETAIL: the agent fails before it starts (no daemon left behind)
  now started_at
  printf '[wave] %s: placement.tmux needs tmux 3.2 or later on every node\n' "$1"
  write_status 127 ", \"outcome\": \"failed\", \"detail\": \"$1\""
  host_end 127
}
host_end() {  # host_end CODE: the wrapper in the pane ends first (TERM), then the server
  trap '' TERM INT HUP
  if [[ $pane =~ ^[0-9]+$ ]] && kill -TERM "$pane" 2>/dev/null; then
    for (( i = 0; i < 100; i++ )); do kill -0 "$pane" 2>/dev/null || break; "$bin_sleep" 0.1; done
  fi
  if [[ -n $server ]]; then
    "$tmux" -L "$sock" kill-server 2>/dev/null || kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
  fi
  [[ ${1:-} =~ ^[0-9]+$ ]] && exit "$1"
  exit 1
}

# The CLI writes straight to the log (a pipe would keep the try open while any background
# process the agent left holds it); `tail` shows the same output in the pane for people.
# A Slurm job has no pane (unless placement.tmux gives it one): its stdout is output.log
# itself, so nothing is shown twice.
cli='' shower='' shows=1 finishing=0 ending=0 start_s=$EPOCHSECONDS
code=0 try=0 rate_limited=0 usage_limit=0 detail='' offset=0 showers=()
if [[ ${WAVE_PLACEMENT:-} == slurm ]]; then
  [[ ${WAVE_SLURM_TMUX:-} == 1 && -z ${WAVE_IN_PANE:-} ]] && host_in_tmux
  [[ -n ${WAVE_IN_PANE:-} ]] || shows=0
  trap on_slurm_term TERM
  printf '%s\n' "${SLURMD_NODENAME:-$HOSTNAME}" > "$agent_dir/slurm-node"
else
  trap 'end_jobs; exit 143' TERM
fi
trap 'end_jobs; exit 130' INT HUP
# In a job's own tmux, the server's end (Slurm signals it too) hangs the pane up: a status
# is written as for TERM.
[[ ${WAVE_PLACEMENT:-} == slurm && -n ${WAVE_IN_PANE:-} ]] && trap on_slurm_term HUP
if [[ -e $log ]]; then "$bin_touch" -- "$log"; else : >> "$log"; fi  # the try's first sign of life
now started_at
while (( try < tries )); do
  try=$(( try + 1 ))
  account_wait
  offset=0
  [[ -s $log ]] && offset=$("$bin_stat" -c %s -- "$log")
  if (( try > 1 && ${#retry_argv[@]} )); then
    WAVE_TRY=$try "${retry_argv[@]}" < "$retry_prompt_file" >> "$log" 2>&1 &
  else
    WAVE_TRY=$try "${argv[@]}" < "$prompt_file" >> "$log" 2>&1 &
  fi
  cli=$!
  if (( shows )); then
    # Polling, not inotify: a wave of many agents must not use up the inotify instances.
    "$bin_tail" ---disable-inotify -s 0.3 -c "+$(( offset + 1 ))" -f --pid="$cli" -- "$log" 2>/dev/null &
    shower=$!
  fi
  wait "$cli"
  code=$?
  # `tail --pid` prints what is left and ends by itself (within its 0.3 s poll); it is
  # waited for after the status is written, never by a helper process that would outlive
  # this script as an orphan.
  [[ -n $shower ]] && showers+=("$shower")
  cli='' shower=
  (( code == 0 )) && break
  if (( ${#usage_patterns[@]} )) && tail_matches "$offset" "${usage_patterns[@]}"; then
    usage_limit=1
    # The reset time when the message names one, else the text that matched.
    # (the forms of governor/resets.py: codex's clock time or date, claude's, opencode's)
    detail=$(first_match "$offset" -e 'resets? in [0-9a-z ]+' \
      -e 'resets ([a-z]{3}[a-z]* [0-9]{1,2},? )?[0-9]{1,2}(:[0-9]{2})? ?[ap]m( \([a-z0-9_/+-]+\))?' \
      -e 'try again at ([a-z]{3} [0-9]{1,2}(st|nd|rd|th)?,? ([0-9]{4},? )?)?[0-9]{1,2}:[0-9]{2} ?[ap]m' \
      -e 'try again later')
    [[ -n $detail ]] || detail=$(first_match "$offset" "${usage_patterns[@]}")
    break
  fi
  if (( ${#rate_patterns[@]} )) && try_matches "$offset" "${rate_patterns[@]}"; then
    rate_limited=$(( rate_limited + 1 ))
    (( try < tries )) || break
    shift_by=$(( try - 1 < 30 ? try - 1 : 30 ))
    delay_ms=$(( base_ms << shift_by ))
    (( delay_ms > max_ms )) && delay_ms=$max_ms
    (( jitter_s > 0 )) && delay_ms=$(( delay_ms + (RANDOM % jitter_s) * 1000 ))
    delay=$(seconds "$delay_ms")
    say "[wave] rate limited: try $try/$tries, retrying in ${delay}s"
    write_backoff "$delay_ms"
    account_backoff_until "$delay_ms"
    "$bin_sleep" "$delay"
    "$bin_touch" -- "$log"  # the sleep was not silence: stall detection counts from here
    "$bin_rm" -f -- "$agent_dir/backoff.json"
    continue
  fi
  break
done

keep="A-Za-z0-9 :.,()/+_'-"  # what a detail may hold: nothing that could break the JSON
detail=${detail//[^$keep]/}
extra=''
[[ -n $detail ]] && extra=", \"detail\": \"usage limit, ${detail:0:200}\""
(( usage_limit )) && extra="$extra, \"usage_limit\": true"  # a guess: the launcher judges
finishing=1  # the status is being written: a late TERM must not write a second one
# The run's footer line (as bot-lobby prints it): how it ended, how long it took, on what model.
plural=ies
(( try == 1 )) && plural=y
printf -v footer '[wave] run ended: exit %d after %ds, %d tr%s, model %s' "$code" \
  $(( EPOCHSECONDS - start_s )) "$try" "$plural" "$model"
say "$footer"
write_status "$code" "$extra"
# Stay until the pane shows the last output: a person who attaches later reads it there.
for shown in "${showers[@]}"; do wait "$shown" 2>/dev/null; done
exit "$code"
"""


def render_run_script(spec: WrapperSpec) -> str:
    """run.sh: the settings of this one agent's attempt, then the fixed bash body."""
    rl = spec.rate_limit
    tools = {**wrapper_tools(), **(spec.tools or {})}
    head = [
        "#!/usr/bin/env bash",
        f"# Generated by wave: lane {spec.lane}, wave {spec.wave}, agent {spec.agent}, "
        f"attempt {spec.attempt}.",
        "# Safe to rerun by hand: it appends to output.log and rewrites status.json.",
        "set -u",
        f"cd -- {q(spec.repo)} || exit 97",
    ]
    if spec.env_file:
        source = q(spec.env_file)
        head.append(f"[[ -r {source} ]] && source {source}  # the launcher's environment")
    head += ["unset TMUX TMUX_PANE", *(f"export {k}={q(v)}" for k, v in spec.env.items())]
    head += [
        "",
        f"agent_dir={q(spec.agent_dir)}",
        'log="$agent_dir/output.log"',
        f"prompt_file={q(spec.prompt_file)}",
        f"prompt_sha256={q(spec.prompt_sha256)}",
        f"agent_json={q(json.dumps(spec.agent))}",
        f"lane_json={q(json.dumps(spec.lane))}",
        f"orchestrator_json={q(json.dumps(spec.orchestrator_id))}",
        f"wave={spec.wave}",
        f"attempt={spec.attempt}",
        f"model={q(spec.model or 'not named')}",
        f"account={q(spec.account or '')} account_backoff={q(spec.account_backoff or '')}",
        _array("argv", tuple(spec.argv)),
        _array("retry_argv", tuple(spec.retry_argv)),
        f"retry_prompt_file={q(spec.retry_prompt_file)}",
        f"tries={rl.tries}",
        f"base_ms={round(rl.base_delay_seconds * 1000)}",
        f"max_ms={round(rl.max_delay_seconds * 1000)}",
        f"jitter_s={int(rl.jitter_seconds)}",
        _array("rate_patterns", rl.patterns, "-e"),
        _array("usage_patterns", rl.usage_limit_patterns, "-e"),
        "# The wrapper's own tools, found when run.sh was written: the agent's PATH may lack them.",
        _tools_line(tuple(tools.items())),
    ]
    return "\n".join(head) + "\n" + _BODY
