"""Whether bubblewrap works here, asked once per process; and where it does not, the one
command or setting that fixes it, for each way it fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wave_orchestrator.sandbox import probe as probing
from wave_orchestrator.sandbox.probe import (
    Probe,
    SandboxUnavailable,
    check,
    effective_mode,
    probe,
)


def fails(said: str) -> object:
    return lambda bwrap: (1, said)


def no_sysctl(name: str) -> str | None:
    return None


def test_it_works_here_and_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe(fresh=True).ok, probe().message
    runs: list[str] = []
    real = probing.run_probe

    def counted(bwrap: str) -> tuple[int, str]:
        runs.append(bwrap)
        return real(bwrap)

    monkeypatch.setattr(probing, "run_probe", counted)
    first = probe(fresh=True)
    assert probe() is first and probe() is first
    assert runs == [shutil.which("bwrap")]
    assert first.require() == shutil.which("bwrap")
    assert first.message.startswith("bubblewrap works here")


def test_a_real_failure_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: nope' >&2\nexit 1\n")
    fake.chmod(0o755)
    found = probe(str(fake), fresh=True)
    assert not found.ok
    assert "Creating new namespace failed: nope" in found.problem
    with pytest.raises(SandboxUnavailable, match="bubblewrap cannot run here"):
        found.require()


def test_not_installed() -> None:
    found = check(None, fails("unused"), no_sysctl, 1000)  # type: ignore[arg-type]
    assert found == Probe(False, None, "bubblewrap (bwrap) is not installed", probing.INSTALL)
    assert "apt-get install bubblewrap" in found.message


def test_ubuntus_apparmor_rule() -> None:
    settings = {"kernel.apparmor_restrict_unprivileged_userns": "1"}
    said = "bwrap: setting up uid map: Permission denied"
    found = check("/usr/bin/bwrap", fails(said), settings.get, 1000)  # type: ignore[arg-type]
    assert "AppArmor forbids unprivileged user namespaces" in found.problem
    assert said in found.problem
    assert found.fix.startswith("sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
    assert "apparmor_parser -r /etc/apparmor.d/bwrap" in found.fix


@pytest.mark.parametrize(
    ("settings", "fix"),
    [
        ({"kernel.unprivileged_userns_clone": "0"}, "kernel.unprivileged_userns_clone=1"),
        ({"user.max_user_namespaces": "0"}, "user.max_user_namespaces=15000"),
    ],
)
def test_a_kernel_that_forbids_user_namespaces(settings: dict[str, str], fix: str) -> None:
    said = "bwrap: No permissions to creating new namespace"
    found = check("/usr/bin/bwrap", fails(said), settings.get, 1000)  # type: ignore[arg-type]
    assert not found.ok and fix in found.fix


def test_root_in_a_container_without_the_rights() -> None:
    said = "bwrap: Creating new namespace failed: Operation not permitted"
    settings = {"kernel.apparmor_restrict_unprivileged_userns": "1"}  # not root's concern
    found = check("/usr/bin/bwrap", fails(said), settings.get, 0)  # type: ignore[arg-type]
    assert "a container without the rights" in found.problem
    assert "--cap-add SYS_ADMIN" in found.fix and "sandbox: auto" in found.fix


def test_anything_else_says_what_bwrap_said() -> None:
    found = check("/opt/bwrap", lambda b: (-1, "no answer in 5 s"), no_sysctl, 1000)
    assert found.problem == "bwrap failed (bwrap said: no answer in 5 s)"
    assert "/opt/bwrap --ro-bind / / true" in found.fix


def test_what_a_mode_comes_to() -> None:
    works, broken = Probe(True, "/usr/bin/bwrap"), Probe(False, None, "not installed", "install")
    assert effective_mode("none", broken) == ("none", None)
    assert effective_mode("bubblewrap", works) == ("bubblewrap", None)
    assert effective_mode("auto", works) == ("bubblewrap", None)
    mode, warning = effective_mode("auto", broken)
    assert mode == "none" and warning is not None
    assert "unsandboxed" in warning and "fix: install" in warning
    with pytest.raises(SandboxUnavailable, match="not installed; fix: install"):
        effective_mode("bubblewrap", broken)
