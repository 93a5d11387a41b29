"""End to end: a lane with skill bundles, run by the real `wave launch` in tmux. The local
executor (a script of ours printing what it received) gets the prompt's skill catalog and the
bundles' copies; a claude that fails (a fake one recording its argv) got its system prompt
file, and the fallback to local is given local's skills instead of claude's."""

from __future__ import annotations

import json

import pytest
from helpers import Repo, local_lane
from skills.skill_fixtures import write_skill

pytestmark = pytest.mark.e2e

# What the agent received: its prompt (stdin), its skill variables, a copied SKILL.md.
RECEIVED = (
    'cat > "$WAVE_REPO/$WAVE_AGENT_ID.prompt"; '
    'printf "%s\\n" "$WAVE_SKILLS" "$WAVE_SKILLS_DIR" > "$WAVE_REPO/$WAVE_AGENT_ID.env"; '
    'cat "$WAVE_SKILLS_DIR/house-style/SKILL.md" > "$WAVE_REPO/$WAVE_AGENT_ID.txt"'
)
CLAUDE = """\
printf '%s\\n' "$@" > "$WAVE_REPO/claude.argv"
for a in "$@"; do [ "$prev" = --append-system-prompt-file ] && cp "$a" "$WAVE_REPO/claude.system"; prev=$a; done
exit 1
"""


def agent(agent_id: str, **extra: object) -> str:
    fields = {"id": agent_id, "prompt": f"task of {agent_id}", "owns": [f"{agent_id}.txt"]}
    fields.update(extra)
    return "  - " + json.dumps(fields) + "\n"


def lane_with_skills(repo: Repo, retries: int = 0) -> None:
    write_skill(repo.root, "house-style", body="# House style\n\nName things well.\n")
    write_skill(repo.root, "runtime-local", executors=("local",))
    write_skill(repo.root, "runtime-claude", executors=("claude",))
    lane = local_lane(retries=retries) + (
        "skills:\n  base: [house-style]\n"
        "  by_executor: {local: [runtime-local], claude: [runtime-claude]}\n"
    )
    local = {"local": {"command": RECEIVED}}
    repo.lane(
        "main",
        lane,
        {
            1: "agents:\n"
            + agent("A", executor=local)
            + agent("B", executor={"id": "claude", "fallbacks": ["local"], **local})
        },
    )


def test_agents_get_their_skills_and_a_fallback_gets_its_own(tmux_repo: Repo) -> None:
    lane_with_skills(tmux_repo, retries=1)
    tmux_repo.fake("claude", CLAUDE)
    done = tmux_repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert done.returncode == 0, done.stderr
    root = tmux_repo.root
    prompt = (root / "A.prompt").read_text()
    assert "## Skill context" in prompt and "- house-style: Skill house-style." in prompt
    assert "- runtime-local:" in prompt and "runtime-claude" not in prompt
    ids, folder = (root / "A.env").read_text().splitlines()
    assert ids == "house-style,runtime-local"
    assert (root / "A.txt").read_text() == "# House style\n\nName things well.\n"
    assert folder == str(tmux_repo.agent_dir("main", 1, "A") / "skills" / "bundles")

    # B: claude first (it fails), with its skills in its system prompt file...
    argv = (root / "claude.argv").read_text().splitlines()
    assert "--append-system-prompt-file" in argv and "--add-dir" in argv
    system = (root / "claude.system").read_text()
    assert "# Skill runtime-claude" in system and "Name things well." in system
    # ...then local, given local's skills, not claude's
    assert (root / "B.env").read_text().splitlines()[0] == "house-style,runtime-local"
    b_prompt = (root / "B.prompt").read_text()
    assert "- runtime-local:" in b_prompt and "runtime-claude" not in b_prompt
    resolved = tmux_repo.agent_dir("main", 1, "B") / "skills" / "resolved.json"
    assert json.loads(resolved.read_text())["executor"] == "local"
    # recorded in the last attempt's launch record and summary
    b_dir = tmux_repo.agent_dir("main", 1, "B")
    for name in ("launch.json", "summary.json"):
        record = json.loads((b_dir / name).read_text())["skills"]
        assert (record["ids"], record["executor"]) == (["house-style", "runtime-local"], "local")


def test_the_dry_run_previews_each_agents_skills(repo: Repo) -> None:
    lane_with_skills(repo)
    done = repo.wave("launch", "--lane", "main", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    agents = {a["agent"]: a for a in json.loads(done.stdout)["agents"]}
    assert agents["A"]["skills"]["ids"] == ["house-style", "runtime-local"]
    assert agents["B"]["skills"]["ids"] == ["house-style", "runtime-claude"]
    assert agents["B"]["skills"]["executor"] == "claude"
    table = repo.wave("launch", "--lane", "main", "--dry-run").stdout  # a person's table
    assert "A: skills house-style, runtime-local" in table
    assert "B: skills house-style, runtime-claude" in table
    argv = agents["B"]["argv"]
    assert argv[argv.index("--append-system-prompt-file") + 1].endswith(
        "/agents/B/skills/skills.md"
    )


def test_validate_reports_a_bad_skill(repo: Repo) -> None:
    lane_with_skills(repo)
    (repo.root / "skills" / "runtime-local" / "skill.yaml").write_text(
        "id: runtime-local\ntags: x\n"
    )
    done = repo.wave("validate", "--lane", "main")
    assert done.returncode != 0
    assert "skills/runtime-local/skill.yaml:1:1: missing description" in done.stderr + done.stdout
    assert (
        "skills/runtime-local/skill.yaml:2:7: tags: wrong type: string" in done.stderr + done.stdout
    )
