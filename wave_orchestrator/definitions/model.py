"""Validated lane definitions: frozen, typed, and the only shape the rest of `wave` sees."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .placement_model import PlacementSettings as PlacementSettings
from .placement_model import SshHostDef as SshHostDef
from .placement_model import SshSettings as SshSettings
from .skill_model import SkillsSettings
from .stall_policy import StallPolicy

EMPTY: Mapping[Any, Any] = MappingProxyType({})  # every mapping field's default: read-only

IMPLEMENTATION_ROLES = ("implementation", "infra", "deploy", "research")
# The closure sweep runs these stages in exactly this order.
CLOSURE_ORDER = ("cont-eval", "security", "integration", "documentation", "cont-qa")
ROLES = IMPLEMENTATION_ROLES + CLOSURE_ORDER
EXECUTOR_IDS = ("claude", "codex", "local", "opencode")

# Output of a failed try worth another try after a wait (rate limits, provider overload,
# opencode's first-start race): `grep -E -i` against its output, ANSI escapes removed.
DEFAULT_RATE_LIMIT_PATTERNS = (
    "429 Too Many Requests",
    "exceeded retry limit",
    "last status: 429",  # codex: `stream error: last status: 429` (no reason phrase)
    "rate limit",
    "Request rejected \\(429\\)",
    "temporarily limiting requests",
    "529 Overloaded",
    '"statusCode":429',
    '"statusCode":529',  # opencode --format json, Anthropic provider: "message":"Overloaded"
    "^Error: Overloaded",  # the same in opencode's text output
    # opencode agents racing to create a fresh HOME's database print `Failed query: ` and, on
    # the next lines, the `CREATE TABLE ...` that failed
    "Failed query: *(CREATE TABLE|$)",
)
# Out of quota: no wait of minutes helps. Checked first: a 429 saying one is a usage limit.
DEFAULT_USAGE_LIMIT_PATTERNS = (
    "You.ve hit your [a-z' ]*limit",
    "usage limit reached",
    "usage limit has been reached",  # opencode, openai-compatible provider (HTTP 429)
    "Quota exceeded",
    "exceeded your current quota",  # opencode, openai-compatible provider (HTTP 429)
    "out of usage credits",
    "credit balance is too low",  # claude (HTTP 400)
    "limit reached and temporarily disabled",  # claude: "Fast limit reached ... resets in …"
)

# The range of every number the launcher and run.sh (64-bit: `base_ms << 30` must not wrap)
# compute with; lane files and launch flags are checked against it.
NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "timeout_minutes": (0, 43_200),  # 30 days
    "max_retries_per_wave": (0, 100),
    "launch_stagger_ms": (0, 600_000),
    "stall_minutes": (0, 43_200),
    "max_running": (1, 10_000),
    "retries": (0, 100),  # rate_limit
    "base_delay_seconds": (0, 86_400),
    "max_delay_seconds": (0, 86_400),
    "jitter_seconds": (0, 3_600),
    "budget_minutes": (0, 43_200),
    "budget_turns": (1, 100_000),
    "max_turns": (1, 100_000),
    "wave": (0, 99_999),
}


def is_closure_role(role: str) -> bool:
    return role in CLOSURE_ORDER


class RateLimitPolicy(NamedTuple):
    """How run.sh retries an agent a provider turned away: tries, backoff, texts."""

    retries: int = 2
    base_delay_seconds: float = 20
    max_delay_seconds: float = 180
    jitter_seconds: float = 5
    patterns: tuple[str, ...] = DEFAULT_RATE_LIMIT_PATTERNS
    usage_limit_patterns: tuple[str, ...] = DEFAULT_USAGE_LIMIT_PATTERNS

    @property
    def tries(self) -> int:
        return self.retries + 1


class UsageLimitPolicy(NamedTuple):
    """``usage_limit`` of lane.yaml: an agent that hits one waits for its reset (``wait``) when
    the CLI names one within ``max_wait_minutes``, then runs ``margin_seconds`` after it, at
    most ``max_parks`` times (limited at every reset, it does not wait all night)."""

    wait: bool = True
    max_wait_minutes: float = 360
    margin_seconds: float = 60
    max_parks: int = 3


class AccountDef(NamedTuple):
    """One of lane.yaml's ``accounts``: a login of one executor, and the env that selects it."""

    name: str
    executor: str
    env: Mapping[str, str] = EMPTY


class Caps(NamedTuple):
    """``max_running`` as a mapping: agents running at once per executor, account and model
    (``total`` is the lane-wide one). None or missing: no cap of that kind."""

    total: int | None = None
    executor: Mapping[str, int] = EMPTY
    account: Mapping[str, int] = EMPTY
    model: Mapping[str, int] = EMPTY

    def over(self, wave: Caps | None) -> Caps:
        """These caps with a wave's own on top (per key)."""
        if wave is None:
            return self
        return Caps(
            wave.total if wave.total is not None else self.total,
            {**self.executor, **wave.executor},
            {**self.account, **wave.account},
            {**self.model, **wave.model},
        )

    def __bool__(self) -> bool:
        return bool(self.total or self.executor or self.account or self.model)


