"""The package layout holds: rooms not modules at the top, no oversized module, and the
import-linter layers contract both passes on the real package and fails on an upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wave_orchestrator"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
TOP_LEVEL_MODULES = {
    "__init__.py", "__main__.py", "console.py", "errors.py", "names.py", "sanitize.py",
    "self_command.py",
}  # fmt: skip
ROOMS = {
    "cli", "runtime", "metrics", "desk", "dashboard", "coordination", "closure", "agents",
    "definitions", "state", "worktrees", "governor", "notify",
}  # fmt: skip


def lint_imports(cwd: Path, pythonpath: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """Run import-linter on the package found first on ``pythonpath`` (a copy, or the real one)."""
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: run scripts/setup.sh"
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "COLUMNS": "200"}
    argv = [str(LINT_IMPORTS), "--no-cache"]
    for contract in contracts:
        argv += ["--contract", contract]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)


def test_only_rooms_and_shared_utilities_at_the_top() -> None:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL_MODULES
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms == ROOMS


def test_every_room_says_what_lives_there_and_what_it_may_import() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        text = init.read_text()
        assert text.startswith('"""'), f"{init} has no docstring"
        if init.parent not in (PACKAGE, PACKAGE / "cli"):
            assert "May import" in text, f"{init} does not say what it may import"


def test_no_module_over_500_lines() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert max(sizes.values()) <= 500, max(sizes, key=lambda p: sizes[p])


def test_the_layers_contract_is_kept() -> None:
    result = lint_imports(ROOT, ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "upward_import", "contract", "edge"),
    [
        (
            "state/layout.py",
            "from ..runtime import launcher",
            "layers",
            "state.layout -> wave_orchestrator.runtime.launcher",
        ),
        (
            "definitions/model.py",
            "from ..agents import executors",
            "layers",
            "definitions.model -> wave_orchestrator.agents.executors",
        ),
        (
            "closure/gates.py",
            "from ..agents import prompts",
            "layers",
            "closure.gates -> wave_orchestrator.agents.prompts",
        ),
        (
            "desk/claims.py",
            "from ..metrics import report",
            "layers",
            "desk.claims -> wave_orchestrator.metrics.report",
        ),
        (
            "runtime/placement/tmux.py",
            "from .. import agent_pool",
            "runtime",
            "placement.tmux -> wave_orchestrator.runtime.agent_pool",
        ),
    ],
)
def test_an_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, upward_import: str, contract: str, edge: str
) -> None:
    """A copy of the package with one import that runs back up fails lint-imports, naming it."""
    copy = tmp_path / "wave_orchestrator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = copy / module
    target.write_text(target.read_text() + f"\n{upward_import}  # deliberate violation\n")
    result = lint_imports(tmp_path, tmp_path, contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept, 1 broken" in result.stdout
    assert edge in " ".join(result.stdout.split()), result.stdout
