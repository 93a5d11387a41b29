"""The launch's check of each host: what a host says is never shown as it said it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from wave_orchestrator.definitions.model import SshHostDef, SshSettings
from wave_orchestrator.errors import PlacementError
from wave_orchestrator.placement.ssh import SshPlacement
from wave_orchestrator.placement.ssh_client import Answer
from wave_orchestrator.state.layout import StateLayout


class Says:
    """A host that answers every command with ``out``."""

    def __init__(self, out: str) -> None:
        self.out = out

    def run(self, remote: Sequence[str], **_: object) -> Answer:
        return Answer(0, self.out, "")


def placement(tmp_path: Path, out: str) -> SshPlacement:
    hosts = (SshHostDef("box1", "box1"),)
    layout = StateLayout(tmp_path / ".wave", "main")
    made = SshPlacement(SshSettings(hosts), layout, tmp_path, None, lambda _: None, ["claude"])
    made.hosts[0].client = Says(out)  # type: ignore[assignment]
    return made


def test_a_host_lacking_a_cli_is_one_clear_error_naming_only_what_wave_asked_about(
    tmp_path: Path,
) -> None:
    out = "root /srv/wave/t\nfree 999999\nmissing claude\nmissing \x1b[31mrm -rf\nmissing zzz\n"
    with pytest.raises(PlacementError) as caught:
        placement(tmp_path, out).check()
    assert str(caught.value) == "host box1 lacks claude on its PATH"


def test_a_full_disk_and_an_unusable_root_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PlacementError, match="its disk is full"):
        placement(tmp_path, "root /srv/wave/t\nfree 1024\n").check()
    with pytest.raises(PlacementError, match="no usable path"):
        placement(tmp_path, "root srv/../x\nfree 999999\n").check()


def test_a_host_that_has_everything_is_prepared(tmp_path: Path) -> None:
    made = placement(tmp_path, "root /srv/wave/t\nfree 999999\n")
    made.prepare(made.hosts[0])
    assert made.hosts[0].root == "/srv/wave/t" and made.room() == 4


def test_connection_sockets_live_only_in_a_private_folder(tmp_path: Path) -> None:
    from wave_orchestrator.placement.ssh_client import SshError, private_folder

    made = tmp_path / "made"
    private_folder(made)
    assert made.stat().st_mode & 0o777 == 0o700
    private_folder(made)  # found as it was made: used
    open_to_all = tmp_path / "open"
    open_to_all.mkdir(mode=0o755)
    open_to_all.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(made)
    for refused in (open_to_all, link):
        with pytest.raises(SshError, match="not a private folder"):
            private_folder(refused)
