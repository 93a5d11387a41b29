"""Fault class 14: numbers out of range. Every number run.sh or the launcher computes with has a
range, checked at validation with the file, line, field and the range in the message; launch
flags too; WAVE_TMUX_SOCKET is a plain name; and the checks across agents (owned paths,
depends_on) cost n log n, not n squared, and never recurse once per agent."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import Repo, local_lane

from wave_orchestrator.definitions.loading import agent_loader
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.sections.ownership import OwnedPaths, paths_overlap
from wave_orchestrator.errors import LaneInvalid

AGENT = "{id: A1, prompt: work, executor: {local: {command: [echo, hi]}}}"


def problems(repo: Repo, lane_yaml: str, wave: str = f"agents:\n  - {AGENT}\n") -> list[str]:
    repo.lane("main", lane_yaml, {1: wave})
    try:
        load_lane(repo.root, "main")
    except LaneInvalid as exc:
        return [str(p) for p in exc.problems]
    return []


@pytest.mark.parametrize(
    ("block", "field", "line", "shown"),
    [
        (
            "rate_limit: {base_delay_seconds: 1.0e+300}",
            "rate_limit.base_delay_seconds",
            4,
            "must be at most 86400, got 1e+300 (expected a number from 0 to 86400)",
        ),
        (
            "rate_limit: {max_delay_seconds: 1.0e+12}",
            "rate_limit.max_delay_seconds",
            4,
            "from 0 to 86400",
        ),
        (
            "rate_limit: {jitter_seconds: 99999999}",
            "rate_limit.jitter_seconds",
            4,
            "from 0 to 3600",
        ),
        ("rate_limit: {retries: 1000000}", "rate_limit.retries", 4, "an integer from 0 to 100"),
        ("timeout_minutes: 1.0e+300", "timeout_minutes", 4, "from 0 to 43200"),
        ("max_retries_per_wave: 9999999999", "max_retries_per_wave", 4, "from 0 to 100"),
        ("launch_stagger_ms: 1.0e+15", "launch_stagger_ms", 4, "from 0 to 600000"),
        ("stall_minutes: 1.0e+99", "stall_minutes", 4, "from 0 to 43200"),
        ("max_running: 100000000", "max_running", 4, "from 1 to 10000"),
        ("launch_stagger_ms: -1", "launch_stagger_ms", 4, "must be at least 0, got -1"),
    ],
)
def test_each_lane_default_has_a_range_named_in_the_message(
    repo: Repo, block: str, field: str, line: int, shown: str
) -> None:
    lane_yaml = "closure: {required_roles: []}\ndefaults:\n  executor: local\n  " + block + "\n"
    found = problems(repo, lane_yaml)
    assert len(found) == 1, found
    assert found[0].startswith(f"lanes/main/lane.yaml:{line}:")
    assert f": defaults.{field}: " in found[0] and shown in found[0]


@pytest.mark.parametrize(
    ("agent", "field", "shown"),
    [
        (
            "{id: A1, prompt: w, executor: {id: local, local: {command: [x]}, budget: {minutes: 1.0e+300}}}",
            "agents[0].executor.budget.minutes",
            "from 0 to 43200",
        ),
        (
            "{id: A1, prompt: w, executor: {id: local, local: {command: [x]}, budget: {turns: 10000000000}}}",
            "agents[0].executor.budget.turns",
            "from 1 to 100000",
        ),
        (
            "{id: A1, prompt: w, executor: {id: claude, claude: {max_turns: 10000000000}}}",
            "agents[0].executor.claude.max_turns",
            "from 1 to 100000",
        ),
    ],
)
def test_agent_budgets_have_ranges(repo: Repo, agent: str, field: str, shown: str) -> None:
    found = problems(repo, local_lane(), f"agents:\n  - {agent}\n")
    assert any("wave-1.yaml:2:" in p and field in p and shown in p for p in found), found


def test_the_wave_number_has_a_range(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: f"agents:\n  - {AGENT}\n"})
    waves = repo.root / "lanes" / "main" / "waves"
    (waves / "wave-1.yaml").rename(waves / f"wave-{'9' * 200}.yaml")
    result = repo.wave("validate", "--lane", "main")
    assert result.returncode == 2 and "is over 99999" in result.stderr, result.stderr
    (waves / f"wave-{'9' * 200}.yaml").write_text(f"wave: {'9' * 30}\nagents:\n  - {AGENT}\n")
    (waves / f"wave-{'9' * 200}.yaml").rename(waves / "wave-2.yaml")
    result = repo.wave("validate", "--lane", "main")
    assert result.returncode == 2 and "wave: must be at most 99999" in result.stderr


def test_the_range_ends_are_accepted(repo: Repo) -> None:
    lane_yaml = (
        "closure: {required_roles: []}\ndefaults:\n  executor: local\n  max_running: 10000\n"
        "  rate_limit: {base_delay_seconds: 86400, max_delay_seconds: 86400, retries: 100, "
        "jitter_seconds: 3600}\n"
    )
    assert problems(repo, lane_yaml) == []


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--rate-limit-base-delay-seconds", "1e300"),
        ("--rate-limit-max-delay-seconds", "inf"),
        ("--timeout-minutes", "nan"),
        ("--rate-limit-retries", "100000"),
        ("--launch-stagger-ms", "-5"),
    ],
)
def test_launch_flags_are_checked_against_the_same_ranges(
    repo: Repo, flag: str, value: str
) -> None:
    repo.lane("main", local_lane(), {1: f"agents:\n  - {AGENT}\n"})
    result = repo.wave("launch", "--lane", "main", "--dry-run", flag, value)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"wave: {flag} must be" in result.stderr and "Traceback" not in result.stderr
    assert not (repo.state("main") / "dry-run").exists()


@pytest.mark.parametrize("socket", ["../..", "a/b", ".hidden", "a b", ""])
def test_wave_tmux_socket_must_be_a_plain_name(repo: Repo, socket: str) -> None:
    repo.lane("main", local_lane(), {1: f"agents:\n  - {AGENT}\n"})
    repo.env["WAVE_TMUX_SOCKET"] = socket
    for args in (("launch", "--dry-run"), ("attach", "--print", "--dashboard")):
        result = repo.wave(*args, "--lane", "main")
        if socket == "":  # unset in effect: the default name is used
            assert result.returncode == 0, result.stderr
            continue
        assert result.returncode == 2, result.stdout
        assert "is not a plain socket name" in result.stderr and "Traceback" not in result.stderr


def test_a_plain_socket_name_is_accepted(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: f"agents:\n  - {AGENT}\n"})
    repo.env["WAVE_TMUX_SOCKET"] = "wave-test_1.2"
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert json.loads(result.stdout)["agents"][0]["socket"] == "wave-test_1.2"


def wide_wave(n: int) -> str:
    rows = [
        f"  - {{id: A{i}, prompt: w, owns: [src/m{i}/, docs/m{i}.md], deliverables: [docs/m{i}.md]"
        + (f", depends_on: [A{i - 1}]}}" if i else "}")
        for i in range(n)
    ]
    return "agents:\n" + "\n".join(rows) + "\n"


def test_8000_agents_are_checked_without_comparing_every_pair(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted, not timed: the quadratic check compared 32 million pairs of paths."""
    calls = 0

    def counted(a: str, b: str) -> bool:
        nonlocal calls
        calls += 1
        if calls > 100_000:
            raise AssertionError("paths compared pairwise")
        return paths_overlap(a, b)

    monkeypatch.setattr(agent_loader, "paths_overlap", counted)
    lane_yaml = local_lane() + "executors: {local: {command: [echo, hi]}}\n"
    assert problems(repo, lane_yaml, wide_wave(8000)) == []  # and a chain 8000 deep: no recursion
    assert calls <= 2 * 8000


