"""An agent's files shipped to an SSH host name this machine's paths; each path under the
checkout's roots is moved below the host's ``root/`` (and nothing else is), quoted shell words
stay the same words, and the tar unpacks there with the owner-only modes the wrapper needs."""

from __future__ import annotations

import io
import shlex
import subprocess
import tarfile
from pathlib import Path

import pytest

from wave_orchestrator.placement.ssh_ship import Relocation, pack
from wave_orchestrator.state.fsutil import UnsafePath

HOST = "/srv/wave/repo-1a2b"
BASE = f"{HOST}/root"


def shell(words: str) -> str:
    """What bash makes of ``words`` as printf's arguments: each word, as it means it."""
    done = subprocess.run(
        ["bash", "-c", f"printf '<%s>' {words}"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_path_under_a_root_moves_below_the_hosts_root() -> None:
    where = Relocation([Path("/repo")], HOST)
    assert where.path(Path("/repo/x")) == f"{BASE}/repo/x" == where.path("/repo/x")
    for text, moved in [
        ("/repo/x", f"{BASE}/repo/x"),
        ("/repo", f"{BASE}/repo"),
        ("cd /repo/a && ls /repo", f"cd {BASE}/repo/a && ls {BASE}/repo"),
        ("X=/repo/y", f"X={BASE}/repo/y"),
        ("PATH=/repo/bin:/usr/bin", f"PATH={BASE}/repo/bin:/usr/bin"),
        ("see '/repo/p q'.", f"see '{BASE}/repo/p q'."),
        ('{"cwd": "/repo/w"}', f'{{"cwd": "{BASE}/repo/w"}}'),
        ("(/repo)", f"({BASE}/repo)"),
        ("a;/repo;b", f"a;{BASE}/repo;b"),
        ("line /repo\nnext", f"line {BASE}/repo\nnext"),
    ]:
        assert where.text(text) == moved, text


@pytest.mark.parametrize(
    "text",
    [
        "/repo2",
        "/repo2/x",
        "/other/repo",
        "/other/repo/x",
        "/repo.bak/x",
        "/repo-old",
        "/repo_x",
        "rel/repo/x",
        "./repo",
        "$HOME/repo",
        "/usr/bin:/bin",
    ],
)
def test_a_path_not_under_a_root_is_untouched(text: str) -> None:
    assert Relocation([Path("/repo")], HOST).text(text) == text


def test_a_home_relative_path_is_untouched() -> None:
    assert Relocation([Path("/repo")], HOST).text("see ~/repo/x") == "see ~/repo/x"


def test_no_roots_or_the_filesystem_root_relocate_nothing() -> None:
    assert Relocation([], HOST).text("/repo/x /") == "/repo/x /"
    assert Relocation([Path("/")], HOST).text("/repo/x /") == "/repo/x /"


def test_quoted_words_of_a_run_script_stay_the_same_words() -> None:
    paths = [
        "/repo/it's here/a\"b",
        "/repo/.wave/state/agents/A1/prompt.md",
        "/repo/$(touch pwned)/`x`",
        "/repo/tab\there;&|",
        "/repo",
    ]
    where = Relocation([Path("/repo")], HOST)
    run_sh = "\n".join(
        [
            "#!/usr/bin/env bash",
            f"cd {shlex.quote(paths[0])} || exit 1",
            f"export WAVE_PROMPT={shlex.quote(paths[1])}",
            *(f"printf '%s\\n' {shlex.quote(p)}" for p in paths[2:]),
            "",
        ]
    )
    moved = where.text(run_sh)
    assert subprocess.run(["bash", "-n"], input=moved, text=True, timeout=30).returncode == 0
    for path in paths:
        assert shell(where.text(shlex.quote(path))) == f"<{where.path(path)}>"
    assert moved.count(BASE) == len(paths)


@pytest.mark.parametrize("order", [0, 1])
def test_nested_roots_relocate_a_path_once(order: int) -> None:
    roots = [Path("/repo"), Path("/repo/.wave/state/"), Path("/var/cache/wave-state")]
    where = Relocation(roots if order else roots[::-1], HOST)
    text = "/repo/.wave/state/agents/A1 /repo/src /var/cache/wave-state/x /repo/.wave/stateful"
    assert where.text(text) == (
        f"{BASE}/repo/.wave/state/agents/A1 {BASE}/repo/src "
        f"{BASE}/var/cache/wave-state/x {BASE}/repo/.wave/stateful"
    )


def test_a_root_is_matched_as_written_not_as_a_pattern() -> None:
    where = Relocation([Path("/re.o+")], HOST)
    assert where.text("/re.o+/x /repo/x /reXo/x") == f"{BASE}/re.o+/x /repo/x /reXo/x"


# -- pack --------------------------------------------------------------------------------------
def agent_folder(repo: Path) -> Path:
    folder = repo / ".wave" / "state" / "agents" / "A1"
    folder.mkdir(parents=True)
    (folder / "run.sh").write_text(
        f"#!/usr/bin/env bash\ncd {shlex.quote(str(repo))}\n"
        f"printf ran > {shlex.quote(str(folder / 'ran here'))}\n"
    )
    (folder / "prompt.md").write_text(f"Work in {repo}/src, not in {repo}2.\n")
    return folder


def members(payload: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        return {info.name: info for info in tar.getmembers()}


def test_pack_names_its_members_below_the_hosts_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder, accounts = agent_folder(repo), repo / ".wave" / "state" / "accounts"
    where = Relocation([repo], HOST)
    payload = pack(folder, [accounts], where)
    found = members(payload)
    rel = str(folder).lstrip("/")
    shipped = {rel, str(accounts).lstrip("/"), f"{rel}/run.sh", f"{rel}/prompt.md"}
    assert set(found) == shipped | {f"{rel}/bin", f"{rel}/bin/wave"}  # its `wave` there
    assert found[f"{rel}/bin/wave"].mode == 0o700
    for name, info in found.items():
        assert not name.startswith("/") and ".." not in name.split("/")
        assert info.isdir() or info.isfile()
    assert found[rel].isdir() and found[rel].mode == 0o700
    assert found[f"{rel}/run.sh"].mode == 0o700
    assert found[f"{rel}/prompt.md"].mode == 0o600
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        prompt = tar.extractfile(f"{rel}/prompt.md")
        assert prompt is not None
        assert prompt.read().decode() == f"Work in {BASE}{repo}/src, not in {repo}2.\n"


def test_pack_ships_a_retry_prompt_when_there_is_one(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path / "repo")
    (folder / "retry-prompt.md").write_text("again\n")
    found = members(pack(folder, [], Relocation([tmp_path / "repo"], HOST)))
    assert found[f"{str(folder).lstrip('/')}/retry-prompt.md"].mode == 0o600


@pytest.mark.parametrize("name", ["run.sh", "prompt.md"])
def test_pack_refuses_a_link_in_the_agent_folder(tmp_path: Path, name: str) -> None:
    folder = agent_folder(tmp_path / "repo")
    secret = tmp_path / "secret"
    secret.write_text("never shipped")
    (folder / name).unlink()
    (folder / name).symlink_to(secret)
    with pytest.raises(UnsafePath):
        pack(folder, [], Relocation([tmp_path / "repo"], HOST))


def test_pack_unpacks_with_one_tar_and_its_run_script_works_there(tmp_path: Path) -> None:
    """As START does: ``tar -x -C <root>/root`` under umask 077, then bash runs run.sh, which
    works in the relocated folder and never touches this machine's."""
    repo, host = tmp_path / "repo", tmp_path / "host"
    folder = agent_folder(repo)
    where = Relocation([repo], str(host))
    (host / "root" / str(repo).lstrip("/")).mkdir(parents=True)  # its worktree, made by git
    payload = pack(folder, [repo / ".wave" / "state" / "accounts"], where)
    subprocess.run(
        ["sh", "-c", 'umask 077; tar -x -f - -C "$1"', "sh", str(host / "root")],
        input=payload,
        check=True,
        timeout=30,
    )
    there = Path(where.path(folder))
    assert (there / "run.sh").stat().st_mode & 0o777 == 0o700
    assert (there / "prompt.md").stat().st_mode & 0o777 == 0o600
    assert Path(where.path(repo / ".wave" / "state" / "accounts")).is_dir()
    done = subprocess.run(["bash", str(there / "run.sh")], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert (there / "ran here").read_text() == "ran"
    assert not (folder / "ran here").exists()


def test_pack_ships_the_agents_skill_files_relocated_but_never_a_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = agent_folder(repo)
    skill = folder / "skills" / "review" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(f"Read {folder}/skills/review/references/style.md first.\n")
    secret = tmp_path / "secret"
    secret.write_text("never shipped")
    (folder / "skills" / "review" / "planted.md").symlink_to(secret)
    (folder / "skills" / "linked").symlink_to(tmp_path, target_is_directory=True)
    payload = pack(folder, [], Relocation([repo], HOST))
    rel = str(skill).lstrip("/")
    shipped = [name for name in members(payload) if "/skills/" in name]
    assert shipped == [rel]
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        text = tar.extractfile(rel)
        assert text is not None
        assert (
            text.read().decode()
            == f"Read {BASE}{folder}/skills/review/references/style.md first.\n"
        )