class Governance(NamedTuple):
    """The lane's part of the governor's rules (a wave adds its caps and spend limit)."""

    usage_limit: UsageLimitPolicy = UsageLimitPolicy()
    accounts: Mapping[str, AccountDef] = EMPTY
    caps: Caps = Caps()
    spend_limit_usd: float | None = None
    spend_hard: bool = False  # at the limit, running agents are stopped too


SANDBOX_MODES = ("none", "bubblewrap", "auto")


class SandboxSettings(NamedTuple):
    """``sandbox:`` of lane defaults, a wave or an agent: whether its agents run in bubblewrap
    (``auto``: where it works here, else unsandboxed with a warning), with the network or
    without, and the paths opened (``writable``, ``readable``) or closed (``hidden``) beyond
    wave's own choice. Paths are kept as written (``/abs``, ``~/x``, repository-relative) and
    resolved at launch, against the person's real HOME and the repository."""

    mode: str = "none"
    network: bool = True
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.mode != "none"


class LaneDefaults(NamedTuple):
    """``defaults:`` of lane.yaml: what every agent gets unless its wave or itself says."""

    executor: str = "codex"
    timeout_minutes: float = 240
    max_retries_per_wave: int = 1
    launch_stagger_ms: float = 1200
    stall_minutes: float = 0
    on_timeout: str = "restart"  # after a budget kill or a stall: restart | continue
    max_running: int = 500  # agents running at once; the others wait for a free place
    rate_limit: RateLimitPolicy = RateLimitPolicy()
    sandbox: SandboxSettings = SandboxSettings()


class ExitContract(NamedTuple):
    """What an agent promises to leave behind; the QA gates check the wave against it."""

    completion: str = "integrated"
    durability: str = "none"
    proof: str = "unit"
    doc_impact: str = "owned"


class ProofArtifact(NamedTuple):
    """A file an agent promises to leave as proof of its work, and the gate that needs it
    (``missing-proof-artifact`` there when it does not exist)."""

    path: str
    gate: str  # implementation, or a closure stage: cont-eval, security, ...


class ExecutorSpec(NamedTuple):
    """An agent's executor after merging built-ins → lane → profile → agent. ``settings``
    holds the merged block of every executor id: a fallback launches with its own."""

    id: str
    model: str | None = None
    reasoning: str | None = None
    budget_minutes: float | None = None
    budget_turns: int | None = None
    fallbacks: tuple[str, ...] = ()
    env: Mapping[str, str] = EMPTY
    settings: Mapping[str, Mapping[str, Any]] = EMPTY
    account: str | None = None  # one of the lane's accounts (its env is in ``env``)

    def settings_for(self, executor_id: str) -> Mapping[str, Any]:
        return self.settings.get(executor_id, {})


class Context7Selection(NamedTuple):
    """The library docs fetched for an agent before it starts: the bundle chosen (agent, wave,
    lane, then the index's default), the query, and each library as (id, name, query hint)."""

    bundle: str
    query: str
    libraries: tuple[tuple[str, str, str], ...] = ()


class Context7Settings(NamedTuple):
    """``context7`` of lane.yaml: the bundle index read, and the API asked for the docs."""

    index_file: str = "docs/context7/bundles.json"
    url: str = "https://context7.com"
    enabled: bool = True  # False: `wave launch --no-context7`


class AgentDef(NamedTuple):
    """One agent of a wave, with its executor and placement already merged."""

    id: str
    title: str
    role: str
    executor: ExecutorSpec
    prompt: str
    owns: tuple[str, ...] = ()
    deliverables: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    exit_contract: ExitContract | None = None
    prompt_file: str | None = None
    placement: PlacementSettings = PlacementSettings()
    proof_artifacts: tuple[ProofArtifact, ...] = ()
    components: tuple[tuple[str, str], ...] = ()  # (component, target level) it promotes
    # None when it runs unsandboxed (mode none): a lane without sandboxes digests as before
    sandbox: SandboxSettings | None = None
    skills: tuple[str, ...] = ()  # the ids it names itself: given whatever their activation
    # A digest of the skills it resolves to on its own executor ("" with none: a lane without
    # skills digests as before), so that a changed skill is not reused.
    skill_digest: str = ""
    context7: Context7Selection | None = None  # None: no docs (a lane without digests as before)

    @property
    def is_closure(self) -> bool:
        return is_closure_role(self.role)

    @property
    def sandbox_settings(self) -> SandboxSettings:
        """Its sandbox, ``none`` spelled out when it has none."""
        return self.sandbox or SandboxSettings()