def test_a_cycle_at_the_end_of_a_long_chain_is_found(repo: Repo) -> None:
    wave = wide_wave(3000).replace(
        "{id: A0, prompt: w,", "{id: A0, depends_on: [A2999], prompt: w,"
    )
    found = problems(repo, local_lane() + "executors: {local: {command: [echo, hi]}}\n", wave)
    assert len(found) == 1 and "depends_on forms a cycle: A0 -> A2999 -> A2998" in found[0]


def brute_force(claims: list[tuple[str, int]]) -> list[tuple[int, int | None]]:
    """What the quadratic check reported: for each claim, the first earlier overlapping claim
    of another owner."""
    out = []
    for k, (path, owner) in enumerate(claims):
        first = next(
            (j for j, (p, o) in enumerate(claims[:k]) if o != owner and paths_overlap(path, p)),
            None,
        )
        out.append((k, first))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_index_finds_the_same_overlaps_as_comparing_every_pair(seed: int) -> None:
    rng = random.Random(seed)
    parts = ["a", "b", "ab", "a-b", "c"]
    claims = []
    for _ in range(60):
        path = "/".join(rng.choice(parts) for _ in range(rng.randint(1, 3)))
        claims.append((path + ("/" if rng.random() < 0.4 else ""), rng.randint(0, 5)))
    index = OwnedPaths()
    got = []
    for k, (path, owner) in enumerate(claims):
        hit = index.overlap(path, owner)
        got.append((k, hit.order if hit else None))
        index.add(path, owner, f"A{owner}")
    assert got == brute_force(claims)


def test_validate_of_a_wide_wave_reports_the_overlap_it_finds(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    wave = wide_wave(50).replace("owns: [src/m49/,", "owns: [src/,")
    found = problems(repo, local_lane() + "executors: {local: {command: [echo, hi]}}\n", wave)
    assert found == [
        "lanes/main/waves/wave-1.yaml:51:33: agents[49].owns[0]: 'src/' is also owned by A0 "
        "('src/m0/') (expected each path owned by one agent, or shared_files: true, or the "
        "path listed in the wave's shared:)"
    ]
