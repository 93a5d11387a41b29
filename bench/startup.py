"""Start-up benchmark: how long `wave` commands take against a bare interpreter, in one run.

    .venv/bin/python bench/startup.py [--runs 15] [--record] [--venv PATH]

What is timed is wave as users install it (`pip install .` or pipx, not editable): the bench
installs a clean copy of this checkout (no `build/` left by an earlier install) into a
throwaway virtualenv (or uses --venv, one that has it installed) and runs its `wave` script,
each command as a fresh process interleaved with `python -c pass` from the same interpreter so
both see the same machine load; the figure is the median of the runs, minus the bare
interpreter's median. The CPU column is the process's user + system time (from `wait4`) above
the bare interpreter's, the figure that moves least when other tenants load the machine. Under
the launch's imports come their floor (the libraries and Python modules they load, alone) and
that floor with wave's compiled modules read but not run, so the figure is read against what
the machine allows. (The
development .venv's editable install is not used: its import hook loads pathlib and re into
every interpreter, bare ones included, which hides what wave pays for them.) --record
rewrites the start-up section of docs/performance.md with the table printed (between its
`startup` markers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from launch import make_repo  # the bench folder is not a package

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
# A dry run again keeps the files that did not change; its first run in a repository makes
# every folder and file. Before each run of this row the earlier dry run's folder is moved
# aside (not deleted, which would time the disk's freeing of it instead).
FIRST = "wave launch --dry-run (20 waves x 10, first run)"
# Help at a terminal is drawn by rich-argparse (issue 14 asks for it), which loads rich; the
# other rows write to a pipe, as scripts and `| less` do.
AT_TERMINAL = "wave --help (at a terminal)"
BEGIN, END = "<!-- startup:begin -->", "<!-- startup:end -->"
# What a live launch imports, without starting tmux: the command, the lane's model and loading,
# the launcher and all it drives, structlog as the launch configures it and watchdog's observer
# (the agents' files are watched from the first launch on). Garbage collection off, as
# console.py has it while a command is set up.
LAUNCH_IMPORTS = "wave launch: its imports (live, no agent started)"
LAUNCH_IMPORTS_CODE = """\
import gc; gc.disable()
import re, wave_orchestrator.cli.launch, wave_orchestrator.runtime.launch.selection
import wave_orchestrator.placement.processes, wave_orchestrator.runtime.launch.launcher
from wave_orchestrator.state.logs import configure_logging; configure_logging(None, quiet=True)
import watchdog.observers
"""

# The floor under that row: the modules of the libraries and of Python itself that the same
# imports load, each imported alone, in the order the launch loaded them, with structlog kept
# from what wave keeps it from (the renderers it probes for, the modules it would import for
# what wave never calls). What the row costs above this one is wave's own code. The list is
# taken from a run of LAUNCH_IMPORTS_CODE in the installed interpreter, not written here.
FLOOR = "the libraries a launch loads, alone (its floor)"
# And above that floor, wave's own modules of a launch read from their compiled files and
# unmarshalled, not run: what loading that much code costs before any of it does anything.
CODE_READ = "the floor, and wave's modules read but not run"
LIST_LAUNCH_MODULES = f"""\
import sys
before = set(sys.modules)
{LAUNCH_IMPORTS_CODE}
new = [(name, module.__spec__) for name, module in sys.modules.items()
       if name not in before and getattr(module, "__spec__", None) is not None]
import json
print(json.dumps({{
    "libraries": [name for name, spec in new if name.split(".")[0] != "wave_orchestrator"],
    "wave": [spec.cached for name, spec in new if name.split(".")[0] == "wave_orchestrator"],
}}))
"""
FLOOR_CODE = """\
import gc; gc.disable()
import importlib, sys, types
class OnUse(types.ModuleType):
    def __getattr__(self, attr):
        del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)
for name in {absent}:
    sys.modules[name] = None
for name in {on_use}:
    sys.modules[name] = OnUse(name)
for name in {modules}:
    importlib.import_module(name)
"""
READ_CODE = """
import marshal
for path in {paths}:
    with open(path, "rb") as compiled:
        marshal.loads(compiled.read()[16:])
