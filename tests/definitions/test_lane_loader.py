"""The lane validation corpus (SPEC 1.3).

Every folder under ``tests/fixtures/lanes/valid/`` is a lane that must load; every folder under
``tests/fixtures/lanes/invalid/`` is a complete lane that breaks exactly one rule, plus an
``expect.yaml`` naming where the loader must point:

    file: lanes/{lane}/waves/wave-1.yaml   # "{lane}" stands for the case folder name
    line: 14
    column: 7                              # optional
    field: agents[1].executor.id           # "" for file-level problems
    message: "'codx' (expected one of"     # a substring of the problem's message
    xfail: "why the loader gets this wrong" # optional: a known loader bug

Each case is copied to ``<tmp>/lanes/<case>/`` (the folder name is the lane name) and loaded with
``load_lane(<tmp>, <case>)``. Prompt files are referenced relative to the repository, so a case
that needs one keeps it in its own folder and names it ``lanes/<case>/...``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from wave_orchestrator.agents.executors import reasoning_for
from wave_orchestrator.cli import main as wave_main
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import LaneDef, LaneDefaults, RateLimitPolicy
from wave_orchestrator.errors import LaneInvalid, LaneProblem

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lanes"
VALID_DIR = FIXTURES / "valid"
INVALID_DIR = FIXTURES / "invalid"
EXPECT_KEYS = {"file", "line", "column", "field", "message", "xfail"}

VALID_XFAIL: dict[str, str] = {}


def _cases(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def _expect(case: str) -> dict[str, Any]:
    data = yaml.safe_load((INVALID_DIR / case / "expect.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{case}/expect.yaml is not a mapping"
    return data


def _xfail(reason: str | None) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


VALID_CASES = [
    pytest.param(case, id=case, marks=_xfail(VALID_XFAIL.get(case))) for case in _cases(VALID_DIR)
]
INVALID_CASES = [
    pytest.param(case, id=case, marks=_xfail(_expect(case).get("xfail")))
    for case in _cases(INVALID_DIR)
]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """State dirs and repositories come from the test, never from the caller's environment."""
    monkeypatch.delenv("WAVE_STATE_DIR", raising=False)
    monkeypatch.delenv("WAVE_REPO", raising=False)


def install(kind_dir: Path, case: str, repo: Path) -> Path:
    """Copy one fixture lane into ``repo/lanes/<case>/`` (without its expect.yaml)."""
    target = repo / "lanes" / case
    shutil.copytree(kind_dir / case, target, ignore=shutil.ignore_patterns("expect.yaml"))
    return target


def load_valid(case: str, repo: Path) -> LaneDef:
    install(VALID_DIR, case, repo)
    return load_lane(repo, case)


def problems_of(repo: Path, case: str) -> list[LaneProblem]:
    with pytest.raises(LaneInvalid) as info:
        load_lane(repo, case)
    return info.value.problems


