"""Slurm's client commands, and what their failures mean.

A failure is one of three things, and each is handled differently: the controller does not
answer (a restart, a network cut: wait for it, submit nothing, kill nothing), the cluster
refuses the job as submitted (an invalid partition, account or QOS: submitting again cannot
help, so it is never retried), or anything else (a plain error, retried as any failure is).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ..definitions.model import PlacementSettings
from ..errors import PlacementRefused, SlurmError

COMMAND_SECONDS = 30.0  # a Slurm command that takes longer is a failure
PING_SECONDS = 5.0  # `scontrol ping` answers at once when the controller is down
# What Slurm's commands print when the controller does not answer (after ~MessageTimeout).
UNREACHABLE_SIGNS = (
    "unable to contact slurm controller",
    "socket timed out",
    "zero bytes were transmitted or received",
    "communication connection failure",
    "connection refused",
    "slurm_persist_conn",
)
# A refusal that may pass later: not a configuration error.
TRANSIENT_SIGNS = ("temporarily", "try again", "resource busy", "too many pending jobs")


class ControllerSilent(SlurmError):
    """A command failed because the controller did not answer."""


@dataclass(frozen=True)
class Answer:
    code: int
    out: str
    err: str


def run_slurm(argv: Sequence[str], check: bool = True) -> Answer:
    """Run one Slurm command: ControllerSilent when the controller did not answer; with
    ``check``, SlurmError with the command's own last words for any other failure."""
    if shutil.which(argv[0]) is None:
        raise SlurmError(
            f"{argv[0]} not found: the Slurm placement needs the Slurm client commands "
            "(sbatch, squeue, scontrol, scancel) on PATH"
        )
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ControllerSilent(f"{argv[0]} did not answer in {COMMAND_SECONDS:g} s") from exc
    except OSError as exc:
        raise SlurmError(f"{argv[0]} failed: {exc}") from exc
    answer = Answer(done.returncode, done.stdout, done.stderr)
    if done.returncode != 0 and silent(answer):  # checked or not: nothing was done
        raise ControllerSilent(f"{argv[0]}: {last_words(answer)}")
    if check and done.returncode != 0:
        raise SlurmError(f"{argv[0]} failed ({done.returncode}): {last_words(answer)}")
    return answer


def last_words(answer: Answer) -> str:
    lines = (answer.err or answer.out).strip().splitlines()
    return " ".join(line.strip() for line in lines[-3:])


def silent(answer: Answer) -> bool:
    text = (answer.err + answer.out).lower()
    return any(sign in text for sign in UNREACHABLE_SIGNS)


def controller_up() -> bool:
    """One ``scontrol ping``: milliseconds when the controller is down (connection refused),
    where squeue or sbatch would wait out their retries first."""
    try:
        done = subprocess.run(
            ["scontrol", "ping"], capture_output=True, text=True, timeout=PING_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and " is UP" in done.stdout


def submit_error(answer: Answer) -> SlurmError:
    """What a failed sbatch means: the controller was silent (ControllerSilent), the job can
    never be accepted as written (PlacementRefused), or it may pass later (SlurmError)."""
    words = last_words(answer)
    if silent(answer):
        return ControllerSilent(f"sbatch: {words}")
    if any(sign in words.lower() for sign in TRANSIENT_SIGNS):
        return SlurmError(f"sbatch failed ({answer.code}): {words}")
    return PlacementRefused(f"sbatch refused the job: {refusal(words)}")


def refusal(words: str) -> str:
    """sbatch's reason without its ``sbatch: error: Batch job submission failed:`` lead."""
    reason = words.rsplit("submission failed:", 1)[-1]
    return reason.replace("sbatch: error:", "").strip() or words


def preflight(settings: PlacementSettings, user: str) -> tuple[list[str], list[str]]:
    """(problems, notes): the partition, account and QOS a lane names, checked against what
    the cluster has (sinfo, sacctmgr) before anything is submitted. A check that cannot be
    made (no accounting database, as on many small clusters) is a note, not a problem."""
    problems: list[str] = []
    notes: list[str] = []
    if settings.partition:
        try:
            out = run_slurm(["sinfo", "--noheader", "--format=%R"]).out
        except SlurmError as exc:
            notes.append(f"placement.partition not checked: {exc}")
        else:
            have = sorted({line.strip() for line in out.splitlines() if line.strip()})
            if settings.partition not in have:
                problems.append(
                    f"placement.partition {settings.partition!r} is not a partition of this "
                    f"cluster (sinfo lists: {', '.join(have) or 'none'})"
                )
    lookups = (
        ("account", settings.account, ["show", "associations", f"user={user}", "format=account"]),
        ("qos", settings.qos, ["show", "qos", "format=name"]),
    )
    for key, value, query in lookups:
        if not value:
            continue
        try:
            out = run_slurm(["sacctmgr", "--noheader", "--parsable2", *query]).out
        except SlurmError as exc:
            notes.append(f"placement.{key} not checked: {exc}")
            continue
        have = sorted({line.strip() for line in out.splitlines() if line.strip()})
        if value.lower() not in {h.lower() for h in have}:
            mine = f" of user {user}" if key == "account" else ""
            problems.append(
                f"placement.{key} {value!r} is not {'an account' if mine else 'a QOS'}{mine} "
                "on this cluster "
                f"(sacctmgr lists: {', '.join(have) or 'none'})"
            )
    return problems, notes
