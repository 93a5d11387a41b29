"""Real SSH hosts for the tests: OpenSSH daemons on 127.0.0.1 high ports, started and ended
by scripts/ssh-hosts.sh (two daemons, two hosts, each with a workdir of its own)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ssh-hosts.sh"


@pytest.fixture(scope="session")
def ssh_hosts() -> Iterator[Path]:
    """The folder of two running hosts (``host1``, ``host2``): its ``ssh_config`` names them,
    with their keys in its own ``known_hosts``. A machine without sshd fails the tests that
    need it, loudly (scripts/setup.sh installs it)."""
    yield from _hosts()


@pytest.fixture
def own_ssh_hosts() -> Iterator[Path]:
    """Two hosts of one test alone (for a test that kills one)."""
    yield from _hosts()


def _hosts() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="wave-ssh-", dir="/tmp"))
    started = subprocess.run(
        ["bash", str(SCRIPT), "start", str(folder), "2"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if started.returncode != 0:
        pytest.fail(f"scripts/ssh-hosts.sh failed:\n{started.stdout}{started.stderr}", False)
    try:
        yield folder
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], timeout=60, check=False)
        shutil.rmtree(folder, ignore_errors=True)
