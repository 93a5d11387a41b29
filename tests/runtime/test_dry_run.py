"""`wave launch --dry-run` previews what would run differently from what the lane says."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from helpers import Repo

LANE = """
closure: {required_roles: []}
defaults: {executor: opencode}
"""

WAVE = """
agents:
  - {id: O1, prompt: x, executor: {id: opencode, model: mock/mock-model, reasoning: high}}
  - {id: O2, prompt: x, executor: {id: opencode, reasoning: max}}
  - {id: O3, prompt: x, executor: {id: opencode, model: anthropic/claude-sonnet-5, reasoning: high}}
  - {id: O4, prompt: x, executor: {id: opencode, model: mock/mock-model}}
  - {id: C1, prompt: x, executor: {id: codex, reasoning: high}}
  - id: K1
    prompt: x
    executor:
      id: claude
      reasoning: high
      fallbacks: [opencode]
      opencode: {model: openrouter/some-model, reasoning: low}
"""


def test_opencode_variant_that_a_provider_ignores_is_a_dry_run_warning(repo: Repo) -> None:
    repo.lane("main", LANE, {1: WAVE})
    result = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["warnings"] == [
        "agent w1/O1: reasoning 'high' goes to opencode as --variant high, which "
        "openai-compatible providers ignore (model mock/mock-model); it takes effect only for "
        "a model that defines that variant",
        "agent w1/O2: reasoning 'max' goes to opencode as --variant max, which "
        "openai-compatible providers ignore (opencode's default model); it takes effect only "
        "for a model that defines that variant",
        "agent w1/K1: reasoning 'low' goes to opencode as --variant low, which "
        "openai-compatible providers ignore (model openrouter/some-model); it takes effect "
        "only for a model that defines that variant",
    ]
    # the table a person reads says it too, and so does each agent's launch-preview.json
    assert "warning: agent w1/O1: reasoning 'high' goes to opencode as --variant high" in (
        result.stderr
    )
    by_agent = {a["agent"]: a for a in data["agents"]}
    assert "--variant" in by_agent["O1"]["argv"]  # still passed: a model may define it
    counts = {a: len(by_agent[a]["warnings"]) for a in by_agent}
    assert counts == {"O1": 1, "O2": 1, "O3": 0, "O4": 0, "C1": 0, "K1": 1}
    preview = repo.state("main") / "dry-run/waves/wave-1/agents/O1/launch-preview.json"
    assert json.loads(preview.read_text())["warnings"] == data["warnings"][:1]


def test_a_dry_run_again_rewrites_what_changed_and_removes_what_is_gone(repo: Repo) -> None:
    """The tree of an earlier dry run is kept where it is the same: unchanged files are not
    made again (same inode), a changed prompt is, agents and waves no longer planned go."""
    two = "agents:\n  - {id: A1, prompt: one, executor: {id: local}}\n" + (
        "  - {id: A2, prompt: two, executor: {id: local}}\n"
    )
    lane = "closure: {required_roles: []}\nexecutors: {local: {command: [my-agent]}}\n"
    repo.lane("main", lane, {1: two, 2: two})
    assert repo.wave("launch", "--lane", "main", "--dry-run").returncode == 0
    waves = repo.state("main") / "dry-run" / "waves"
    a1, a2 = waves / "wave-1/agents/A1", waves / "wave-1/agents/A2"
    (a1 / "notes.txt").write_text("left by hand\n")
    before = {p.name: p.stat().st_ino for p in a1.iterdir()}
    prompt_a2 = (a2 / "prompt.md").stat().st_ino
    repo.lane("main", lane, {1: two.replace("prompt: two", "prompt: changed")})
    (repo.root / "lanes/main/waves/wave-2.yaml").unlink()
    result = repo.wave("launch", "--lane", "main", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in waves.iterdir()) == ["wave-1"]
    after = {p.name: p.stat().st_ino for p in a1.iterdir()}
    assert after == {k: v for k, v in before.items() if k != "notes.txt"}
    assert (a2 / "prompt.md").stat().st_ino != prompt_a2
    assert "changed" in (a2 / "prompt.md").read_text()
    preview = json.loads((repo.state("main") / "dry-run/launch-preview.json").read_text())
    assert [(p["wave"], p["agent"]) for p in preview] == [(1, "A1"), (1, "A2")]


def test_the_whole_preview_is_the_list_of_the_agents_previews(repo: Repo) -> None:
    """launch-preview.json is built from each agent's text: the same as encoding the list."""
    from wave_orchestrator.runtime.launch.dry_run import json_list
    from wave_orchestrator.state.fsutil import json_text

    items = [{"a": [1, {"b": "x\ny"}], "c": {}}, {"d": "\udcff", "e": []}, {}]
    assert json_list([json_text(i, indent=2) for i in items]) == json_text(items, indent=2)
    assert json_list([]) == json_text([], indent=2)
    repo.lane("main", LANE, {1: WAVE})
    assert repo.wave("launch", "--lane", "main", "--dry-run").returncode == 0
    base = repo.state("main") / "dry-run"
    whole = json.loads((base / "launch-preview.json").read_text())
    agents = sorted((base / "waves" / "wave-1" / "agents").iterdir())
    assert len(whole) == len(agents) == 6
    for data in whole:
        one = base / "waves" / "wave-1" / "agents" / data["agent"] / "launch-preview.json"
        assert json.loads(one.read_text()) == data


