"""What an agent leaves running ends with it, and no wave waits on a PID 1 that does not reap
(a container started without --init): issue 23, part 1."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Repo, alive, local_agent, local_lane, processes_naming

pytestmark = pytest.mark.e2e

QA_OK = "[wave-gate] architecture=pass integration=pass durability=pass live=pass docs=pass"


def test_a_setsid_daemon_an_agent_started_ends_with_the_agent(tmux_repo: Repo) -> None:
    """`setsid` leaves the agent's process group and session: found by its token instead."""
    marker = f"wave-escapee-{tmux_repo.root.parent.name}"
    command = (
        f'setsid bash -c "exec -a {marker} sleep 300" </dev/null >/dev/null 2>&1 & '
        f'( setsid bash -c "exec -a {marker}-2 sleep 301" </dev/null >/dev/null 2>&1 & ); '
        f"while ! pgrep -f {marker}-2 >/dev/null; do sleep 0.05; done; echo started"
    )
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A1", command)})
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    assert "started" in (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()

    def escapees() -> list[int]:
        return [p for w in (marker, f"{marker}-2") for p in processes_naming(w) if alive(p)]

    assert not escapees(), "an agent's setsid daemon outlived it"  # the launcher waited


def test_the_token_is_what_every_agent_process_inherits(tmux_repo: Repo) -> None:
    tmux_repo.lane(
        "main", local_lane(), {1: "agents:\n" + local_agent("A1", 'echo "tok=$WAVE_AGENT_TOKEN"')}
    )
    result = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert result.returncode == 0, result.stderr
    log = (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()
    assert f"tok={tmux_repo.env['WAVE_TMUX_SOCKET']}/w1-A1" in log


PID1 = """
import os, subprocess, sys, time
started = time.monotonic()
wave = subprocess.Popen(sys.argv[2:])
if sys.argv[1] == "reaping":
    while True:  # an init: every child, whoever's it was
        pid, status = os.wait()
        if pid == wave.pid:
            code = os.waitstatus_to_exitcode(status)
            break
else:
    code = wave.wait()  # waits for wave alone: orphans stay zombies
print(json.dumps({"seconds": time.monotonic() - started, "code": code}))
"""


def under_pid_1(repo: Repo, kind: str) -> dict[str, float]:
    """`wave launch` as the only child of a fresh PID 1 in its own PID namespace."""
    argv = [
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        sys.executable,
        "-c",
        "import json\n" + PID1,
        kind,
        *repo.command("launch", "--lane", "main", "--no-dashboard"),
    ]
    done = subprocess.run(
        argv, cwd=repo.root, env=repo.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, done.stderr
    return result


def test_a_wave_under_a_pid_1_that_never_reaps_does_not_wait_on_zombies(
    repo: Repo, tmp_path: Path
) -> None:
    """Three agents and cont-qa, each in a PID namespace of its own: once under a PID 1 that
    reaps every child, once under one that never does. Before, the second took 10.5 s
    against 0.6 s (each wave end waited out the kill grace on zombies)."""
    if (
        shutil.which("unshare") is None
        or subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True
        ).returncode
    ):
        pytest.fail("this test needs `unshare --pid --mount-proc` (root, util-linux)")
    socket = repo.env["WAVE_TMUX_SOCKET"] = f"wave-pid1-{tmp_path.name}"[:60]
    qa = f"mkdir -p r && echo qa > r/qa.md; echo '{QA_OK}'; echo '[wave-verdict] pass'"
    body = "agents:\n" + "".join(local_agent(a, "echo done") for a in ("A1", "A2", "A3"))
    body += local_agent("QA", qa, role="cont-qa", owns=["r/qa.md"])
    repo.lane(
        "main", local_lane().replace("required_roles: []", "required_roles: [cont-qa]"), {1: body}
    )
    try:
        reaping = [under_pid_1(repo, "reaping")["seconds"] for _ in range(2)]
        lazy = [under_pid_1(repo, "lazy")["seconds"] for _ in range(2)]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    # Within 1.3x (and a second of this machine's noise); the kill grace alone is 10 s.
    assert min(lazy) <= 1.3 * min(reaping) + 1.0, (lazy, reaping)
