"""Fixtures for the tests that run the real agent CLIs: the pinned CLIs themselves
(scripts/agent-clis.sh) and the provider mock they talk to instead of a provider."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_mock import ProviderMock, running_provider_mock

ROOT = Path(__file__).resolve().parents[3]
CLIS = ("codex", "claude", "opencode")


@pytest.fixture(scope="session")
def agent_clis() -> Path:
    """The folder of the real codex, claude and opencode commands at their pinned versions:
    scripts/agent-clis.sh installs them the first time (about 15 s, from npm) and only prints
    the folder afterwards (.ci/run runs it before the tests). An install that fails fails the
    tests, with the script's output: a run without the CLIs must not pass by skipping them."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "agent-clis.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stdout.strip().splitlines()
    folder = Path(lines[-1]) if lines else None
    if done.returncode != 0 or folder is None:
        pytest.fail(
            f"scripts/agent-clis.sh failed (exit {done.returncode}; it needs node, npm and the "
            f"npm registry):\n{done.stdout}{done.stderr}",
            pytrace=False,
        )
    missing = [cli for cli in CLIS if not (folder / cli).is_file()]
    if missing:
        pytest.fail(f"scripts/agent-clis.sh printed {folder}, without {missing}", pytrace=False)
    return folder


@pytest.fixture(scope="session")
def provider_mock() -> Iterator[ProviderMock]:
    """The provider mock on a free port of 127.0.0.1, for the session; stopped afterwards.
    Each test takes modes of its own (``ok()``, ``shell(command)``), so tests share it."""
    with running_provider_mock() as mock:
        yield mock