"""

# (label, arguments, target in ms above the bare interpreter: issue 14, the last row issue 34's)
COMMANDS = [
    ("wave --version", ["--version"], 40),
    ("wave --help", ["--help"], 40),
    (AT_TERMINAL, ["--help"], 40),
    ("wave validate", ["validate", "--lane", "small"], 80),
    ("wave status", ["status", "--lane", "small"], 80),
    ("wave lanes", ["lanes"], 80),
    ("wave launch --dry-run (1 wave x 5)", ["launch", "--lane", "small", "--dry-run"], 100),
    ("wave launch --dry-run (20 waves x 10)", ["launch", "--lane", "bench", "--dry-run"], 250),
    (FIRST, ["launch", "--lane", "bench", "--dry-run"], 250),
    (LAUNCH_IMPORTS, [], 100),
    (FLOOR, [], None),
    (CODE_READ, [], None),
]


CHECKOUT = Path(__file__).resolve().parent.parent


def installed(venv: Path | None, tmp: Path) -> Path:
    """The bin folder of a virtualenv with this checkout installed as a user would have it.
    pip builds in the source folder: from the checkout itself it would package what an
    earlier build left in `build/` (modules since moved) beside the current ones."""
    if venv is None:
        venv, source = tmp / "venv", tmp / "source"
        skip = shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache"
        )
        shutil.copytree(CHECKOUT, source, ignore=skip)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)]
        subprocess.run(pip, check=True)
    if not (venv / "bin" / "wave").exists():
        raise SystemExit(f"{venv} has no bin/wave: install wave there or leave out --venv")
    return venv / "bin"


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``argv``."""
    t0 = time.perf_counter()
    out = subprocess.DEVNULL
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=out)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if status != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return elapsed, usage.ru_utime + usage.ru_stime


def timed_on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """The command with a pseudo-terminal for its output, read to the end as a terminal would."""
    leader, follower = os.openpty()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=follower, stderr=follower)
    os.close(follower)
    with contextlib.suppress(OSError):  # EIO: the command closed its end
        while os.read(leader, 65536):
            pass
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    os.close(leader)
    if status != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return elapsed, usage.ru_utime + usage.ru_stime


def floor_code(python: str, cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    """The code of the floor row, for the modules this interpreter's launch imports load, checked
    to load exactly those (so the difference between the two rows is wave's own code); and the
    code of the row that also reads wave's compiled modules."""
    from wave_orchestrator.state.logs import STRUCTLOG_EXTRAS, STRUCTLOG_UNUSED

    def run(code: str) -> str:
        argv = [python, "-c", code]
        return subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, check=True
        ).stdout

    listed = json.loads(run(LIST_LAUNCH_MODULES))
    modules = listed["libraries"]
    code = FLOOR_CODE.format(
        absent=STRUCTLOG_EXTRAS, on_use=STRUCTLOG_UNUSED, modules=tuple(modules)
    )
    report = "import sys\nbefore = set(sys.modules)\n" + code
    report += "print(' '.join(n for n, m in sys.modules.items() if n not in before "
    report += "and getattr(m, '__spec__', None) is not None))"
    extra = set(run(report).split()) ^ set(modules)
    if extra:
        raise SystemExit(f"the floor's modules differ from the launch's: {sorted(extra)}")
    return code, code + READ_CODE.format(paths=tuple(listed["wave"]))


# (label, whole process, above bare Python, CPU above bare Python, target), times in seconds
Rows = list[tuple[str, float, float, float, int | None]]