class IsolationSettings(NamedTuple):
    """``isolation``, ``base`` and ``setup`` of a lane, or of a wave (which overrides per key)."""

    mode: str = "shared"  # shared: one checkout for all | worktree: one git worktree per agent
    base: str | None = None  # the ref agent branches start from (default HEAD)
    setup_copy: tuple[str, ...] = ()  # untracked files copied from the main checkout
    setup_command: tuple[str, ...] | str | None = None  # run in each new worktree

    @property
    def worktree(self) -> bool:
        return self.mode == "worktree"


class EvalTarget(NamedTuple):
    """One of a wave's ``eval_targets``: an id the cont-EVAL must report on, and the
    benchmarks it is pinned to (their ids must be among those it reports)."""

    id: str
    benchmarks: tuple[str, ...] = ()


class WaveDef(NamedTuple):
    """One wave file, validated: its agents in file order and what the wave overrides."""

    number: int
    title: str
    path: Path
    agents: tuple[AgentDef, ...]
    commit_message: str | None = None
    shared: tuple[str, ...] = ()
    isolation: IsolationSettings = IsolationSettings()
    placement: PlacementSettings = PlacementSettings()
    eval_targets: tuple[EvalTarget, ...] = ()  # what the cont-EVAL gate holds its agent to
    depends_on_lanes: tuple[tuple[str, int], ...] = ()  # (lane, wave): completed before it runs
    components: tuple[tuple[str, str], ...] = ()  # (component, target level) it promotes
    caps: Caps | None = None  # its max_running, over the lane's
    spend_limit_usd: float | None = None  # what this wave's agents may spend
    sandbox: SandboxSettings = SandboxSettings()

    @property
    def implementation_agents(self) -> tuple[AgentDef, ...]:
        return tuple(a for a in self.agents if not a.is_closure)

    def closure_stages(self) -> list[tuple[str, tuple[AgentDef, ...]]]:
        """Closure agents grouped by stage in sweep order; stages with no agent are skipped."""
        stages = []
        for role in CLOSURE_ORDER:
            members = tuple(a for a in self.agents if a.role == role)
            if members:
                stages.append((role, members))
        return stages

    def agent(self, agent_id: str) -> AgentDef:
        for a in self.agents:
            if a.id == agent_id:
                return a
        raise KeyError(agent_id)


# What a person can be told of (``notify.on``), in the order docs/coordination.md lists them.
NOTIFY_KINDS = (
    "question",
    "wave-completed",
    "wave-failed",
    "wave-blocked",
    "usage-limit",
    "spend-warning",
    "spend-limit",
    "lane-done",
    "stalled",
)
WEBHOOK_FORMATS = ("json", "slack", "ntfy")


class NotifySettings(NamedTuple):
    """``notify`` of lane.yaml: where a person is told of what needs them: a command, the
    desktop, a webhook, the terminal's bell."""

    command: tuple[str, ...] = ()  # run with each event as JSON on stdin
    desktop: bool = False  # notify-send, when the machine has it
    webhook_url: str | None = None
    webhook_format: str = "json"  # json | slack | ntfy
    bell: bool = False  # a bell on the launcher's terminal
    on: tuple[str, ...] = NOTIFY_KINDS

    def __bool__(self) -> bool:
        return bool(self.command or self.desktop or self.webhook_url or self.bell)


class LaneDef(NamedTuple):
    """A lane as `wave` runs it: lane.yaml merged with every wave file, all checked."""

    name: str
    repo: Path
    path: Path
    state_dir: Path
    description: str = ""
    shared_files: bool = False
    defaults: LaneDefaults = LaneDefaults()
    required_roles: tuple[str, ...] = ()
    role_prompts: Mapping[str, str] = EMPTY
    waves: tuple[WaveDef, ...] = ()
    merge: str = "none"  # ff: fast-forward your branch to a completed wave's integration branch
    notify_command: tuple[str, ...] = ()  # run with each question for a person on stdin
    notify: NotifySettings = NotifySettings()
    feedback_timeout_minutes: float = 60  # a wave with only a question left waits this long
    placement: PlacementSettings = PlacementSettings()
    benchmarks: tuple[str, ...] = ()  # the catalog of benchmark ids a cont-EVAL may report
    governance: Governance = Governance()
    skills: SkillsSettings | None = None  # None: the lane uses no skill bundles
    context7: Context7Settings | None = None  # None: the lane fetches no library docs
    shared_plan_docs: tuple[str, ...] = ()  # what a shared-plan doc impact is about
    stall: StallPolicy = StallPolicy()  # a silent agent nudged, then a person asked

    def wave(self, number: int) -> WaveDef:
        for w in self.waves:
            if w.number == number:
                return w
        raise KeyError(number)
