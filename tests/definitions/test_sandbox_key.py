"""sandbox: in lane defaults, a wave and an agent; each bad value located as file:line:col."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.definitions.model import AgentDef, ExecutorSpec, SandboxSettings
from wave_orchestrator.definitions.sections.sandbox import sandbox_path
from wave_orchestrator.errors import LaneInvalid
from wave_orchestrator.runtime.wave.reuse import fingerprint

LANE = "closure: {required_roles: []}\ndefaults:\n  executor: local\n"
AGENT = '  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'


def agent_line(agent_id: str, sandbox: str) -> str:
    return f'  - {{id: {agent_id}, prompt: p, sandbox: {sandbox}, executor: {{local: {{command: "true"}}}}}}\n'


def test_no_sandbox_is_none_everywhere(repo: Repo) -> None:
    repo.lane("main", LANE, {1: "agents:\n" + AGENT})
    lane = load_lane(repo.root, "main")
    assert lane.defaults.sandbox == SandboxSettings()
    assert lane.wave(1).sandbox == SandboxSettings()
    agent = lane.wave(1).agents[0]
    assert agent.sandbox is None
    assert agent.sandbox_settings == SandboxSettings() and not agent.sandbox_settings.enabled


def test_a_mode_word_and_a_mapping(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "  sandbox: bubblewrap\n",
        {
            1: "agents:\n"
            + AGENT
            + agent_line(
                "B",
                "{mode: auto, network: false, writable: [~/.cache/go-build, build/], "
                "readable: [/opt/tools, '~'], hidden: [secrets/keys.txt, ./notes]}",
            )
        },
    )
    lane = load_lane(repo.root, "main")
    a, b = lane.wave(1).agents
    assert a.sandbox == SandboxSettings(mode="bubblewrap")
    assert b.sandbox == SandboxSettings(
        mode="auto",
        network=False,
        writable=("~/.cache/go-build", "build"),
        readable=("/opt/tools", "~"),
        hidden=("secrets/keys.txt", "notes"),
    )


def test_agent_over_wave_over_lane_defaults_key_by_key(repo: Repo) -> None:
    repo.lane(
        "main",
        LANE + "  sandbox: {mode: bubblewrap, writable: [out], hidden: [private]}\n",
        {
            1: "sandbox: {network: false}\nagents:\n"
            + AGENT
            + agent_line("B", "{writable: [other]}")
            + agent_line("C", "none")
            + agent_line("D", "auto"),
            2: "sandbox: none\nagents:\n" + AGENT + agent_line("B", "{mode: bubblewrap}"),
        },
    )
    lane = load_lane(repo.root, "main")
    base = SandboxSettings(mode="bubblewrap", writable=("out",), hidden=("private",))
    assert lane.defaults.sandbox == base
    one = lane.wave(1)
    assert one.sandbox == base._replace(network=False)
    a, b, c, d = one.agents
    assert a.sandbox == one.sandbox  # the wave's, as it is
    assert b.sandbox == one.sandbox._replace(writable=("other",))  # list replaced
    assert c.sandbox is None  # none: no sandbox, whatever the rest says
    assert d.sandbox == one.sandbox._replace(mode="auto")  # the word: mode only
    two = lane.wave(2)
    assert two.sandbox == base._replace(mode="none")
    assert two.agents[0].sandbox is None
    assert two.agents[1].sandbox == base  # the lists lane.yaml gave come back with a mode


@pytest.mark.parametrize(
    ("lane_extra", "wave_extra", "agent_sandbox", "expect"),
    [
        (
            "  sandbox: docker\n",
            "",
            None,
            "lane.yaml:4:12: defaults.sandbox: unknown sandbox mode 'docker' "
            "(expected one of: auto, bubblewrap, none)",
        ),
        (
            "  sandbox: true\n",
            "",
            None,
            "lane.yaml:4:12: defaults.sandbox: wrong type: boolean (expected none, bubblewrap, "
            "auto or a mapping {mode, network, writable, readable, hidden})",
        ),
        (
            "  sandbox: {mode: bwrap}\n",
            "",
            None,
            "lane.yaml:4:19: defaults.sandbox.mode: unknown sandbox mode 'bwrap'; did you mean "
            "'bubblewrap'?",
        ),
        (
            "  sandbox: {netwrok: false}\n",
            "",
            None,
            "lane.yaml:4:13: defaults.sandbox.netwrok: unknown key; did you mean 'network'?",
        ),
        (
            "  sandbox: {network: no way}\n",
            "",
            None,
            "lane.yaml:4:22: defaults.sandbox.network: wrong type: string (expected true or false)",
        ),
        (
            "",
            "sandbox: {writable: ['']}\n",
            None,
            "wave-1.yaml:1:22: sandbox.writable[0]: invalid path '': it is empty",
        ),
        (
            "",
            "sandbox: {writable: [../beside]}\n",
            None,
            "wave-1.yaml:1:22: sandbox.writable[0]: invalid path '../beside': it has '..' "
            "(name the folder itself) (expected an absolute path, ~/path, or a path inside the "
            "repository)",
        ),
        (
            "",
            "sandbox: {readable: [/opt/../etc]}\n",
            None,
            "sandbox.readable[0]: invalid path '/opt/../etc': it has '..'",
        ),
        (
            "",
            'sandbox: {hidden: ["a\\0b"]}\n',
            None,
            "wave-1.yaml:1:20: sandbox.hidden[0]: invalid path 'a\\x00b': it has control or "
            "format characters",
        ),
        (
            "",
            "sandbox: {writable: [/]}\n",
            None,
            "sandbox.writable[0]: invalid path '/': it is the whole file system",
        ),
        (
            "",
            "sandbox: {readable: [~bob/x]}\n",
            None,
            "sandbox.readable[0]: invalid path '~bob/x': only ~ and ~/... (your own home)",
        ),
        (
            "",
            "sandbox: {writable: out}\n",
            None,
            "wave-1.yaml:1:21: sandbox.writable: wrong type: string (expected a list of strings)",
        ),
        (
            "",
            "sandbox: {writable: [out/, ~/x], hidden: [out]}\n",
            None,
            "wave-1.yaml:1:43: sandbox.hidden[0]: 'out' is named twice (also in writable)",
        ),
        (
            "",
            "",
            "{writable: [7]}",
            "wave-1.yaml:3:45: agents[1].sandbox.writable[0]: wrong type: number",
        ),
        (
            "",
            "sandbox: {readable: [~]}\n",
            None,
            "wave-1.yaml:1:22: sandbox.readable[0]: null is no path (a bare ~ is null in YAML) "
            "(expected '~' quoted)",
        ),
        (
            "",
            "",
            "lots",
            "wave-1.yaml:3:33: agents[1].sandbox: unknown sandbox mode 'lots'",
        ),
    ],
)
def test_bad_values_name_file_line_and_field(
    repo: Repo, lane_extra: str, wave_extra: str, agent_sandbox: str | None, expect: str
) -> None:
    agents = "agents:\n" + AGENT + (agent_line("B", agent_sandbox) if agent_sandbox else "")
    repo.lane("main", LANE + lane_extra, {1: wave_extra + agents})
    with pytest.raises(LaneInvalid) as err:
        load_lane(repo.root, "main")
    assert expect in str(err.value)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("~", "~"),
        ("~/", "~"),
        ("~/.cache//go-build/", "~/.cache/go-build"),
        ("/opt/./tools/", "/opt/tools"),
        ("./build", "build"),
        (".", "."),
        ("a/./b", "a/b"),
    ],
)
def test_paths_are_kept_normalised(text: str, kept: str) -> None:
    assert sandbox_path(text) == (kept, "")


def test_a_lane_without_sandbox_digests_as_before() -> None:
    """The reuse fingerprint leaves out empty values: an agent with no sandbox gives the
    digest it gave before sandboxes existed; a sandboxed one another."""
    from wave_orchestrator.runtime.wave import reuse

    agent = AgentDef(
        id="A", title="A", role="implementation", executor=ExecutorSpec("local"), prompt="p"
    )
    shape = reuse._plain(agent)
    assert "sandbox" not in shape
    boxed = agent._replace(sandbox=SandboxSettings(mode="bubblewrap"))
    assert fingerprint(boxed, "local") != fingerprint(agent, "local")
    # the fields such an agent digested before sandboxes existed, and no other
    assert set(shape) == {"id", "title", "role", "executor", "prompt", "placement"}
