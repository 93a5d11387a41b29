"""`pip install .` (not editable) gives a working `wave`, and the wheel carries the demo lane
so `wave init --demo` works outside a checkout (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_and_runs_the_demo_outside_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(wheels)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("wave_orchestrator-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for rel in ("lane.yaml", "waves/wave-1.yaml", "waves/wave-2.yaml"):
        assert f"wave_orchestrator/definitions/repository/demo_lane/{rel}" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    shipped = {Path(n).name for n in names if n.startswith("wave_orchestrator/docs/")}
    assert shipped == {p.name for p in (ROOT / "docs").glob("*.md")}  # `wave docs` after pipx

    # Installed as a plain (non-editable) package, used from a folder that is no checkout.
    site = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    deps = sysconfig.get_paths()["purelib"]  # libtmux, PyYAML...: the test venv's
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{deps}", "WAVE_TMUX_SOCKET": "unused"}
    env.pop("WAVE_REPO", None)

    def wave(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wave_orchestrator", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import wave_orchestrator; print(wave_orchestrator.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(site)), where.stdout  # not the checkout's editable copy
    assert wave("init", "--demo").returncode == 0
    assert (work / "lanes" / "demo" / "waves" / "wave-2.yaml").is_file()
    dry = wave("launch", "--lane", "demo", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert wave("--version").stdout.startswith("wave ")
    lanes = wave("docs", "lanes")
    assert lanes.returncode == 0 and lanes.stdout.startswith("# Lanes and waves"), lanes.stderr
    assert "site" in wave("docs").stdout.splitlines()[-1]  # the package's copy, not a checkout


def test_pipx_install_gives_a_wave_on_its_own(tmp_path: Path) -> None:
    """`pipx install .`, the documented way to install for use: its own virtualenv, `wave`
    and `wave-demo-agent` in PIPX_BIN_DIR, the demo lane from the installed package."""
    env = {
        **os.environ,
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
        "WAVE_TMUX_SOCKET": "unused",
    }
    env.pop("WAVE_REPO", None)
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run(
        [sys.executable, "-m", "pipx", "install", str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    wave = tmp_path / "bin" / "wave"
    assert (tmp_path / "bin" / "wave-demo-agent").exists()
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(wave), *args], cwd=work, env=env, capture_output=True, text=True, timeout=120
        )

    assert run("--version").stdout.startswith("wave ")
    assert run("init", "--demo").returncode == 0
    dry = run("launch", "--lane", "demo", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing started" in dry.stdout
    where = run("debug-info")
    assert str(tmp_path / "pipx") in where.stdout  # the package pipx installed, not ours