def test_a_preview_is_written_as_the_json_module_writes_it_with_indentation(repo: Repo) -> None:
    """The dry run's own indented encoder (the json module's is pure Python with an indent)
    writes what ``json_text(value, indent=2)`` writes, byte for byte."""
    from wave_orchestrator.runtime.launch.dry_run import indented
    from wave_orchestrator.state.fsutil import json_text

    values: list[object] = [
        {},
        [],
        "",
        {"a": {"b": [], "c": {}}, "d": [[], [{}], [1, [2, []]]]},
        {"s": 'quote " back \\ tab \t nl \n bell \x07 é ☃ 𝄞 \udcff \ud800x', "é": "\x7f"},
        {"n": None, "t": True, "f": False, "i": 0, "neg": -7, "big": 2**70, "x": 1.5},
        {"floats": [240.0, 0.1, -0.0, 1e300, 5e-324, float("nan"), float("inf"), -float("inf")]},
        ("a", 1),
        {7: "int", 2.5: "float", True: "bool", None: "null"},
    ]
    for value in values:
        assert indented(value) == json_text(value, indent=2), value
    repo.lane("main", LANE, {1: WAVE})
    assert repo.wave("launch", "--lane", "main", "--dry-run").returncode == 0
    for path in (repo.state("main") / "dry-run/waves/wave-1/agents").glob("*/launch-preview.json"):
        data = json.loads(path.read_text())
        assert indented(data) + "\n" == path.read_text() == json_text(data, indent=2) + "\n"


def test_a_dry_run_with_auto_next_previews_only_the_waves_not_completed(repo: Repo) -> None:
    """--auto-next and --resume skip completed waves in a preview as in a launch; a plain
    dry run previews them all (and reads no run state)."""
    from wave_orchestrator.state.ledger import Ledger
    from wave_orchestrator.state.run_state import RunState

    one = 'agents: [{id: A1, prompt: x, executor: {local: {command: ["true"]}}}]'
    repo.lane("main", "closure: {required_roles: []}\n", {1: one, 2: one, 3: one})
    state = RunState(repo.state("main") / "run-state.json", "main")
    state.transition(1, "running")
    state.transition(1, "completed")
    state.transition(2, "running")
    state.transition(2, "completed")  # run-state.json alone: an agent could have written it
    Ledger.for_lane(repo.root, "main").wave_state(1, "completed")

    def previewed(*flags: str) -> list[int]:
        result = repo.wave("launch", "--lane", "main", "--dry-run", "--json", *flags)
        assert result.returncode == 0, result.stderr
        if flags:
            assert "run-state.json says wave 2 completed, but no launcher" in result.stderr
        return sorted({a["wave"] for a in json.loads(result.stdout)["agents"]})

    assert previewed() == [1, 2, 3]
    assert previewed("--auto-next") == [2, 3]
    assert previewed("--resume") == [2, 3]


def test_a_new_file_gets_its_exact_mode_and_anything_already_there_is_left_alone(
    tmp_path: Path,
) -> None:
    """A dry run creates its files in place: with the mode asked for whatever the umask, and
    never over what is already there (a file, a link, a FIFO), which ``write_if_changed`` then
    judges as before."""
    from wave_orchestrator.state.fsutil import write_new

    old = os.umask(0o077)
    try:
        assert write_new(tmp_path / "prompt.md", "héllo \udcff\n", mode=0o644)
        assert write_new(tmp_path / "run.sh", "#!/bin/sh\n", mode=0o700)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "prompt.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "run.sh").stat().st_mode) == 0o700
    assert (tmp_path / "prompt.md").read_bytes() == "héllo \udcff\n".encode(
        "utf-8", "surrogateescape"
    )
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    for name in ("prompt.md", "link", "dangling", "fifo"):
        assert not write_new(tmp_path / name, "theirs\n")
    assert victim.read_text() == "precious\n" and not (tmp_path / "nowhere").exists()
    assert (tmp_path / "prompt.md").read_text(errors="surrogateescape") == "héllo \udcff\n"
