"""Fixtures: every tmux test gets its own server (libtmux's plugin) that is reaped afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import libtmux
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import Repo


@pytest.fixture(autouse=True)
def private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Launchers register for `wave ps` under $XDG_STATE_HOME: never the user's real one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("WAVE_LANE", raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository with no tmux server of its own (validation, dry runs, unit-level runs)."""
    return Repo(tmp_path / "repo", socket=f"wave-test-unused-{tmp_path.name}")


@pytest.fixture
def tmux_repo(tmp_path: Path, server: libtmux.Server) -> Repo:
    """A repository whose lanes run on the private tmux server of libtmux's ``server`` fixture."""
    assert server.socket_name is not None
    return Repo(tmp_path / "repo", socket=server.socket_name)
