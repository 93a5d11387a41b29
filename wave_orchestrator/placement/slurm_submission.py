"""How one agent attempt is submitted to Slurm: its ``sbatch`` command line, with the time
limit, the resources and the environment the wrapper reads, and paths taken literally."""

from __future__ import annotations

import math
from pathlib import Path

from ..definitions.model import PlacementSettings
from .base import AgentJob

TIME_MARGIN_MINUTES = 2  # --time is the budget plus this: the launcher's own kill comes first


def slurm_literal(path: Path) -> str:
    """A path for an sbatch filename pattern, taken literally: Slurm expands ``%j``, ``%u``,
    ``%x``, ``%%``... in ``--output``, so a repository under ``100%j-done/`` would send the
    log to a folder that does not exist."""
    return str(path).replace("%", "%%")


def time_limit(budget_minutes: float) -> int:
    """Slurm's --time in whole minutes: the budget plus a margin."""
    return max(1, math.ceil(budget_minutes)) + TIME_MARGIN_MINUTES


def sbatch_argv(settings: PlacementSettings, job: AgentJob, job_name: str) -> list[str]:
    """The ``sbatch`` command line that runs ``job``'s ``run.sh`` as one batch job."""
    limit = time_limit(job.budget_minutes)
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={job_name}",
        f"--time={limit}",
        f"--cpus-per-task={job.cpus}",
        "--nodes=1",
        "--ntasks=1",
        f"--output={slurm_literal(job.output_log)}",
        "--open-mode=append",
        f"--chdir={job.cwd}",
        f"--export=ALL,WAVE_PLACEMENT=slurm,WAVE_TIME_LIMIT_SECONDS={limit * 60}"
        + (f",WAVE_SLURM_TMUX=1,WAVE_SESSION={job.session}" if settings.tmux else ""),
    ]
    if job.mem:
        argv.append(f"--mem={job.mem}")
    chosen = (
        ("partition", settings.partition),
        ("account", settings.account),
        ("qos", settings.qos),
    )
    argv += [f"--{flag}={value}" for flag, value in chosen if value]
    return [*argv, *settings.extra, *job.argv[1:]]  # job.argv is ["bash", run.sh]
