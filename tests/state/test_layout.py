from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from wave_orchestrator.state.layout import StateLayout, resolve_state_dir, session_name, socket_name


def test_socket_name_is_lane_plus_sha1_of_resolved_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAVE_TMUX_SOCKET", raising=False)
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    expected = "wave-main-" + hashlib.sha1(str(real.resolve()).encode()).hexdigest()[:8]
    assert socket_name("main", real) == expected
    assert socket_name("main", link) == expected  # symlinks resolved
    monkeypatch.setenv("WAVE_TMUX_SOCKET", "private")
    assert socket_name("main", real) == "private"


@pytest.mark.parametrize("bad", ["a.b", "a:b", "1a", "", "a b", "a$(x)"])
def test_session_names_refuse_what_tmux_would_rewrite(bad: str) -> None:
    with pytest.raises(ValueError):
        session_name(1, bad)


def test_layout_paths(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path, "main")
    agent = layout.agent(2, "A1")
    assert agent.status == tmp_path / "waves/wave-2/agents/A1/status.json"
    assert agent.attempt_log(1).name == "attempt-1.log"
    assert StateLayout(tmp_path, "main", dry_run=True).agent(2, "A1").run_script == (
        tmp_path / "dry-run/waves/wave-2/agents/A1/run.sh"
    )
    assert layout.run_state == StateLayout(tmp_path, "main", dry_run=True).run_state
    with pytest.raises(ValueError):
        layout.agent(1, "../x")


def test_state_dir_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAVE_STATE_DIR", raising=False)
    assert resolve_state_dir(tmp_path, "main", None) == tmp_path / ".wave" / "main"
    assert resolve_state_dir(tmp_path, "main", "state") == (tmp_path / "state").resolve()
    monkeypatch.setenv("WAVE_STATE_DIR", str(tmp_path / "elsewhere"))
    assert resolve_state_dir(tmp_path, "main", "state") == (tmp_path / "elsewhere").resolve()


def test_a_changed_copy_of_a_layout_is_checked_as_a_new_one(tmp_path: Path) -> None:
    """The tuple's own copy would skip the lane name's check."""
    from wave_orchestrator.state.layout import StateLayout

    layout = StateLayout(tmp_path, "main")
    assert layout._replace(dry_run=True) == StateLayout(tmp_path, "main", True)
    assert isinstance(layout._replace(dry_run=True), StateLayout)
    with pytest.raises(ValueError, match="invalid lane name"):
        layout._replace(lane="../other")