def measure(runs: int, venv: Path | None) -> tuple[float, Rows, float]:
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = installed(venv, Path(tmp))
        python, wave = str(bin_dir / "python"), str(bin_dir / "wave")
        root = Path(tmp) / "repo"
        root.mkdir()
        make_repo(root, 20, 10, "true")
        small = root / "lanes" / "small"
        (small / "waves").mkdir(parents=True)
        lane = (root / "lanes" / "bench" / "lane.yaml").read_text()
        (small / "lane.yaml").write_text(lane + 'executors: {local: {command: ["true"]}}\n')
        rows = "\n".join(f"  - {{id: A{i}, prompt: noop}}" for i in range(5))
        (small / "waves" / "wave-1.yaml").write_text(f"agents:\n{rows}\n")
        env = {**os.environ, "WAVE_TMUX_SOCKET": "wave-bench-unused", "WAVE_REPO": str(root)}
        env.pop("WAVE_LANE", None)
        env.pop("NO_COLOR", None)  # it would spare the terminal row rich-argparse
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # pip compiled every module: as installed
        floor, code_read = floor_code(python, root, env)
        bare: list[tuple[float, float]] = []
        times: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in COMMANDS}
        copies: list[float] = []  # the disk alone: copying the tree a first dry run made
        for run in range(runs):
            for label, args, _ in COMMANDS:
                if label == FIRST:
                    (root / ".wave" / "bench" / "dry-run").rename(root / f"moved-{run}")
                bare.append(timed([python, "-c", "pass"], root, env))
                if label == AT_TERMINAL:
                    times[label].append(timed_on_a_terminal([wave, *args], root, env))
                elif label == LAUNCH_IMPORTS:
                    times[label].append(timed([python, "-c", LAUNCH_IMPORTS_CODE], root, env))
                elif label == FLOOR:
                    times[label].append(timed([python, "-c", floor], root, env))
                elif label == CODE_READ:
                    times[label].append(timed([python, "-c", code_read], root, env))
                else:
                    times[label].append(timed([wave, *args], root, env))
                if label == FIRST:
                    t0 = time.perf_counter()
                    shutil.copytree(root / ".wave" / "bench" / "dry-run", root / f"copy-{run}")
                    copies.append(time.perf_counter() - t0)
        base = statistics.median(wall for wall, _ in bare)
        base_cpu = statistics.median(cpu for _, cpu in bare)
        measured: Rows = []
        for label, _, target in COMMANDS:
            total = statistics.median(wall for wall, _ in times[label])
            cpu = statistics.median(cpu for _, cpu in times[label])
            measured.append((label, total, total - base, cpu - base_cpu, target))
        return base, measured, statistics.median(copies)


def table(base: float, rows: Rows, runs: int, copy: float) -> str:
    lines = [
        f"Start-up ({date.today()}, wave installed with `pip install .`, median of {runs} "
        f"runs, `python -c pass` {base * 1000:.0f} ms in the same run):",
        "",
        "| command | whole process | above bare Python | CPU above bare Python | target |",
        "|---|---|---|---|---|",
    ]
    for label, total, extra, cpu, target in rows:
        figures = f"{total * 1000:.0f} ms | +{extra * 1000:.0f} ms | +{cpu * 1000:.0f} ms"
        if target is None:
            lines.append(f"| {label} | {figures} | (no target) |")
            continue
        mark = "met" if extra * 1000 <= target else "MISSED"
        lines.append(f"| `{label}` | {figures} | +{target} ms ({mark}) |")
    by_label = {label: (extra, cpu) for label, _, extra, cpu, _ in rows}
    (launch, launch_cpu), (floor, floor_cpu) = by_label[LAUNCH_IMPORTS], by_label[FLOOR]
    read = by_label[CODE_READ][0] - floor
    lines += [
        "",
        f"Wave's own code on a launch's path, above its floor: +{(launch - floor) * 1000:.0f} ms "
        f"(CPU +{(launch_cpu - floor_cpu) * 1000:.0f} ms), of which reading and unmarshalling "
        f"its compiled modules is {read * 1000:.0f} ms; the floor alone leaves "
        f"{100 - floor * 1000:.0f} ms of the launch's +100 ms for it.",
        "",
        "The disk alone, for scale: `shutil.copytree` of the folder the first dry run of "
        f"20 x 10 made (the same folders and files, from the bench's own process) took "
        f"{copy * 1000:.0f} ms in the same run (median).",
    ]
    return "\n".join(lines)


def record(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} section to rewrite")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")
    print(f"recorded in {DOC}")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--runs", type=int, default=15, help="runs per command (median taken)")
    p.add_argument("--record", action="store_true", help="rewrite docs/performance.md's section")
    p.add_argument(
        "--venv", type=Path, help="a virtualenv with wave installed (default: a new one)"
    )
    args = p.parse_args()
    base, rows, copy = measure(args.runs, args.venv)
    text = table(base, rows, args.runs, copy)
    print(text)
    if args.record:
        record(text)


if __name__ == "__main__":
    main()
