"""Fault class 6: input that explodes. Alias bombs, deep nesting, recursive aliases, bytes that
are not UTF-8 (in a lane file, an environment value, the repository path) and FIFOs in place of
lane files give a located problem or a warning, never a traceback, a hang or gigabytes; and
`wave stop` stops a running lane whatever its lane files have become."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml
from helpers import Repo, local_lane, wait_for

from wave_orchestrator.definitions.source.yaml_source import YamlSyntaxError, load_located

# 396 bytes; PyYAML's own loader expands it to 9**9 strings (minutes and gigabytes).
BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP = "a: " + "[" * 1000 + "]" * 1000 + "\n"
RECURSIVE = "agents: &a [*a]\n"
NOT_UTF8 = b"description: caf\xe9\nclosure: {required_roles: []}\n"
WAVE = "agents:\n  - {id: A1, prompt: work, executor: {local: {command: [echo, hi]}}}\n"
READ_ONLY_COMMANDS = [
    ("status", "--json"),
    ("stop",),
    ("lanes",),
    ("metrics",),
    ("dashboard", "--once"),
    ("logs", "A1"),
    ("desk", "status", "--wave", "1"),
]


def write_lane(repo: Repo, lane_yaml: str | bytes, wave: str | bytes = WAVE) -> None:
    repo.lane("main", local_lane(), {1: ""})
    folder = repo.root / "lanes" / "main"
    for path, body in ((folder / "lane.yaml", lane_yaml), (folder / "waves/wave-1.yaml", wave)):
        path.write_bytes(body.encode() if isinstance(body, str) else body)


def no_traceback(result: object) -> None:
    out = getattr(result, "stdout", "") + getattr(result, "stderr", "")
    assert "Traceback" not in out, out


def test_the_bomb_really_is_one() -> None:
    assert len(BILLION_LAUGHS) < 460 and BILLION_LAUGHS.count("*") == 8 * 9


@pytest.mark.parametrize("where", ["lane.yaml", "wave-1.yaml"])
def test_an_alias_bomb_is_refused_at_its_line_in_well_under_a_second(
    repo: Repo, where: str
) -> None:
    if where == "lane.yaml":
        write_lane(repo, BILLION_LAUGHS)
    else:
        write_lane(repo, local_lane(), "title: x\n" + BILLION_LAUGHS)
    began = time.monotonic()
    result = repo.wave("validate", "--lane", "main", timeout=60)
    assert time.monotonic() - began < 30  # unbounded, it takes minutes and gigabytes
    assert result.returncode == 2, result.stderr
    no_traceback(result)
    assert f"{where}:" in result.stderr and "aliases expand to more than" in result.stderr


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        # libyaml stops at 1000 levels, PyYAML's scanner (n**2 in brackets) at 64
        (DEEP, "1:", "nesting"),
        ("a: " + "[" * 100_000 + "]" * 100_000, "1:", "nesting"),
        ("a: " + "[" * 500 + "]" * 500 + "\n", "1:", "nesting deeper than 64 levels"),
        ("x: 1\n" + "y: " + "{a: " * 500 + "1" + "}" * 500 + "\n", "2:", "nesting deeper"),
        (RECURSIVE, "1:", "an alias that contains itself"),
        ("a: " + "9" * 5000 + "\n", "1:1", "YAML value error"),
        ("<<: 3\n", "1:5", "a merge key (<<) takes a mapping"),
        ("? [a, b]\n: 1\n", "1:3", "a mapping key must be a plain value"),
    ],
)
def test_deep_recursive_and_oversized_values_are_located_problems(
    repo: Repo, body: str, line: str, message: str
) -> None:
    write_lane(repo, local_lane(), body)
    result = repo.wave("validate", "--lane", "main")
    assert result.returncode == 2
    no_traceback(result)
    assert f"lanes/main/waves/wave-1.yaml:{line}" in result.stderr, result.stderr
    assert message in result.stderr


def test_merge_keys_still_work_with_the_bounded_loader(repo: Repo) -> None:
    write_lane(
        repo,
        local_lane(),
        "x-agent: &base {prompt: work, executor: {local: {command: [echo, hi]}}}\n"
        "agents:\n  - {<<: *base, id: A1}\n  - {<<: *base, id: A2, prompt: other}\n",
    )
    # `x-agent` is an unknown key; everything merged from it is valid.
    result = repo.wave("validate", "--lane", "main", "--json")
    errors = json.loads(result.stdout)["errors"]
    assert [e["field"] for e in errors] == ["x-agent"]


@pytest.mark.parametrize(
    ("bad", "command"),
    [(bad, c) for bad in ("deep", "not-utf8") for c in READ_ONLY_COMMANDS]
    + [(bad, c) for bad in ("bomb", "fifo") for c in (("status", "--json"), ("stop",))],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_every_command_reports_a_broken_lane_yaml_and_goes_on(
    repo: Repo, bad: str, command: tuple[str, ...]
) -> None:
    bodies: dict[str, str | bytes] = {"deep": DEEP, "bomb": BILLION_LAUGHS, "not-utf8": NOT_UTF8}
    write_lane(repo, bodies.get(bad, ""))
    if bad == "fifo":
        lane_yaml = repo.root / "lanes" / "main" / "lane.yaml"
        lane_yaml.unlink()
        os.mkfifo(lane_yaml)
    result = repo.wave(*command, timeout=30)  # no --lane: the repository's only lane
    no_traceback(result)
    assert result.returncode in (0, 2), result.stderr  # 2: `logs` of an agent that never ran
    if command[0] not in ("desk",):
        assert "wave: warning: lanes/main/lane.yaml:" in result.stderr, result.stderr


@pytest.mark.parametrize("bad", ["not-utf8", "fifo"])
def test_validate_locates_bytes_that_are_not_utf8_and_never_blocks_on_a_fifo(
    repo: Repo, bad: str
) -> None:
    write_lane(repo, local_lane(), b"title: ok\nagents: []\n# caf\xe9\n")
    wave_file = repo.root / "lanes" / "main" / "waves" / "wave-1.yaml"
    if bad == "fifo":
        wave_file.unlink()
        os.mkfifo(wave_file)
    result = repo.wave("validate", "--lane", "main", timeout=30)
    assert result.returncode == 2
    no_traceback(result)
    expected = "3:6: not UTF-8 text (byte e9)" if bad == "not-utf8" else "a FIFO"
    assert expected in result.stderr, result.stderr


def test_an_environment_value_that_is_not_utf8_reaches_the_agent_byte_for_byte(
    tmux_repo: Repo,
) -> None:
    command = json.dumps(["bash", "-c", 'printf %s "$RAW_BYTES" | od -An -tx1'])
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: f"agents:\n  - {{id: A1, prompt: work, executor: {{local: {{command: {command}}}}}}}\n"
        },
    )
    env = {k: v for k, v in tmux_repo.env.items()}
    env["RAW_BYTES"] = os.fsdecode(b"a\xffb")
    env["PATH"] += os.pathsep + os.fsdecode(b"/nowhere/caf\xe9")  # in every agent's env
    tmux_repo.env = env
    for args in (("launch", "--dry-run"), ("launch", "--no-dashboard")):
        result = tmux_repo.wave(*args, "--lane", "main")
        assert result.returncode == 0, result.stderr
        no_traceback(result)
    log = (tmux_repo.agent_dir("main", 1, "A1") / "output.log").read_text()
    assert "61 ff 62" in log
    preview = tmux_repo.state("main") / "dry-run" / "launch-preview.json"
    agent_path = json.loads(preview.read_text(encoding="utf-8"))[0]["env"]["PATH"]
    assert agent_path.endswith(os.fsdecode(b"/nowhere/caf\xe9"))  # escaped, read back the same


def test_a_repository_path_that_is_not_utf8_is_a_validation_error(tmp_path: Path) -> None:
    root = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    repo = Repo(root, socket=f"wave-test-unused-{tmp_path.name}")
    write_lane(repo, local_lane())
    for args in (("validate",), ("launch", "--dry-run")):
        result = repo.wave(*args, "--lane", "main")
        assert result.returncode == 2
        no_traceback(result)
        assert "is not UTF-8 (expected a UTF-8 path)" in result.stderr
    for args in READ_ONLY_COMMANDS:
        result = repo.wave(*args)
        no_traceback(result)
        assert result.returncode in (0, 2)
    repo.env.pop("WAVE_TMUX_SOCKET")  # the default socket name hashes the path
    attach = repo.wave("attach", "--print", "--dashboard")
    no_traceback(attach)
    assert attach.returncode == 0 and "attach-session -t =dashboard" in attach.stdout
    status = json.loads(repo.wave("status", "--lane", "main", "--json").stdout)
    assert status["state_dir"].endswith("caf\udce9/.wave/main")


@pytest.mark.e2e
@pytest.mark.parametrize("bad", ["deep", "not-utf8", "bomb"])
def test_wave_stop_stops_a_running_lane_whatever_its_files_became(
    tmux_repo: Repo, bad: str
) -> None:
    command = json.dumps("sleep 60")
    tmux_repo.lane(
        "main",
        local_lane(),
        {
            1: f"agents:\n  - {{id: A1, prompt: work, executor: {{local: {{command: {command}}}}}}}\n"
        },
    )
    assert tmux_repo.wave("launch", "--lane", "main", "--detach").returncode == 0
    lock = tmux_repo.state("main") / "launcher.lock"
    wait_for(lambda: any(e["event"] == "agent_launched" for e in tmux_repo.events("main")), 20)
    body = {"deep": DEEP.encode(), "not-utf8": NOT_UTF8, "bomb": BILLION_LAUGHS.encode()}[bad]
    folder = tmux_repo.root / "lanes" / "main"
    (folder / "lane.yaml").write_bytes(body)
    (folder / "waves" / "wave-1.yaml").write_bytes(body)
    stopped = tmux_repo.wave("stop", "--lane", "main", timeout=60)
    no_traceback(stopped)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped the launcher" in stopped.stdout
    assert not lock.exists()
    assert tmux_repo.run_state("main")["waves"]["1"]["state"] == "cancelled"
    shutil.rmtree(folder)  # the lane is gone entirely: stop still answers
    gone = tmux_repo.wave("stop", "--lane", "main")
    no_traceback(gone)


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure-python"])
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (BILLION_LAUGHS, "aliases expand to more than"),
        ("a: " + "[" * 100_000 + "]" * 100_000, "nesting"),
        ("a: " + "{b: " * 500 + "1" + "}" * 500, "nesting"),
        ("a:\n" + "".join(" " * n + "- \n" for n in range(1, 200)), "nesting deeper than 64"),
        (RECURSIVE, "an alias that contains itself"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("a: *nowhere\n", "found undefined alias"),
    ],
)
def test_both_parsers_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, libyaml: bool, body: str, message: str
) -> None:
    if libyaml and not yaml.__with_libyaml__:
        pytest.skip("PyYAML was built without libyaml here")
    monkeypatch.setattr(yaml, "__with_libyaml__", libyaml)
    path = tmp_path / "f.yaml"
    path.write_text(body)
    with pytest.raises(YamlSyntaxError, match=message):
        load_located(path)


def test_values_marks_and_merges_are_what_pyyaml_gives(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(
        "base: &b {x: 1, y: [2, 3]}\nother: &o {y: 4, z: null}\n"
        "m:\n  <<: [*b, *o]\n  x: 9\nt: !!str 5\nf: 1.5e+3\nq: 'yes'\nb: yes\n"
    )
    doc = load_located(path)
    assert doc.data == yaml.safe_load(path.read_text())
    assert doc.value_marks[("m", "x")] == (5, 6) and doc.key_marks[("t",)] == (6, 1)


@pytest.mark.parametrize("state_dir", ['"~nosuchuser-wave/state"', '"a\\0b"'])
def test_a_state_dir_no_file_call_can_take_is_a_problem_not_a_traceback(
    repo: Repo, state_dir: str
) -> None:
    write_lane(repo, local_lane() + f"state_dir: {state_dir}\n")
    result = repo.wave("validate", "--lane", "main")
    no_traceback(result)
    assert result.returncode == 2 and "lanes/main/lane.yaml:7:" in result.stderr
    assert ": state_dir: " in result.stderr
    for args in (("status",), ("stop",)):
        result = repo.wave(*args, "--lane", "main")
        no_traceback(result)
        assert result.returncode == 0 and "using the default state dir" in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "folder", "not-utf8"])
def test_a_prompt_file_or_role_prompt_that_is_no_text_file_is_refused_at_once(
    repo: Repo, kind: str
) -> None:
    write_lane(
        repo,
        local_lane() + "role_prompts: {implementation: role.md}\n",
        "agents:\n  - {id: A1, prompt_file: p.md, executor: {local: {command: [echo, hi]}}}\n",
    )
    for path in (repo.root / "p.md", repo.root / "lanes" / "main" / "role.md"):
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        else:
            path.write_bytes(b"caf\xe9\n")
    result = repo.wave("validate", "--lane", "main", timeout=30)
    no_traceback(result)
    assert result.returncode == 2
    assert "prompt_file: cannot use 'p.md'" in result.stderr
    assert "role_prompts.implementation: cannot use 'role.md'" in result.stderr
