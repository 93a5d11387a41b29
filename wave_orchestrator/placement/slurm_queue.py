"""What Slurm says about jobs, read: ``squeue``'s lines for the jobs still in the queue, and
``scontrol show job``'s records for how those that left it ended. Pure parsing; which jobs are
this lane's and what follows from their states is ``slurm.py``'s."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

SQUEUE_FORMAT = "%i|%j|%T|%N|%r"  # job id, name, state, node, reason pending
LIVE_STATES = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
)
QUEUED_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED"})  # its budget has not started
# Why a pending job will never start as submitted: it is cancelled and its agent fails, rather
# than wait queued for ever.
NEVER_STARTS = frozenset(
    {
        "PartitionTimeLimit",
        "PartitionNodeLimit",
        "AssocMaxWallDurationPerJobLimit",
        "QOSMaxWallDurationPerJobLimit",
        "InvalidAccount",
        "InvalidQOS",
        "BadConstraints",
        "DependencyNeverSatisfied",
    }
)


@dataclass(frozen=True)
class QueuedJob:
    """A job ``squeue`` lists in one of the live states."""

    job_id: int
    session: str  # its name without the lane's prefix
    state: str
    node: str
    reason: str  # why it is pending

    @property
    def never_starts(self) -> bool:
        return self.state == "PENDING" and self.reason in NEVER_STARTS


@dataclass(frozen=True)
class FinishedJob:
    """A job as ``scontrol show job`` remembers it once it left the queue."""

    job_id: int
    name: str
    state: str  # COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY...
    status: int | None  # its exit code, or 128 + the signal that ended it
    node: str | None


def squeue_argv(user: str) -> list[str]:
    """One call listing every job of ``user``, array tasks one a line, in SQUEUE_FORMAT."""
    return ["squeue", f"--user={user}", "--noheader", "--array", f"--format={SQUEUE_FORMAT}"]


def queued_jobs(out: str, prefix: str) -> Iterator[QueuedJob]:
    """The live jobs in ``squeue_argv``'s answer whose name starts with ``prefix``."""
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or not parts[1].startswith(prefix) or not parts[0].isdigit():
            continue
        job_id, name, state, node, reason = parts
        if state in LIVE_STATES:
            yield QueuedJob(int(job_id), name.removeprefix(prefix), state, node, reason)


def finished_jobs(out: str, uid: int) -> Iterator[FinishedJob]:
    """The jobs of user ``uid`` in ``scontrol --oneliner show job``'s answer; another user's
    job of the same name is never ours to follow."""
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if not fields.get("JobId", "").isdigit():
            continue
        if not fields.get("UserId", "").endswith(f"({uid})"):
            continue
        yield FinishedJob(
            int(fields["JobId"]),
            fields.get("JobName", ""),
            fields.get("JobState", ""),
            exit_status(fields.get("ExitCode", "")),
            fields.get("NodeList"),
        )


def exit_status(exit_code: str) -> int | None:
    """The status of scontrol's ``ExitCode=code:signal``: 128 + the signal when one ended it."""
    code, _, sig = exit_code.partition(":")
    if sig.isdigit() and int(sig):
        return 128 + int(sig)
    return int(code) if code.isdigit() else None
