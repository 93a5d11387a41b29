"""`wave doctor`'s bubblewrap check: a trial sandbox started end to end with the real bwrap;
where bubblewrap cannot run, the probe's own fix, blocking only when a lane's agents need a
sandbox; and the trial judged by what reached the files outside, not by what it said."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import Repo, local_agent, local_lane

from wave_orchestrator.cli import doctor
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.sandbox.probe import INSTALL, Probe, check, read_sysctl
from wave_orchestrator.sandbox.trial import NOT_WRITTEN, try_sandbox

DENIED = "bwrap: Creating new namespace failed: Operation not permitted"


def sandboxed_lane(mode: str | None) -> str:
    lane = local_lane()
    if mode is not None:
        lane = lane.replace("defaults:\n", f"defaults:\n  sandbox: {mode}\n", 1)
    return lane


def bubblewrap_check(repo: Repo) -> tuple[int, dict[str, Any], str]:
    done = repo.wave("doctor", "--json")
    shown = repo.wave("doctor")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    line = next(x for x in shown.stdout.splitlines() if " bubblewrap: " in x)
    return done.returncode, checks["bubblewrap"], line


def test_the_real_bubblewrap_passes_the_trial(repo: Repo) -> None:
    repo.lane("main", sandboxed_lane("bubblewrap"), {1: "agents:\n" + local_agent("A", "true")})
    code, found, line = bubblewrap_check(repo)
    assert code == 0, line
    assert found["ok"] and found["blocking"] and found["fix"] == ""
    assert found["detail"].startswith("works here (")
    assert "lanes that sandbox agents: main" in found["detail"]
    assert line.startswith("  ok    bubblewrap: works here")


def fake_denied_bwrap(repo: Repo) -> Probe:
    """A bwrap first on PATH that fails as one in a container without the rights does; the
    verdict the probe gives for it on this machine (root or not, its sysctls)."""
    path = repo.fake("bwrap", f'echo "{DENIED}" >&2\nexit 1\n')
    return check(str(path), lambda _: (1, DENIED), read_sysctl, os.geteuid())


@pytest.mark.parametrize(
    ("mode", "code", "word", "blocking", "informational", "said"),
    [
        ("bubblewrap", 1, "FAIL", True, False, "their agents fail until it is fixed"),
        ("auto", 0, "warn", False, False, "sandbox: auto in lanes main: their agents run"),
        (None, 0, "info", False, True, "no lane sets sandbox: nothing needs it yet"),
    ],
)
def test_where_bubblewrap_cannot_run_the_fix_is_given_and_blocks_only_when_needed(
    repo: Repo,
    mode: str | None,
    code: int,
    word: str,
    blocking: bool,
    informational: bool,
    said: str,
) -> None:
    expected = fake_denied_bwrap(repo)
    assert not expected.ok and expected.fix
    repo.lane("main", sandboxed_lane(mode), {1: "agents:\n" + local_agent("A", "true")})
    got, found, line = bubblewrap_check(repo)
    assert got == code, line
    assert not found["ok"]
    assert (found["blocking"], found["informational"]) == (blocking, informational)
    assert found["fix"] == expected.fix
    assert found["detail"].startswith(f"not available: {expected.problem}; fix: {expected.fix}")
    assert said in found["detail"]
    assert line.startswith(f"  {word:<5} bubblewrap: not available: ")


def lane_of(repo: Repo, mode: str) -> Any:
    repo.lane("main", sandboxed_lane(mode), {1: "agents:\n" + local_agent("A", "true")})
    return load_lane(repo.root, "main")


def test_each_failure_carries_the_probes_fix(repo: Repo) -> None:
    """Not installed, Ubuntu's AppArmor rule, a kernel that forbids user namespaces, a
    container: the line says what is wrong and gives the one fix, word for word."""
    lanes = [lane_of(repo, "bubblewrap")]
    apparmor = {"kernel.apparmor_restrict_unprivileged_userns": "1"}
    cases = [
        (check(None, lambda _: (0, ""), lambda _: None, 1000), INSTALL),
        (
            check("/usr/bin/bwrap", lambda _: (1, DENIED), apparmor.get, 1000),
            "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
        ),
        (
            check(
                "/usr/bin/bwrap", lambda _: (1, DENIED), {"user.max_user_namespaces": "0"}.get, 1000
            ),
            "sudo sysctl -w user.max_user_namespaces=15000",
        ),
        (check("/usr/bin/bwrap", lambda _: (1, DENIED), lambda _: None, 0), "--cap-add SYS_ADMIN"),
    ]
    for found, fix in cases:
        got = doctor._sandbox(lanes, found)
        assert (got.ok, got.blocking) == (False, True)
        assert fix in got.fix and f"fix: {got.fix}" in got.detail, got.detail
    profile = doctor._sandbox(lanes, cases[1][0]).fix
    assert "/etc/apparmor.d/bwrap" in profile and "userns," in profile


def run_unsandboxed(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """What a "sandbox" that is none does: the command after ``--``, with full rights."""
    done = subprocess.run(argv[argv.index("--") + 1 :], env=env, capture_output=True, text=True)
    return done.returncode, done.stderr


def test_a_sandbox_that_lets_writes_out_fails_the_trial() -> None:
    got = try_sandbox(Probe(True, "/usr/bin/bwrap"), run_unsandboxed)
    assert not got.ok
    for reached in ("a folder beside the repository", "HOME's .bashrc", "wave's run state"):
        assert reached in got.problem
    assert "does not protect your files here" in got.message


def test_a_sandbox_that_cannot_write_its_workspace_fails_the_trial() -> None:
    got = try_sandbox(Probe(True, "/usr/bin/bwrap"), lambda argv, env: (NOT_WRITTEN, "read-only"))
    assert not got.ok and "could not write its own workspace (read-only)" in got.problem


def test_a_trial_refused_by_the_kernel_gets_the_probes_fix() -> None:
    """The probe passed, the fuller sandbox failed (a mount it needs refused): the same
    wording and fix as the probe's, for what bwrap said."""
    got = try_sandbox(Probe(True, "/usr/bin/bwrap"), lambda argv, env: (1, DENIED))
    expected = check("/usr/bin/bwrap", lambda _: (1, DENIED), read_sysctl, os.geteuid())
    assert not got.ok and got.fix == expected.fix
    assert got.problem == f"a trial sandbox failed: {expected.problem}"


