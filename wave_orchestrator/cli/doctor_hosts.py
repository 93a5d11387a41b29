"""`wave doctor`'s lines for each SSH host of a lane placed there: the host answers (with the
person's own ssh config, keys and known_hosts, or the lane's config), and has what its agents
need on the PATH a command there gets: tmux, git, bash, tar, base64 and the lane's CLIs, with
room on its disk. Hosts are asked at once, each with ssh's own time limit; what a host says is
never shown as it said it."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .doctor import Check

if TYPE_CHECKING:
    from ..placement.ssh import SshPlacement
    from ..placement.ssh_host import Host


def host_checks(lanes: list[Any]) -> list[Check]:
    from ..placement.ssh import SshPlacement
    from ..state.layout import StateLayout

    checks: list[Check] = []
    for lane in lanes:
        if not lane.placement.remote or lane.placement.ssh is None:
            continue
        programs = _programs(lane)
        layout = StateLayout(lane.state_dir, lane.name, repo=lane.repo)
        placement = SshPlacement(
            lane.placement.ssh, layout, lane.repo, None, lambda _: None, programs, command=True
        )
        with contextlib.closing(placement), ThreadPoolExecutor(len(placement.hosts)) as pool:
            asked = [(lane.name, placement, host, programs) for host in placement.hosts]
            checks += list(pool.map(lambda args: _check(*args), asked))
    return checks


def _programs(lane: Any) -> list[str]:
    """The CLIs the lane's agents start (fallbacks too), looked for on each host's PATH."""
    from ..agents.executors import build_command

    return sorted(
        {
            program
            for wave in lane.waves
            for agent in wave.agents
            for ex in (agent.executor.id, *agent.executor.fallbacks)
            if "/" not in (program := build_command(agent.executor, ex, agent.id).program)
        }
    )


def _check(lane: str, placement: SshPlacement, host: Host, programs: list[str]) -> Check:
    from ..errors import WaveError

    name = f"host {lane}/{host.name}"
    try:
        placement.prepare(host)
    except WaveError as exc:
        return Check(name, False, str(exc), fix="see docs/placement.md: SSH hosts")
    has = ", ".join(["tmux", "git", *programs])
    said = f"{host.spec.destination} answers, has {has}, room on its disk"
    if not host.can_scan:
        from ..placement.ssh_remote import NO_SCAN

        return Check(name, False, f"{said}; but {NO_SCAN}", blocking=False)
    return Check(name, True, said)
