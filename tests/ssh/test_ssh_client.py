"""The one place wave talks to OpenSSH, against real sshd: commands quoted word by word, one
shared connection per host, no prompt and no unknown host key taken, nothing left running."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_for

from wave_orchestrator.placement.ssh_client import SshClient, SshError, SshHost

pytestmark = pytest.mark.e2e


@pytest.fixture
def control_dir() -> Iterator[Path]:
    """Short: a control socket's path must fit a unix socket's 108 bytes."""
    with tempfile.TemporaryDirectory(prefix="wc", dir="/tmp") as folder:
        yield Path(folder)


def client(hosts: Path, control: Path, name: str = "host1") -> SshClient:
    return SshClient(SshHost(name, name, hosts / "ssh_config"), control)


def test_a_hostile_word_reaches_the_host_as_one_word_and_is_never_run(
    ssh_hosts: Path, control_dir: Path, tmp_path: Path
) -> None:
    c = client(ssh_hosts, control_dir)
    made = tmp_path / "PWNED"
    word = f"a $(touch {made}) `touch {made}` ; touch {made} 'q' \"d\"\nline two ünï"
    try:
        answer = c.run(["printf", "%s", word])
        assert answer.code == 0, answer.err
        assert answer.out == word and not made.exists()
        assert c.run(["sh", "-c", 'echo "$WAVE_TEST_HOST $SSH_CONNECTION"']).out.startswith(
            "host1 127.0.0.1 "
        )
    finally:
        c.close()


def test_one_shared_connection_per_host_ended_by_close(ssh_hosts: Path, control_dir: Path) -> None:
    first, second = client(ssh_hosts, control_dir), client(ssh_hosts, control_dir, "host2")
    try:
        assert first.run(["true"]).code == 0 and second.run(["true"]).code == 0
        assert first.connected() and second.connected()
        assert len(list(control_dir.iterdir())) == 2  # a master per host, reused after
        for _ in range(3):
            assert first.run(["true"]).code == 0
        assert len(list(control_dir.iterdir())) == 2
    finally:
        first.close()
        second.close()
    wait_for(lambda: not any(control_dir.iterdir()), 10, what="the masters' end")
    assert not first.connected()


def test_a_host_whose_key_is_not_known_is_refused_without_a_prompt(
    ssh_hosts: Path, control_dir: Path, tmp_path: Path
) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        (ssh_hosts / "ssh_config")
        .read_text()
        .replace(str(ssh_hosts / "known_hosts"), str(tmp_path / "empty_known_hosts"))
    )
    c = SshClient(SshHost("host1", "host1", config), control_dir)
    answer = c.run(["true"], timeout=30)
    assert answer.code == 255 and "host key" in answer.err.lower()


def test_what_the_host_lacks_is_named(ssh_hosts: Path, control_dir: Path) -> None:
    c = client(ssh_hosts, control_dir)
    try:
        assert c.missing(["tmux", "git", "no-such-cli-here"]) == ["no-such-cli-here"]
    finally:
        c.close()


@pytest.mark.parametrize("destination", ["-oProxyCommand=touch x", "a b", "host\n", ""])
def test_a_destination_that_is_no_host_is_refused(destination: str, control_dir: Path) -> None:
    with pytest.raises(SshError):
        SshClient(SshHost("h", destination), control_dir)


def test_git_pushes_to_a_mirror_on_the_host_and_fetches_its_commits_back(
    ssh_hosts: Path, control_dir: Path, tmp_path: Path
) -> None:
    """The repository reaches a host by a push over the host's shared connection (the host
    needs no network of its own), and an agent's commit there comes back by a fetch."""
    import os
    import subprocess

    from helpers import git_init

    c = client(ssh_hosts, control_dir, "host2")
    local = tmp_path / "repo"
    local.mkdir()
    git_init(local)
    mirror = str(ssh_hosts / "host2" / "workdir" / "mirror.git")
    env = {**os.environ, "GIT_SSH_COMMAND": c.git_ssh_command()}

    def git(*args: str, cwd: Path = local) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    try:
        assert c.run(["git", "init", "-q", "--bare", mirror]).code == 0
        git("push", "-q", c.git_url(mirror), "HEAD:refs/heads/base")
        assert c.connected()  # git went through the shared connection
        # an agent's worktree on the host, and its commit
        tree = str(ssh_hosts / "host2" / "workdir" / "A1")
        script = (
            'git -C "$1" worktree add -q -b wave/A1 "$2" base && cd "$2" && echo work > a.txt '
            "&& git add a.txt && git -c user.name=a -c user.email=a@x commit -q -m 'A1 did it'"
        )
        answer = c.run(["sh", "-c", script, "sh", mirror, tree])
        assert answer.code == 0, answer.err
        git("fetch", "-q", c.git_url(mirror), "wave/A1:refs/heads/wave/A1")
        assert git("log", "-1", "--format=%s", "wave/A1") == "A1 did it"
    finally:
        c.close()


def test_a_host_that_floods_its_answer_is_cut_off_not_read_whole(
    ssh_hosts: Path, control_dir: Path
) -> None:
    c = client(ssh_hosts, control_dir)
    try:
        answer = c.run(["yes"], timeout=60, limit=1000)  # never ends by itself
        assert answer.code == 255 and answer.out == ""
        assert answer.err == "host host1 answered past 1000 bytes"
        assert c.run(["true"]).code == 0  # the shared connection still serves
    finally:
        c.close()