def test_a_trial_that_hangs_is_ended_at_its_timeout(tmp_path: Path) -> None:
    hanging = tmp_path / "bwrap"
    hanging.write_text("#!/bin/sh\nexec sleep 30\n")
    hanging.chmod(0o755)
    started = time.monotonic()
    got = try_sandbox(Probe(True, str(hanging)), seconds=0.5)
    assert time.monotonic() - started < 10
    assert not got.ok and "no answer in 0.5 s" in got.problem


def test_the_trial_runs_outside_tmp_and_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside /tmp, which is private in a sandbox: a write beside the workspace is refused
    there, not kept in the sandbox's own /tmp. The throwaway folder is removed."""
    import shutil
    import tempfile

    from wave_orchestrator.sandbox import trial

    base = Path(tempfile.mkdtemp(prefix="wave-doctor-test-", dir="/var/tmp"))
    seen: list[str] = []

    def watching(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        seen.extend(p.name for p in base.iterdir())
        return trial._runner(10)(argv, env)

    monkeypatch.setattr(trial, "BASES", (str(base),))
    monkeypatch.setenv("TMPDIR", "/tmp")  # under /tmp: passed over
    try:
        assert try_sandbox(run=watching).ok
        assert len(seen) == 1 and seen[0].startswith("wave-doctor-sandbox-")
        assert list(base.iterdir()) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)
