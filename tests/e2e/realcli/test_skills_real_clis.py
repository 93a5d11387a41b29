"""Skill bundles reach the real codex, claude and opencode in the form each reads, seen in what
each CLI sent the provider mock: claude's system prompt carries the skills' text (its system
prompt file) and lists the skill as one of its own (Claude Code loaded `.claude/skills` of the
folder given with --add-dir); opencode's request carries the SKILL.md attached with --file and
the instructions of its config; codex got --add-dir for the bundle and the prompt's catalog.
The same run gives each its library docs from a local stand-in for Context7, in the prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from context7.context7_server import CONTEXT, context7_stub
from helpers import Repo
from provider_mock import ProviderMock
from skills.skill_fixtures import write_skill
from test_real_clis import AGENT, cli_agent, launch, output

pytestmark = pytest.mark.e2e

MARK = "Quokka-7 rule"  # in SKILL.md only: a request that carries it got the skill's text
ADAPTER = "Wombat-3 habit"  # in adapters/<cli>.md only
DOCS = "Numbat-5 call: widgets.make(n)"  # in the Context7 stand-in's answer only
INDEX = {
    "version": 1,
    "defaultBundle": "web",
    "bundles": {"none": {"libraries": []}, "web": {"libraries": [{"libraryId": "/acme/widgets"}]}},
}


@pytest.mark.parametrize("cli", ("codex", "claude", "opencode"))
def test_real_cli_gets_its_skills_and_library_docs(
    cli: str, tmux_repo: Repo, agent_clis: Path, provider_mock: ProviderMock
) -> None:
    mode = provider_mock.ok()
    base = provider_mock.url(mode) if cli == "claude" else provider_mock.url(mode) + "/v1"
    write_skill(
        tmux_repo.root,
        "house-style",
        description="Naming rules of this repository",
        body=f"# House style\n\nThe {MARK}: name things for what they are.\n",
        adapters={cli: f"The {ADAPTER}.\n"},
    )
    agent = cli_agent(cli, base, tmux_repo.root.parent)
    agent["skills"] = ["house-style"]
    if cli == "opencode":  # its provider from a global config: OPENCODE_CONFIG is wave's
        env = agent["executor"]["env"]
        xdg = tmux_repo.root.parent / "xdg-config"
        (xdg / "opencode").mkdir(parents=True)
        (xdg / "opencode" / "opencode.json").write_text(
            Path(env.pop("OPENCODE_CONFIG")).read_text()
        )
        env["XDG_CONFIG_HOME"] = str(xdg)
    index = tmux_repo.root / "docs" / "context7" / "bundles.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps(INDEX))
    tmux_repo.env["CONTEXT7_API_KEY"] = "k-real-cli"
    with context7_stub() as stub:
        stub.answer(CONTEXT, (200, {}, DOCS.encode()))
        launch(tmux_repo, agent_clis, agent, f"context7: {{url: '{stub.url}'}}\n")
    sent = "\n".join(r.text() for r in provider_mock.requests(mode))
    assert DOCS in sent and "External reference only (Context7" in sent  # library docs
    assert sent, output(tmux_repo)
    assert "## Skill context" in sent and "house-style: Skill house-style." in sent  # prompt
    skills = tmux_repo.agent_dir("main", 1, AGENT) / "skills"
    resolved = json.loads((skills / "resolved.json").read_text())
    assert resolved["ids"] == ["house-style"] and resolved["executor"] == cli
    run_sh = (tmux_repo.agent_dir("main", 1, AGENT) / "run.sh").read_text()
    if cli == "codex":
        assert f"--add-dir {skills / 'bundles' / 'house-style'}" in run_sh.replace("'", "")
    elif cli == "claude":
        assert MARK in sent and ADAPTER in sent  # the system prompt file's text
        # Claude Code's own skill list: it loaded .claude/skills of the --add-dir folder
        native = "available for use with the Skill tool:\\n\\n- house-style: Naming rules"
        assert native in sent
    else:
        assert MARK in sent  # the attached SKILL.md, and the config's instructions
        assert ADAPTER in sent