def listing(root: Path) -> dict[str, bytes]:
    """Every file and folder under ``root`` (with file contents), to prove nothing was written."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<folder>"
        for p in sorted(root.rglob("*"))
    }


def write_lane(repo: Path, name: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / "lanes" / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# -- the corpus itself ---------------------------------------------------------------------------


def test_corpus_is_big_enough() -> None:
    assert len(_cases(VALID_DIR)) >= 4
    assert len(_cases(INVALID_DIR)) >= 32


@pytest.mark.parametrize("case", _cases(INVALID_DIR))
def test_expect_files_are_well_formed(case: str) -> None:
    """A typo in an expectation must not silently weaken a test."""
    expect = _expect(case)
    assert set(expect) <= EXPECT_KEYS, f"unknown keys {set(expect) - EXPECT_KEYS}"
    assert {"file", "line", "field", "message"} <= set(expect)
    assert expect["file"].startswith("lanes/{lane}/")
    assert isinstance(expect["line"], int) and expect["line"] >= 1
    assert isinstance(expect.get("column", 1), int)
    assert isinstance(expect["field"], str) and isinstance(expect["message"], str)
    assert expect["message"], "an empty message substring matches anything"
    assert (INVALID_DIR / case / "lane.yaml").is_file(), "each case is a complete lane folder"


# -- invalid lanes -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", INVALID_CASES)
def test_invalid_lane_is_rejected_at_the_offending_node(case: str, tmp_path: Path) -> None:
    expect = _expect(case)
    install(INVALID_DIR, case, tmp_path)
    problems = problems_of(tmp_path, case)

    want_file = expect["file"].replace("{lane}", case)
    want_message = expect["message"].replace("{lane}", case)
    found = [
        p
        for p in problems
        if p.file == want_file
        and p.line == expect["line"]
        and ("column" not in expect or p.column == expect["column"])
        and p.field == expect["field"]
        and want_message in p.message
    ]
    shown = "\n  ".join(str(p) for p in problems)
    assert found, (
        f"expected {want_file}:{expect['line']}:{expect.get('column', '*')}: "
        f"{expect['field']}: ...{want_message}...\ngot:\n  {shown}"
    )
    for p in problems:
        assert p.file.startswith(f"lanes/{case}/"), f"file not repository-relative: {p}"
        assert p.line >= 1 and p.column >= 1, f"no position: {p}"


# -- valid lanes ---------------------------------------------------------------------------------


def check_minimal(lane: LaneDef, repo: Path) -> None:
    assert lane.description == "One wave, one agent, all defaults"
    assert lane.defaults == LaneDefaults()
    assert lane.defaults.rate_limit.tries == 3
    assert lane.state_dir == repo / ".wave" / "minimal"
    assert lane.required_roles == ()
    (wave,) = lane.waves
    assert (wave.number, wave.title, wave.commit_message) == (1, "Wave 1", None)
    (agent,) = wave.agents
    assert (agent.id, agent.title, agent.role) == ("A1", "A1", "implementation")
    assert agent.prompt == "Add a health-check endpoint."
    assert agent.prompt_file is None
    assert agent.executor.id == "codex"
    assert agent.executor.settings_for("codex")["sandbox"] == "workspace-write"
    assert agent.executor.fallbacks == ()
    assert agent.owns == agent.deliverables == agent.depends_on == ()


def check_empty_lane_yaml(lane: LaneDef, repo: Path) -> None:
    assert lane.description == ""
    assert lane.shared_files is False
    assert lane.defaults == LaneDefaults()
    (wave,) = lane.waves
    assert (wave.number, wave.title) == (3, "Only wave")
    assert wave.agents[0].prompt == "Tidy up the README.\nKeep it short.\n"
    assert wave.agents[0].deliverables == ("README.md",)


def check_profiles_executors(lane: LaneDef, repo: Path) -> None:
    d = lane.defaults
    assert (d.executor, d.timeout_minutes, d.max_retries_per_wave) == ("codex", 90.5, 2)
    assert (d.launch_stagger_ms, d.stall_minutes) == (0, 0.05)
    assert d.rate_limit == RateLimitPolicy(
        retries=4,
        base_delay_seconds=0.5,
        max_delay_seconds=0.5,
        jitter_seconds=0,
        patterns=("429 Too Many Requests", "rate limit"),
        usage_limit_patterns=("Quota exceeded",),
    )
    wave = lane.wave(1)
    assert wave.commit_message == "Feat: every executor"

    # A1: built-ins -> lane codex block -> profile implement-fast -> the agent's own block.
    a1 = wave.agent("A1").executor
    assert (a1.id, a1.model, a1.reasoning) == ("codex", "gpt-5-codex", "xhigh")
    assert (a1.budget_minutes, a1.budget_turns) == (45, None)
    assert a1.fallbacks == ("claude",)
    codex = a1.settings_for("codex")
    assert codex["sandbox"] == "read-only"  # lane
    assert codex["search"] is True  # lane
    assert codex["command"] == "codex"  # built-in
    # lists concatenate in merge order, without duplicates
    assert codex["config"] == [
        "model_verbosity=low",
        "hide_agent_reasoning=true",
        "sandbox_workspace_write.network_access=true",
    ]
    assert codex["add_dirs"] == ["/tmp/wave-cache"]
    assert dict(a1.env) == {"PROFILE_FLAG": "1", "API_TOKEN": "secret", "RETRIES": "3"}
    # the claude fallback launches with the lane's claude block, not with codex's reasoning
    assert a1.settings_for("claude")["output_format"] == "stream-json"
    assert reasoning_for(a1, "claude") == "medium"
    assert reasoning_for(a1, "codex") == "xhigh"

    a2 = wave.agent("A2").executor
    assert (a2.id, a2.reasoning, a2.budget_turns, a2.budget_minutes) == ("claude", "max", 12, None)
    assert a2.fallbacks == ("codex", "opencode")
    claude = a2.settings_for("claude")
    assert claude["max_turns"] == 30
    assert claude["allowed_tools"] == ["Read", "Edit"]
    assert claude["disallowed_tools"] == ["Bash"]
    assert claude["model"] == "claude-sonnet-4-5"
    assert a2.settings_for("opencode")["format"] == "json"
    assert reasoning_for(a2, "codex") is None

    a3 = wave.agent("A3").executor
    assert (a3.id, a3.reasoning, a3.fallbacks) == ("opencode", "minimal", ("codex",))
    opencode = a3.settings_for("opencode")
    assert (opencode["agent"], opencode["files"], opencode["auto"]) == (
        "build",
        ["docs/spec.md"],
        True,
    )

    r1 = wave.agent("R1")
    assert r1.role == "integration" and r1.is_closure
    assert (r1.executor.id, r1.executor.reasoning) == ("claude", "high")
    assert (r1.executor.budget_minutes, r1.executor.budget_turns) == (20, 8)
    assert r1.executor.settings_for("claude")["permission_mode"] == "plan"
    assert r1.executor.settings_for("claude")["allowed_tools"] == ["Read", "Edit", "Grep"]

    a4 = wave.agent("A4").executor
    assert (a4.id, a4.model, a4.reasoning, a4.fallbacks) == ("codex", None, None, ())
    assert a4.settings_for("codex")["config"] == ["model_verbosity=low"]
    assert dict(a4.env) == {}


def check_shared_files(lane: LaneDef, repo: Path) -> None:
    assert lane.shared_files is True
    owners = {a.id: a.owns for a in lane.wave(1).agents}
    assert owners == {"A1": ("src/",), "A2": ("src/app.py",), "A3": ("src/app.py", "docs/")}


def check_wave_shared_paths(lane: LaneDef, repo: Path) -> None:
    assert lane.shared_files is False
    wave = lane.wave(1)
    assert wave.shared == ("CHANGELOG.md", "docs/index/")
    assert "CHANGELOG.md" in wave.agent("A1").owns and "CHANGELOG.md" in wave.agent("A2").owns


def check_closure_roles(lane: LaneDef, repo: Path) -> None:
    assert lane.required_roles == ("cont-qa", "security")
    assert dict(lane.role_prompts) == {
        "cont-qa": "You are the continuous QA reviewer.\n",
        "security": "You are a security reviewer.\n",
    }
    assert [w.number for w in lane.waves] == [1, 2, 10]  # numeric order, not file-name order
    wave = lane.wave(1)
    assert wave.commit_message == "Feat: storage"
    stages = [(role, [a.id for a in members]) for role, members in wave.closure_stages()]
    assert stages == [
        ("cont-eval", ["E0"]),
        ("security", ["S1", "S2"]),
        ("integration", ["I0"]),
        ("documentation", ["D0"]),
        ("cont-qa", ["Q0"]),
    ]
    assert [a.id for a in wave.implementation_agents] == ["A1", "A2", "A3", "A4"]
    assert [a.role for a in wave.implementation_agents] == [
        "implementation",
        "infra",
        "research",
        "deploy",
    ]
    deps = {a.id: a.depends_on for a in wave.agents if a.depends_on}
    assert deps == {"A2": ("A1",), "A3": ("A2",), "A4": ("A1", "A3"), "I0": ("S1", "S2")}
    a1 = wave.agent("A1")
    assert a1.prompt_file == "lanes/closure-roles/prompts/a1.md"
    assert a1.prompt == "Build the storage layer described in docs/storage.md.\n"
    contract = a1.exit_contract
    assert contract is not None
    assert (contract.completion, contract.durability, contract.proof, contract.doc_impact) == (
        "integrated",
        "durable",
        "integration",
        "owned",
    )
    assert wave.agent("S1").prompt == "Review the wave for injection bugs.\n"
    for number in (2, 10):
        assert [a.role for a in lane.wave(number).agents] == [
            "implementation",
            "security",
            "cont-qa",
        ]


def check_local_executor(lane: LaneDef, repo: Path) -> None:
    assert lane.defaults.executor == "local"
    assert lane.state_dir == (repo / "build" / "wave-state").resolve()
    wave = lane.wave(1)
    from_lane, own = wave.agents
    assert from_lane.executor.id == own.executor.id == "local"
    assert from_lane.executor.settings_for("local")["command"] == "python3 tools/agent.py --steps 2"
    assert own.executor.settings_for("local")["command"] == [
        "python3",
        "tools/agent.py",
        "--file",
        "out/b.txt",
    ]
    assert dict(own.executor.env) == {"WAVE_DEMO": "yes", "LEVEL": "2"}
    assert own.executor.budget_minutes == 0.05
    assert own.deliverables == ("out/b.txt",)  # "./out//b.txt" normalised
    contract = from_lane.exit_contract
    assert contract is not None
    assert (contract.completion, contract.durability, contract.proof, contract.doc_impact) == (
        "live",
        "ephemeral",
        "live",
        "none",
    )
    assert own.exit_contract is None


def check_yaml_anchors(lane: LaneDef, repo: Path) -> None:
    a1, a2 = lane.wave(1).agents
    assert a1.prompt == a2.prompt == "Port the module to the new API."
    for agent in (a1, a2):
        assert (agent.executor.id, agent.executor.reasoning) == ("claude", "high")
        assert agent.executor.settings_for("claude")["permission_mode"] == "acceptEdits"


def check_yaml_merge_keys(lane: LaneDef, repo: Path) -> None:
    a1, a2 = lane.wave(1).agents
    assert a2.prompt == a1.prompt
    assert a2.executor.id == "claude" and a2.owns == ("src/two/",)


VALID_CHECKS: dict[str, Callable[[LaneDef, Path], None]] = {
    "minimal": check_minimal,
    "empty-lane-yaml": check_empty_lane_yaml,
    "profiles-executors": check_profiles_executors,
    "shared-files": check_shared_files,
    "wave-shared-paths": check_wave_shared_paths,
    "closure-roles": check_closure_roles,
    "local-executor": check_local_executor,
    "yaml-anchors": check_yaml_anchors,
    "yaml-merge-keys": check_yaml_merge_keys,
}


def test_every_valid_case_has_a_check() -> None:
    assert set(VALID_CHECKS) == set(_cases(VALID_DIR))


@pytest.mark.parametrize("case", VALID_CASES)
def test_valid_lane_loads(case: str, tmp_path: Path) -> None:
    lane = load_valid(case, tmp_path)
    assert isinstance(lane, LaneDef)
    assert (lane.name, lane.repo, lane.path) == (case, tmp_path, tmp_path / "lanes" / case)
    assert lane.waves, "a valid lane has waves"
    numbers = [w.number for w in lane.waves]
    assert numbers == sorted(set(numbers))
    for wave in lane.waves:
        assert wave.agents
        assert len({a.id for a in wave.agents}) == len(wave.agents)
    VALID_CHECKS[case](lane, tmp_path)


def test_definitions_are_frozen(tmp_path: Path) -> None:
    lane = load_valid("profiles-executors", tmp_path)
    wave = lane.wave(1)
    agent = wave.agent("A1")
    for obj, attr, value in (
        (lane, "name", "other"),
        (lane.defaults, "executor", "claude"),
        (lane.defaults.rate_limit, "retries", 99),
        (wave, "number", 2),
        (agent, "prompt", "something else"),
        (agent.executor, "id", "claude"),
    ):
        with pytest.raises(AttributeError):
            setattr(obj, attr, value)
    assert isinstance(wave.agents, tuple) and isinstance(agent.owns, tuple)


def test_loaded_settings_share_no_mutable_state(tmp_path: Path) -> None:
    first = load_valid("minimal", tmp_path)
    config = first.waves[0].agents[0].executor.settings_for("codex")["config"]
    try:
        config.append("leaked=1")
    except (AttributeError, TypeError):
        return  # immutable: nothing can leak
    try:
        again = load_lane(tmp_path, "minimal")
        assert again.waves[0].agents[0].executor.settings_for("codex")["config"] == []
    finally:
        config.remove("leaked=1")


# -- every problem at once, and how each is printed -----------------------------------------------


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    write_lane(
        tmp_path,
        "x",
        {
            "lane.yaml": "description: three problems\ndefaults:\n  timout_minutes: 5\nclosure: {required_roles: []}\n",
            "waves/wave-1.yaml": (
                "wave: 1\n"
                "agents:\n"
                "  - id: A1\n"
                "    role: reviewer\n"
                "    prompt: One.\n"
                "  - id: A2\n"
                "    prompt: Two.\n"
                "    owns: [/etc/hosts]\n"
            ),
        },
    )
    problems = problems_of(tmp_path, "x")
    assert [str(p) for p in problems] == [
        "lanes/x/lane.yaml:3:3: defaults.timout_minutes: unknown key; did you mean "
        "'timeout_minutes'? (expected one of: executor, "
        "launch_stagger_ms, max_retries_per_wave, max_running, on_timeout, rate_limit, sandbox, stall_minutes, timeout_minutes)",
        "lanes/x/waves/wave-1.yaml:4:11: agents[0].role: unknown role 'reviewer' (expected one "
        "of: cont-eval, cont-qa, deploy, documentation, implementation, infra, integration, "
        "research, security)",
        "lanes/x/waves/wave-1.yaml:8:12: agents[1].owns[0]: path '/etc/hosts' is absolute, "
        "escapes the repository or has control characters (expected a path relative to the "
        "repository)",
    ]


def test_problems_in_every_wave_file_are_reported(tmp_path: Path) -> None:
    agent = "agents:\n  - id: A1\n    prompt: Do it.\n"
    write_lane(
        tmp_path,
        "many",
        {
            "lane.yaml": "description: errors in three waves\nclosure: {required_roles: []}\n",
            "waves/wave-1.yaml": "wave: 1\n" + agent + "    role: qa\n",
            "waves/wave-2.yaml": "wave: 3\n" + agent,
            "waves/wave-3.yaml": "wave: 3\nagents: []\n",
        },
    )
    problems = problems_of(tmp_path, "many")
    assert sorted((p.file, p.field) for p in problems) == [
        ("lanes/many/waves/wave-1.yaml", "agents[0].role"),
        ("lanes/many/waves/wave-2.yaml", "wave"),
        ("lanes/many/waves/wave-3.yaml", "agents"),
    ]


def test_wave_rules_are_checked_even_when_one_agent_is_broken(tmp_path: Path) -> None:
    write_lane(
        tmp_path,
        "masked",
        {
            "lane.yaml": "description: one agent error hides two wave errors\nclosure: {required_roles: []}\n",
            "waves/wave-1.yaml": (
                "agents:\n"
                "  - id: A1\n"
                "    role: reviewer\n"
                "    prompt: One.\n"
                "  - id: A2\n"
                "    prompt: Two.\n"
                "    owns: [src/a.py]\n"
                "  - id: A2\n"
                "    prompt: Three.\n"
                "    owns: [src/a.py]\n"
            ),
        },
    )
    fields = {p.field for p in problems_of(tmp_path, "masked")}
    assert {"agents[0].role", "agents[2].id", "agents[2].owns[0]"} <= fields


def test_problem_string_shape(tmp_path: Path) -> None:
    install(INVALID_DIR, "unknown-executor", tmp_path)
    problems = problems_of(tmp_path, "unknown-executor")
    line = str(next(p for p in problems if p.field == "agents[1].executor.id"))
    assert re.fullmatch(
        r"lanes/unknown-executor/waves/wave-1\.yaml:17:11: agents\[1\]\.executor\.id: "
        r".*'codx'; did you mean 'codex'\? \(expected one of: claude, codex, local, opencode\)",
        line,
    ), line
    assert str(LaneProblem("lanes/x/lane.yaml", 1, 1, "", "lane 'x' has no waves")) == (
        "lanes/x/lane.yaml:1:1: lane 'x' has no waves"
    )
    exc = LaneInvalid(problems)
    assert str(exc) == "\n".join(str(p) for p in problems)


def test_unknown_executor_message_matches_the_spec_example(tmp_path: Path) -> None:
    """SPEC's example, with issue 14's suggestion; and no second error about its settings."""
    install(INVALID_DIR, "unknown-executor", tmp_path)
    problems = [str(p) for p in problems_of(tmp_path, "unknown-executor")]
    assert (
        "lanes/unknown-executor/waves/wave-1.yaml:17:11: agents[1].executor.id: unknown executor "
        "'codx'; did you mean 'codex'? (expected one of: claude, codex, local, opencode)"
    ) in problems
    assert not [p for p in problems if "agents[1]" in p and "needs a command" in p]


def test_did_you_mean_for_keys_executors_and_roles_and_one_error_per_mistake(
    tmp_path: Path,
) -> None:
    write_lane(
        tmp_path,
        "dym",
        {
            "lane.yaml": "defaults: {executor: local, timout_minutes: 5}\n"
            "executors: {local: {command: [x]}}\nclosure: {required_roles: [cont_qa]}\n",
            "waves/wave-10.yaml": "agents: [{id: B, prompt: b, executor: {id: claud}}]\n",
            "waves/wave-2.yaml": "agents:\n  - {id: Z, prompt: z, role: cont_qa}\n"
            "  - {id: A, prompt: a, exit_contract: {log_regex: '\\\\d+'}}\n",
        },
    )
    problems = problems_of(tmp_path, "dym")
    text = [str(p) for p in problems]
    assert "did you mean 'timeout_minutes'?" in text[0]
    assert "did you mean 'cont-qa'?" in text[1]
    assert [(p.file.rsplit("/", 1)[1], p.line) for p in problems] == sorted(
        [(p.file.rsplit("/", 1)[1], p.line) for p in problems],
        key=lambda fl: (fl[0] != "lane.yaml", len(fl[0]), fl),
    )  # lane.yaml, then wave-2 before wave-10, each top to bottom
    assert any("did you mean 'claude'?" in t for t in text)
    assert not any("needs a command" in t for t in text)


# -- the real CLI on broken lanes ----------------------------------------------------------------

CLI_CASES = ["unknown-executor", "yaml-syntax-error", "duplicate-wave-number", "empty-lane"]


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_validate_broken_lane_exits_2_and_writes_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(INVALID_DIR, case, tmp_path)
    before = listing(tmp_path)
    expected = [str(p) for p in problems_of(tmp_path, case)]

    code = wave_main(["validate", "--repo", str(tmp_path), "--lane", case])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[: len(expected)] == expected
    assert f"{len(expected)} problem(s) found; nothing was launched." in err
    assert not (tmp_path / ".wave").exists()
    assert listing(tmp_path) == before


def test_cli_validate_json_lists_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(INVALID_DIR, "depends-on-cycle", tmp_path)
    code = wave_main(["validate", "--repo", str(tmp_path), "--lane", "depends-on-cycle", "--json"])
    out, err = capsys.readouterr()
    assert code == 2
    doc = json.loads(out)
    assert doc["lane"] == "depends-on-cycle" and doc["valid"] is False
    assert {
        "file": "lanes/depends-on-cycle/waves/wave-1.yaml",
        "line": 6,
        "column": 17,
        "field": "agents[0].depends_on",
        "message": "depends_on forms a cycle: A1 -> A3 -> A2 -> A1 (expected no cycles)",
    } in doc["errors"]
    assert "depends_on forms a cycle" in err
    assert not (tmp_path / ".wave").exists()


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_dry_run_on_broken_lane_exits_2_and_writes_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(INVALID_DIR, case, tmp_path)
    before = listing(tmp_path)

    code = wave_main(["launch", "--repo", str(tmp_path), "--lane", case, "--dry-run"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""  # no preview table
    assert "nothing was launched" in err
    assert f"lanes/{case}/" in err
    assert not (tmp_path / ".wave").exists()
    assert listing(tmp_path) == before


def test_cli_validate_in_a_real_process(tmp_path: Path) -> None:
    """The same through a separate interpreter: exit status, stderr, and no state dir."""
    case = "ownership-same-path"
    install(INVALID_DIR, case, tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("WAVE_STATE_DIR", "WAVE_REPO")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from wave_orchestrator.cli import main; sys.exit(main())",
            "validate",
            "--repo",
            str(tmp_path),
            "--lane",
            case,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert (
        f"lanes/{case}/waves/wave-1.yaml:9:26: agents[1].owns[1]: 'src/parser.py' is also owned "
        "by A1"
    ) in proc.stderr
    assert not (tmp_path / ".wave").exists()


def test_cli_rejects_an_invalid_lane_name_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(INVALID_DIR, "Invalid.Lane", tmp_path)
    code = wave_main(["validate", "--repo", str(tmp_path), "--lane", "Invalid.Lane"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "invalid lane name 'Invalid.Lane'" in err
    assert not (tmp_path / ".wave").exists()


def test_cli_validate_valid_lane_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(VALID_DIR, "closure-roles", tmp_path)
    code = wave_main(["validate", "--repo", str(tmp_path), "--lane", "closure-roles"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "lane closure-roles: valid, 3 wave(s)" in out
    assert not (tmp_path / ".wave").exists()


def test_a_key_typo_does_not_hide_rules_across_agents(tmp_path: Path) -> None:
    write_lane(
        tmp_path,
        "typo",
        {
            "lane.yaml": "closure: {required_roles: []}\n",
            "waves/wave-1.yaml": (
                "agents:\n"
                "  - {id: A1, promt: One., prompt: One., depends_on: [B9]}\n"
                "  - {id: A1, prompt: Two.}\n"
            ),
        },
    )
    fields = {p.field for p in problems_of(tmp_path, "typo")}
    assert {"agents[0].promt", "agents[0].depends_on[0]", "agents[1].id"} <= fields


def test_an_id_or_role_that_is_a_list_or_mapping_is_a_problem_not_a_traceback(
    tmp_path: Path,
) -> None:
    """An agent's ``id:`` or ``role:`` given as a list or a mapping is reported at its place;
    the rules across agents (dependencies, closure roles) read it as naming nothing."""
    write_lane(
        tmp_path,
        "x",
        {
            "lane.yaml": "closure: {required_roles: []}\n",
            "waves/wave-1.yaml": (
                "wave: 1\n"
                "agents:\n"
                "  - id: [A1]\n"
                "    prompt: One.\n"
                "  - id: A2\n"
                "    role: {implementation: yes}\n"
                "    prompt: Two.\n"
                "    depends_on: [A1]\n"
            ),
        },
    )
    problems = [str(p) for p in problems_of(tmp_path, "x")]
    assert any("agents[0].id" in p for p in problems), problems
    assert any("agents[1].role" in p for p in problems), problems
    assert any("agents[1].depends_on" in p and "A1" in p for p in problems), problems
