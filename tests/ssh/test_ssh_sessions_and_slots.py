"""Which pane is an agent's, which slot is free, and what a launch follows, across tries and
hosts: decided from looks, without a host (fake answers)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from test_ssh_host_follow import FakeClient, followed, make_host

from wave_orchestrator.definitions.model import SshHostDef, SshSettings
from wave_orchestrator.placement.ssh import SshPlacement
from wave_orchestrator.placement.ssh_client import Answer
from wave_orchestrator.placement.ssh_remote import SETTLE, Look, Pane, script
from wave_orchestrator.state.layout import StateLayout


def two_hosts(tmp_path: Path) -> SshPlacement:
    hosts = (SshHostDef("a", "a"), SshHostDef("b", "b"))
    layout = StateLayout(tmp_path / ".wave", "main")
    made = SshPlacement(SshSettings(hosts), layout, tmp_path, None, lambda _: None)
    for host in made.hosts:
        host.root = f"/srv/{host.name}"
        host.client = FakeClient()  # type: ignore[assignment]
    made.following = True
    return made


def test_a_retry_on_another_host_is_not_taken_for_its_old_pane(tmp_path: Path) -> None:
    made = two_hosts(tmp_path)
    a, b = made.hosts
    a._take(Look({"w1-A": Pane("w1-A", True, 0, 11)}, {}, {}), time.monotonic())
    b.follow("w1-A", followed(tmp_path / "A"))
    b.started_now("w1-A", 22)
    made.where["w1-A"] = b  # the retry runs on b
    pane = made.sessions()["w1-A"]
    assert not pane.dead and pane.host == "b" and pane.pid == 2 << 32 | 22


def test_a_look_of_an_earlier_try_frees_no_slot_of_the_next(tmp_path: Path) -> None:
    host = make_host(FakeClient(), max_agents=1)
    host.follow("w1-A", followed(tmp_path / "A"))
    host.started_now("w1-A", 11)
    began = time.monotonic()
    host.reserve("w1-A")  # its retry's start is in flight on the same host
    host._take(Look({"w1-A": Pane("w1-A", True, 0, 11)}, {}, {}), began)
    assert host.room() == 0  # the old try's dead pane is not the new try's end
    host.started_now("w1-A", 33)
    host._take(Look({"w1-A": Pane("w1-A", True, 0, 33)}, {}, {}), time.monotonic())
    assert host.room() == 1


def test_only_a_resumed_launch_follows_sessions_it_did_not_start(tmp_path: Path) -> None:
    made = two_hosts(tmp_path)
    a = made.hosts[0]
    a._take(Look({"w1-A": Pane("w1-A", False, None, 11)}, {}, {}), time.monotonic())
    folder = made.layout.agent(1, "A").dir
    folder.mkdir(parents=True)
    (folder / "host.json").write_text('{"host": "a", "local_cwd": "", "branch": "", "log_base": 0}')
    made.sessions()
    assert "w1-A" not in a.followed  # a new launch: an old session is no agent of its own
    made.resuming = True
    made.remove(["w1-A"])
    made.sessions()
    assert "w1-A" not in a.followed  # taken away: never followed again
    made.removed.clear()
    made.sessions()
    assert "w1-A" in a.followed and a.room() == 3


def test_a_backoff_the_wrapper_ended_on_its_host_ends_here(tmp_path: Path) -> None:
    host = make_host(FakeClient())
    host.follow("A1", followed(tmp_path / "A1"))
    local = tmp_path / "A1" / "backoff.json"
    host._take(Look({}, {}, {("A1", "backoff.json"): b'{"until": 1}'}), time.monotonic())
    assert local.exists()
    host._take(Look({}, {}, {}), time.monotonic())
    assert not local.exists()


def test_a_silent_host_is_not_waited_on_to_signal(tmp_path: Path) -> None:
    made = two_hosts(tmp_path)
    a = made.hosts[0]
    a.silent_since = time.time()
    a.client = FakeClient(Answer(0, "", ""))  # type: ignore[assignment]
    assert made.signal(1 << 32 | 11, 15) is False
    assert a.client.calls == []  # type: ignore[attr-defined]


def test_leftovers_that_cannot_be_committed_on_the_host_are_an_error(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "wave/a"], ["config", "user.useConfigOnly", "true"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, env=env)
    (tree / "left.txt").write_text("work")
    env.pop("GIT_AUTHOR_EMAIL", None)
    env.pop("EMAIL", None)
    done = subprocess.run(
        script(SETTLE, str(tree), "wave/a", "wave: left"), capture_output=True, env=env
    )
    assert done.returncode == 3  # no identity: the commit fails, and so does the settling


def test_a_resumed_launch_takes_the_session_on_the_host_its_record_names(tmp_path: Path) -> None:
    made = two_hosts(tmp_path)
    made.resuming = True
    a, b = made.hosts
    a._take(Look({"w1-A": Pane("w1-A", True, 0, 11)}, {}, {}), time.monotonic())  # a try before
    b._take(Look({"w1-A": Pane("w1-A", False, None, 22)}, {}, {}), time.monotonic())
    folder = made.layout.agent(1, "A").dir
    folder.mkdir(parents=True)
    (folder / "host.json").write_text('{"host": "b", "local_cwd": "", "branch": "", "log_base": 0}')
    pane = made.sessions()["w1-A"]
    assert pane.host == "b" and not pane.dead and "w1-A" in b.followed
    made.remove(["w1-A"])
    assert made.where["w1-A"] is b
