"""Where a lane's agents run, as lane.yaml's ``placement:`` and ``ssh:`` say (checked in
``sections/placement.py`` and ``sections/ssh.py``); ``model`` holds these records by name."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class SshHostDef(NamedTuple):
    """One host of ``ssh.hosts``."""

    name: str  # wave's name for it, unique in the lane
    destination: str  # what `ssh` takes: an alias, host, user@host
    workdir: str | None = None  # where wave keeps its things there: /abs or ~/..., None: default
    max_agents: int = 4  # agents running there at once
    shared_path: bool = False  # the host sees this machine's checkout at the same path


class SshSettings(NamedTuple):
    """``ssh:`` of a lane: the hosts agents run on, and how they are reached."""

    hosts: tuple[SshHostDef, ...] = ()
    config: Path | None = None  # resolved: `~` expanded, relative paths against the repository
    host_timeout_minutes: float = 10.0  # how long a host that stopped answering is waited for


class PlacementSettings(NamedTuple):
    """Where agents run (``placement:`` of a lane; a wave or agent overrides cpus and mem)."""

    kind: str = "local"  # local: tmux here | slurm: a sbatch job per attempt | ssh: on hosts
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    cpus: int = 1
    mem: str | None = None  # Slurm's --mem: 2G, 500M ...
    extra: tuple[str, ...] = ()  # more sbatch arguments, passed as they are
    tmux: bool = False  # attach to a tmux session inside the job instead of `tail -f`
    unreachable_minutes: float = 10.0  # how long a silent controller is waited for
    ssh: SshSettings | None = None  # placement ssh: the hosts and how they are reached

    @property
    def slurm(self) -> bool:
        return self.kind == "slurm"

    @property
    def remote(self) -> bool:
        return self.kind == "ssh"
