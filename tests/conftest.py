"""Fixtures: every tmux test gets its own server (libtmux's plugin) that is reaped afterwards."""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import Hook, Repo


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (`-n 2 --dist loadgroup`, as .ci/run runs), every Slurm test goes to
    one worker: they share one dev cluster, which a second worker would start again."""
    for item in items:
        if item.get_closest_marker("slurm"):
            item.add_marker(pytest.mark.xdist_group("slurm"))


@pytest.fixture(autouse=True)
def private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Launchers register for `wave ps` under $XDG_STATE_HOME: never the user's real one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("WAVE_LANE", raising=False)


@pytest.fixture
def outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on a real disk outside /tmp (a sandbox's /tmp is its own: a write there would
    land unseen rather than be refused), with $XDG_STATE_HOME in it; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="wave-test-", dir="/var/tmp")).resolve()
    monkeypatch.setenv("XDG_STATE_HOME", str(folder / "xdg-state"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository with no tmux server of its own (validation, dry runs, unit-level runs)."""
    return Repo(tmp_path / "repo", socket=f"wave-test-unused-{tmp_path.name}")


@pytest.fixture
def tmux_repo(tmp_path: Path, server: libtmux.Server) -> Repo:
    """A repository whose lanes run on the private tmux server of libtmux's ``server`` fixture."""
    assert server.socket_name is not None
    return Repo(tmp_path / "repo", socket=server.socket_name)


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The two-node dev cluster of scripts/slurm-dev-cluster.sh, for the whole session; its
    slurm.conf is exported as SLURM_CONF meanwhile. A cluster that cannot start fails the
    tests that need it, loudly: deselect them with -m 'not slurm' where there is no root."""
    # Not under pytest's private temp folder: jobs of another user (`sbatch --uid=nobody`)
    # run from the nodes' spool folders, which that user must be able to reach.
    folder = Path(tempfile.mkdtemp(prefix="wave-slurm-"))
    folder.chmod(0o755)
    env = {**os.environ, "WAVE_SLURM_DIR": str(folder)}
    script = [str(ROOT / "scripts" / "slurm-dev-cluster.sh")]
    started = subprocess.run(
        ["bash", *script, "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if started.returncode != 0:
        pytest.fail(
            "the Slurm dev cluster did not start (the slurm tests need root and Debian's "
            "slurmctld, slurmd, slurm-client and munge; deselect them with -m 'not slurm'):\n"
            + started.stderr,
            pytrace=False,
        )
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(folder / "slurm.conf")
    try:
        yield folder
    finally:
        subprocess.run(["bash", *script, "stop"], env=env, capture_output=True, timeout=120)
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before


@pytest.fixture
def slurm_controller(slurm_cluster: Path) -> Iterator[Callable[[str], None]]:
    """``controller("stop")`` / ``controller("start")``: slurmctld alone, its state kept (a
    restart while jobs run); it is running again when the test ends, whatever happened."""
    env = {**os.environ, "WAVE_SLURM_DIR": str(slurm_cluster)}
    script = ["bash", str(ROOT / "scripts" / "slurm-dev-cluster.sh"), "controller"]

    def controller(action: str) -> None:
        subprocess.run([*script, action], env=env, check=True, capture_output=True, timeout=90)

    try:
        yield controller
    finally:
        controller("start")


@pytest.fixture
def slurm_repo(tmux_repo: Repo, slurm_cluster: Path) -> Iterator[Repo]:
    """A repository whose lanes may place agents on the dev cluster; every job still there
    at the end of the test is cancelled."""
    tmux_repo.env["SLURM_CONF"] = str(slurm_cluster / "slurm.conf")
    try:
        yield tmux_repo
    finally:
        subprocess.run(["scancel", f"--user={getpass.getuser()}"], env=tmux_repo.env, check=False)


@pytest.fixture
def hook() -> Iterator[Hook]:
    """A local webhook: a real HTTP server on 127.0.0.1 (no other address) keeping every POST."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    got: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            got.append((dict(self.headers), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Hook(f"http://127.0.0.1:{server.server_address[1]}/topic", got)
    finally:
        server.shutdown()
        server.server_close()
