"""An SSH host followed: each look's output is appended to the agent's output.log here in
order, never through a link; its status and backoff files are written only once the log
before them is all here; a dead pane frees its slot; a host that stops answering is told once
and lost after its timeout. The looks are answered by a fake client, or by the real LOOK
script run here with ``sh`` (no ssh) against a temporary host folder."""

from __future__ import annotations

import base64
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import pytest

from wave_orchestrator.definitions.model import SshHostDef
from wave_orchestrator.placement.ssh_client import ANSWER_LIMIT, Answer, SshClient
from wave_orchestrator.placement.ssh_host import HUNTED_LIMIT, Followed, Host
from wave_orchestrator.placement.ssh_remote import LOG_CHUNK, Look, Pane


class FakeClient:
    """Answers each command with the next of ``answers``; remembers the commands."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.calls: list[list[str]] = []

    def run(
        self,
        remote: Sequence[str],
        stdin: str | bytes | None = None,
        timeout: float = 60,
        limit: int = ANSWER_LIMIT,
    ) -> Answer:
        self.calls.append(list(remote))
        return self.answers.pop(0) if self.answers else Answer(255, "", "gone")


class LocalClient:
    """This machine as the host: the remote words run here, their answer bounded as the real
    client bounds it."""

    def run(
        self,
        remote: Sequence[str],
        stdin: str | bytes | None = None,
        timeout: float = 60,
        limit: int = ANSWER_LIMIT,
    ) -> Answer:
        done = subprocess.run(list(remote), capture_output=True, timeout=timeout, check=False)
        out = done.stdout[:limit].decode("utf-8", "replace")
        return Answer(done.returncode, out, done.stderr.decode("utf-8", "replace"))


def make_host(client: object, max_agents: int = 2, timeout: float = 600) -> Host:
    spec = SshHostDef(name="h1", destination="h1", max_agents=max_agents)
    host = Host(1, spec, cast(SshClient, client), timeout)
    host.root = "/srv/wave/t"
    return host


def followed(local_dir: Path, host_dir: str = "/srv/wave/t/root/a") -> Followed:
    local_dir.mkdir(parents=True, exist_ok=True)
    return Followed(local_dir, host_dir, "/srv/wave/t/root/w", "/w", "wave/a", True)


def logs(name: str, offset: int, data: bytes) -> Look:
    return Look({}, {name: (offset, data)}, {})


@pytest.fixture
def host(tmp_path: Path) -> Host:
    host = make_host(FakeClient())
    host.follow("A1", followed(tmp_path / "A1"))
    return host


# -- output.log --------------------------------------------------------------------------------
def test_output_is_appended_in_order(host: Host, tmp_path: Path) -> None:
    host._take(logs("A1", 0, b"one\n"), time.monotonic())
    host._take(logs("A1", 4, b"two\n"), time.monotonic())
    host._take(Look({}, {}, {}), time.monotonic())  # nothing new
    host._take(logs("A1", 8, b""), time.monotonic())
    assert (tmp_path / "A1" / "output.log").read_bytes() == b"one\ntwo\n"
    assert host.offsets["A1"] == 8


@pytest.mark.parametrize("offset", [0, 3, 5, 99])
def test_a_stale_offset_is_ignored(host: Host, tmp_path: Path, offset: int) -> None:
    host._take(logs("A1", 0, b"four"), time.monotonic())
    host._take(logs("A1", offset, b"again"), time.monotonic())
    assert (tmp_path / "A1" / "output.log").read_bytes() == b"four"
    assert host.offsets["A1"] == 4


def test_output_log_planted_as_a_link_is_not_written_through(host: Host, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"mine")
    (tmp_path / "A1" / "output.log").symlink_to(target)
    host._take(logs("A1", 0, b"hostile"), time.monotonic())
    assert target.read_bytes() == b"mine"
    assert (tmp_path / "A1" / "output.log").is_symlink()
    assert host.offsets["A1"] == 0  # nothing was brought: the same bytes are asked again


def test_output_for_a_session_not_followed_goes_nowhere(host: Host, tmp_path: Path) -> None:
    host._take(Look({}, {"B9": (0, b"x")}, {("B9", "status.json"): b"{}"}), time.monotonic())
    assert list(tmp_path.rglob("*.log")) == [] and list(tmp_path.rglob("*.json")) == []


# -- status and backoff ----------------------------------------------------------------------
def test_status_waits_until_the_log_is_caught_up(host: Host, tmp_path: Path) -> None:
    folder, chunk = tmp_path / "A1", b"x" * LOG_CHUNK
    status, backoff = b'{"state": "done"}', b'{"until": 1}'
    files = {("A1", "status.json"): status, ("A1", "backoff.json"): backoff}
    host._take(Look({}, {"A1": (0, chunk)}, files), time.monotonic())
    assert (folder / "output.log").stat().st_size == LOG_CHUNK
    assert not (folder / "status.json").exists() and not (folder / "backoff.json").exists()
    host._take(Look({}, {"A1": (LOG_CHUNK, b"tail")}, files), time.monotonic())
    assert (folder / "output.log").read_bytes() == chunk + b"tail"
    assert (folder / "status.json").read_bytes() == status
    assert (folder / "backoff.json").read_bytes() == backoff
    assert (folder / "status.json").stat().st_mode & 0o777 == 0o644


def test_status_is_written_again_only_when_it_changes(host: Host, tmp_path: Path) -> None:
    status = tmp_path / "A1" / "status.json"
    host._take(Look({}, {}, {("A1", "status.json"): b"{}"}), time.monotonic())
    assert status.read_bytes() == b"{}"
    status.unlink()  # the launcher took it
    host._take(Look({}, {}, {("A1", "status.json"): b"{}"}), time.monotonic())
    assert not status.exists()
    host._take(Look({}, {}, {("A1", "status.json"): b'{"n": 2}'}), time.monotonic())
    assert status.read_bytes() == b'{"n": 2}'


def test_a_status_link_or_bad_text_is_never_written(host: Host, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"mine")
    (tmp_path / "A1" / "status.json").symlink_to(target)
    bad = {("A1", "status.json"): b"{}", ("A1", "backoff.json"): b"\xff\xfe"}
    host._take(Look({}, {}, bad), time.monotonic())
    assert target.read_bytes() == b"mine" and (tmp_path / "A1" / "status.json").is_symlink()
    assert not (tmp_path / "A1" / "backoff.json").exists()


def test_a_look_across_a_new_try_writes_no_status_of_the_old_one(tmp_path: Path) -> None:
    folder = tmp_path / "A1"
    old_status = base64.b64encode(b'{"state": "failed"}').decode()
    more = base64.b64encode(b"old try's last words").decode()

    answer = Answer(0, f"log A1 3 {more}\nfile A1 status.json {old_status}\nend\n", "")
    followers: list[Host] = []

    class NewTryDuringLook(FakeClient):
        def run(
            self,
            remote: Sequence[str],
            stdin: str | bytes | None = None,
            timeout: float = 60,
            limit: int = ANSWER_LIMIT,
        ) -> Answer:
            followers[0].follow("A1", followed(folder))  # the launcher starts the next try
            return answer

    host = make_host(NewTryDuringLook())
    followers.append(host)
    host.follow("A1", followed(folder))
    host._take(logs("A1", 0, b"old"), time.monotonic())
    assert host.look(lambda _: None)
    assert not (folder / "status.json").exists()


# -- slots and panes ---------------------------------------------------------------------------
def test_a_dead_pane_frees_its_slot(tmp_path: Path) -> None:
    host = make_host(FakeClient(), max_agents=2)
    assert host.room() == 2
    for name, pid in (("A1", 10), ("A2", 11)):
        host.follow(name, followed(tmp_path / name))
        host.started_now(name, pid)
    assert host.room() == 0
    panes = {"A1": Pane("A1", True, 0, 10), "A2": Pane("A2", False, None, 11)}
    host._take(Look(panes, {}, {}), time.monotonic())
    assert host.room() == 1 and host.slots == {"A2"}
    host.reserve("A3")  # its start is in flight
    host._take(Look({}, {}, {}), time.monotonic())  # A2 gone since it started; A3 not yet
    assert host.slots == {"A3"}
    host.release("A3")
    assert host.room() == 2


def test_panes_seen_counts_a_session_started_after_the_look_began(host: Host) -> None:
    host.started_now("A0", 40)  # started, then gone before the look: it is not there
    began = time.monotonic()
    host.started_now("A1", 41)  # started while the look ran: it could not be seen
    host._take(Look({"B1": Pane("B1", True, 2, 50)}, {}, {}), began)
    assert host.panes_seen() == {
        "B1": Pane("B1", True, 2, 50),
        "A1": Pane("A1", False, None, 41),
    }
    host._take(Look({"A1": Pane("A1", True, 1, 41)}, {}, {}), time.monotonic())
    assert host.panes_seen() == {"A1": Pane("A1", True, 1, 41)}  # the look's word wins


# -- answering, silent, lost -----------------------------------------------------------------
def test_a_silent_host_is_told_once_lost_after_its_timeout_and_taken_back(
    tmp_path: Path,
) -> None:
    ok = Answer(0, "end\n", "")
    client = FakeClient(ok, Answer(255, "", "timeout"), Answer(0, "pane A1 0  1\n", ""))
    client.answers += [Answer(255, "", "x")] * 3 + [ok]
    host, said = make_host(client, max_agents=3), list[str]()
    host.follow("A1", followed(tmp_path / "A1"))
    assert host.look(said.append) and said == [] and host.room() == 2
    assert not host.look(said.append)  # no answer
    assert not host.look(said.append)  # a cut answer (no end) is none either
    assert len(said) == 1 and said[0].startswith("host h1 not answering since ")
    assert host.room() == 0 and not host.lost
    assert not host.look(said.append) and len(said) == 1  # told once
    assert host.silent_since is not None
    host.silent_since -= 601  # its timeout (600 s) has passed
    assert not host.look(said.append) and host.lost
    assert said[1] == "host h1 lost after 10 min: its agents end host-lost"
    assert not host.look(said.append) and len(said) == 2
    host.doomed.add("A1")
    assert host.look(said.append)
    assert said[2] == "host h1 answers again: it takes agents again"
    assert not host.lost and host.answering and host.room() == 2 and not host.doomed
    kill = client.calls[-1]
    assert kill[:2] == ["sh", "-c"] and "kill-session" in kill[2]
    assert kill[4:] == ["/srv/wave/t", "A1"]


def test_a_host_with_no_root_is_not_looked_at() -> None:
    client = FakeClient()
    host = make_host(client)
    host.root = None
    assert not host.look(lambda _: None) and client.calls == [] and host.answering


# -- the LOOK script, run here ---------------------------------------------------------------
def test_a_real_look_brings_output_and_status_here(tmp_path: Path) -> None:
    there, here = tmp_path / "host" / "A1", tmp_path / "here" / "A1"
    there.mkdir(parents=True)
    host = make_host(LocalClient())
    host.root = str(tmp_path / "host")  # no tmux server there: no panes, still an answer
    host.follow("A1", followed(here, str(there)))
    with open(there / "output.log", "ab") as log:
        log.write(b"first\n")
        log.flush()
        assert host.look(lambda _: None)
        log.write(b"second \xff\n")
        log.flush()
        (there / "status.json").write_text('{"state": "done"}')
        assert host.look(lambda _: None)
    assert (here / "output.log").read_bytes() == b"first\nsecond \xff\n"
    assert (here / "status.json").read_text() == '{"state": "done"}'
    assert host.offsets["A1"] == os.path.getsize(there / "output.log")
    assert host.panes == {}


def test_a_real_look_at_a_lot_of_output_is_answered(tmp_path: Path) -> None:
    there, here = tmp_path / "host" / "A1", tmp_path / "here" / "A1"
    there.mkdir(parents=True)
    (there / "output.log").write_bytes(b"y" * (900 * 1024))
    host = make_host(LocalClient())
    host.root = str(tmp_path / "host")
    host.follow("A1", followed(here, str(there)))
    for _ in range(-(-900 * 1024 // LOG_CHUNK)):  # a bounded chunk per look, none cut short
        assert host.look(lambda _: None)
    assert (here / "output.log").stat().st_size == 900 * 1024


# -- what ended agents left running ------------------------------------------------------------
def test_what_was_left_is_searched_for_until_gone_and_bounded(tmp_path: Path) -> None:
    """Sessions whose leftovers a look found are named to the next look, that one only while
    found again; a host that names thousands is searched for a bounded few."""
    client = FakeClient(
        Answer(0, "pane w1-A 1 0 41\nleft w1-A 77\nend\n", ""),
        Answer(0, "left w1-A 77\nend\n", ""),  # its pane gone: found by name
        Answer(0, "end\n", ""),  # nothing left
        Answer(0, "end\n", ""),
    )
    host = Host(1, SshHostDef(name="h1", destination="h1"), cast(SshClient, client), 600, "s")
    host.root = "/srv/wave/t"

    def named(call: list[str]) -> list[str]:  # the sessions a look searched for by name
        return call[7 : 7 + int(call[6])]  # sh -c LOOK sh root socket n names...

    for _ in range(4):
        assert host.look(lambda _: None)
    assert [named(call) for call in client.calls] == [[], ["w1-A"], ["w1-A"], []]
    assert not host.left_running("w1-A")
    host.leftovers = {f"w1-A{i}": (1,) for i in range(HUNTED_LIMIT * 3)}
    client.answers.append(Answer(0, "end\n", ""))
    host.look(lambda _: None)
    assert len(named(client.calls[-1])) == HUNTED_LIMIT
