"""The package layout holds: rooms not modules at the top, no oversized module, and the
import-linter layers contract both passes on the real package and fails on an upward import."""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wave_orchestrator"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
TOP_LEVEL_MODULES = {
    "__init__.py",
    "__main__.py",
    "console.py",
    "errors.py",
    "names.py",
    "sanitize.py",
    "self_command.py",
}
ROOMS = {
    "cli",
    "runtime",
    "metrics",
    "desk",
    "dashboard",
    "coordination",
    "closure",
    "agents",
    "definitions",
    "state",
    "worktrees",
    "governor",
    "notify",
    "placement",
    "sandbox",
}
# A citation of a document that is not in the repository: "(SPEC 3.8)", "SPEC 4, ...",
# "issue 24 §5", "(issue 10)", "issues 20 and 21". Checked on every line, strings included.
CITATION = re.compile(r"\bSPEC\b|\b[Ii]ssues? #?\d+|§")
# A bare section number such as "(7.3)" or "(3.1, 3.4)": only in comments and docstrings,
# where it can only be a citation (in code, "(0.5)" is a number).
SECTION = re.compile(r"\(\d+(?:\.\d+)+(?:, ?\d+(?:\.\d+)+)*\)")


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


def test_no_module_over_400_formatted_lines() -> None:
    """The size limit counts code as the formatter lays it out: no line packing hides a
    module that outgrew one concern."""
    sizes = {p: len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert max(sizes.values()) <= 400, max(sizes, key=lambda p: sizes[p])
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff), "format", "--check", str(PACKAGE)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_formatter_is_not_switched_off() -> None:
    """No code is laid out by hand to fit a limit: not in the package, its tests, the
    benchmarks or the scripts (this test's own text excepted)."""
    here = Path(__file__).resolve()
    sources = [
        path
        for folder in (PACKAGE, ROOT / "tests", ROOT / "bench", ROOT / "scripts")
        for path in folder.rglob("*.py")
        if path.resolve() != here
    ]
    marker = "fmt: " + "skip", "fmt: " + "off"
    skipped = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if any(m in line for m in marker)
    ]
    assert skipped == [], skipped


def test_the_layers_contract_is_kept() -> None:
    result = lint_imports(ROOT, ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "upward_import", "contract", "edge"),
    [
        (
            "state/layout.py",
            "from ..runtime.launch import launcher",
            "layers",
            "state.layout -> wave_orchestrator.runtime.launch.launcher",
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
            "placement/tmux.py",
            "from ..runtime.pool import loop",
            "layers",
            "placement.tmux -> wave_orchestrator.runtime.pool.loop",
        ),
        (
            "runtime/agent/plan.py",
            "from ..pool import loop",
            "runtime",
            "runtime.agent.plan -> wave_orchestrator.runtime.pool.loop",
        ),
        (
            "definitions/repository/lanes.py",
            "from ..loading import lane_loader",
            "definitions",
            "definitions.repository.lanes -> wave_orchestrator.definitions.loading.lane_loader",
        ),
        (
            "definitions/source/schema.py",
            "from ..model import AgentDef",
            "definitions",
            "definitions.source.schema -> wave_orchestrator.definitions.model",
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


def prose(source: str) -> Iterator[tuple[int, str]]:
    """The comments and docstrings of a module, as (line number, text) per line."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    lines = source.splitlines()
    documented = ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef
    for node in ast.walk(ast.parse(source)):
        first = node.body[0] if isinstance(node, documented) and node.body else None
        value = first.value if isinstance(first, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for number in range(value.lineno, (value.end_lineno or value.lineno) + 1):
                yield number, lines[number - 1]


def citations(path: Path) -> list[str]:
    """Each line of ``path`` that cites a document outside the repository, as file:line: text."""
    source = path.read_text()
    hits = {n for n, line in enumerate(source.splitlines(), 1) if CITATION.search(line)}
    hits |= {n for n, text in prose(source) if SECTION.search(text)}
    lines = source.splitlines()
    return [f"{path}:{n}: {lines[n - 1].strip()}" for n in sorted(hits)]


def test_docstrings_stand_alone() -> None:
    """Docstrings and comments say why in their own words: the specification and issues they
    once cited are not in the repository, so a reader could not follow the reference."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in citations(path)]
    assert not found, "cites a document that is not in the repository:\n" + "\n".join(found)


def test_the_citation_check_catches_every_form(tmp_path: Path) -> None:
    lines = [  # (line, whether it cites)
        ('"""``--resume`` (SPEC 3.8): adopted."""', True),
        ("# merged in order (SPEC 4, built-ins first)", True),
        ("# measured after issues 20 and 21 (see issue #12)", True),
        ("# -- closure gates (7.2) ---------------------", True),
        ("# tmux 3.2 or later (YAML 1.2); spec = 1", False),
        ("def f() -> None:", False),
        ('    """One wave (3.1, 3.4): attempts."""', True),
        ("    time.sleep(0.1)  # read line by line (issue 10)", True),
        ("    x = round(0.5)", False),
        ("def g() -> None:", False),
        ('    """Its execution summary, with', False),
        ('    what it read (issue 24 §5)."""', True),
        ('    raise SystemExit("the dashboard (Issue 26)")', True),
    ]
    module = tmp_path / "module.py"
    module.write_text("\n".join(line for line, _ in lines) + "\n")
    found = [int(hit.split(":")[1]) for hit in citations(module)]
    assert found == [n for n, (_, cites) in enumerate(lines, 1) if cites]


def test_the_architecture_page_shows_the_current_import_graph() -> None:
    """docs/architecture.md's picture of the rooms is the graph the package has today: a new
    room, or an import between rooms that adds an arrow, fails until the page is redrawn."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from import_graph import picture
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    drawn = picture(ROOT)
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert drawn in page, "redraw it: .venv/bin/python scripts/import_graph.py\n" + drawn


def test_the_room_graph_leaves_out_only_implied_arrows() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from import_graph import reduce, room_of
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert room_of("wave_orchestrator.runtime.pool.loop") == "runtime/pool"
    assert room_of("wave_orchestrator.runtime") == "runtime"
    assert room_of("wave_orchestrator.state.layout") == "state"
    assert room_of("wave_orchestrator.errors") == "shared"
    assert room_of("wave_orchestrator.__main__") == "console"
    edges = {("cli", "runtime"), ("runtime", "state"), ("cli", "state"), ("cli", "errors")}
    assert reduce(edges) == {("cli", "runtime"), ("runtime", "state"), ("cli", "errors")}
