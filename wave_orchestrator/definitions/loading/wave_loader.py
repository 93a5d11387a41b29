"""Where one wave file is validated: its own keys (title, shared paths, isolation, placement,
sandbox, components, eval targets, other lanes' waves, caps), then each agent
(``agent_loader``), then the rules across agents (``wave_rules``); every problem located in the
file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...names import LANE_NAME_RE
from ..model import NUMBER_RANGES, WaveDef
from ..sections.components import check_component_owners, check_components
from ..sections.context7 import check_pick
from ..sections.eval_targets import check_eval_targets
from ..sections.governance import check_wave_governance
from ..sections.isolation import check_isolation
from ..sections.placement import check_placement_override
from ..sections.sandbox import check_sandbox
from ..sections.ssh import check_ssh_isolation, check_ssh_sandbox
from ..source.schema import Checker
from ..source.yaml_source import FieldPath
from .agent_loader import AgentLoader
from .lane_context import LaneContext, parse_file
from .wave_rules import check_wave_rules

WAVE_KEYS = (
    "wave",
    "title",
    "commit_message",
    "agents",
    "shared",
    "isolation",
    "base",
    "setup",
    "placement",
    "eval_targets",
    "depends_on_lanes",
    "components",
    "max_running",
    "spend_limit_usd",
    "sandbox",
    "context7",
)


class WaveLoader:
    """Validates one wave file against the lane it belongs to."""

    def __init__(self, lane: LaneContext, path: Path, number: int) -> None:
        self.lane = lane
        self.path = path
        self.number = number

    def load(self) -> WaveDef | None:
        display = self.lane.display(self.path)
        doc = parse_file(self.path, display, self.lane.problems)
        if doc is None:
            return None
        ck = self.ck = Checker(display, doc, self.lane.problems)
        raw = ck.mapping(doc.data, (), WAVE_KEYS)
        if raw is None:
            return None
        if "wave" in raw:
            got = ck.number(raw["wave"], ("wave",), integer=True, limits=NUMBER_RANGES["wave"])
            if got is not None and got != self.number:
                ck.error(
                    ("wave",),
                    f"wave: {got} disagrees with the file name (wave {self.number})",
                    f"wave: {self.number}",
                )
        title = ck.string(raw.get("title", f"Wave {self.number}"), ("title",)) or ""
        commit = None
        if raw.get("commit_message") is not None:
            commit = ck.string(raw["commit_message"], ("commit_message",))
        shared = [
            self.lane.owned(ck, p, ("shared", i))
            for i, p in enumerate(ck.string_list(raw.get("shared"), ("shared",)) or [])
        ]
        self.placement = check_placement_override(ck, raw.get("placement"), self.lane.placement)
        self.isolation = check_isolation(ck, raw, self.lane.isolation)  # agent ids depend on it
        self.sandbox = check_sandbox(ck, raw.get("sandbox"), self.lane.sandbox)
        if "isolation" in raw:  # an inherited one is reported in lane.yaml
            check_ssh_isolation(ck, self.isolation, self.lane.placement, ())
        check_ssh_sandbox(ck, raw.get("sandbox"), self.lane.placement, ())
        self.components = check_components(ck, raw.get("components"))  # agents own them
        docs = check_pick(ck, raw.get("context7"), self.lane.context7, ())
        self._check_base(raw)
        agents_raw = raw.get("agents")
        if not isinstance(agents_raw, list) or not agents_raw:
            if agents_raw is None or isinstance(agents_raw, list):
                ck.error(("agents",), "a wave needs at least one agent", "a list of agents")
            else:
                ck.wrong_type(("agents",), agents_raw, "a list of agents")
            return None
        agent = AgentLoader(
            self.lane,
            ck,
            self.number,
            self.isolation,
            self.placement,
            self.components,
            self.sandbox,
        )
        agent.docs = docs  # the wave's Context7 bundle and query, which an agent's override
        loaded = [(i, a) for i, item in enumerate(agents_raw) if (a := agent.load(item, i))]
        # Wave-level rules run on the agents that loaded, so their errors show up now too.
        check_wave_rules(ck, self.lane, self.number, loaded, [s for s in shared if s], agents_raw)
        judged = any(a.role == "cont-eval" for _, a in loaded)
        targets = check_eval_targets(ck, raw.get("eval_targets"), self.lane.benchmarks, judged)
        lanes = self._lane_dependencies(raw.get("depends_on_lanes"))
        caps, spend = check_wave_governance(ck, raw, self.lane.settings.accounts)
        check_component_owners(ck, self.components, loaded)
        if len(loaded) != len(agents_raw):
            return None
        agents = [a for _, a in loaded]
        return WaveDef(
            number=self.number,
            title=title,
            path=self.path,
            agents=tuple(agents),
            commit_message=commit,
            shared=tuple(s for s in shared if s),
            isolation=self.isolation,
            placement=self.placement,
            eval_targets=targets,
            depends_on_lanes=lanes,
            components=tuple(self.components.items()),
            caps=caps,
            spend_limit_usd=spend,
            sandbox=self.sandbox,
        )

    def _lane_dependencies(self, value: Any) -> tuple[tuple[str, int], ...]:
        """``depends_on_lanes: [lane:wave, ...]``: waves of other lanes of this repository
        that must have completed before this wave starts."""
        p: FieldPath = ("depends_on_lanes",)
        found: list[tuple[str, int]] = []
        for j, item in enumerate(self.ck.string_list(value, p) or []):
            lane, _, number = item.partition(":")
            if not (LANE_NAME_RE.fullmatch(lane) and number.isdigit() and int(number) >= 1):
                self.ck.error((*p, j), f"invalid lane wave {item!r}", "lane:wave, e.g. infra:2")
            elif lane == self.lane.name:
                self.ck.error((*p, j), f"{item!r} is a wave of this lane", "another lane's wave")
            elif not (self.lane.repo / "lanes" / lane / "lane.yaml").is_file():
                self.ck.error(
                    (*p, j), f"no lane {lane!r} in this repository", f"a lanes/{lane}/lane.yaml"
                )
            else:
                found.append((lane, int(number)))
        return tuple(found)

    def _check_base(self, raw: Mapping[str, Any]) -> None:
        """A worktree wave's base must name a commit (when the repository is a git one), or
        the launch would record the wave running and then fail: reported where it is written."""
        iso = self.isolation
        if not iso.worktree or iso.base is None:
            return
        if raw.get("base") == iso.base:
            self.lane.base_refs.check(self.ck, self.lane.repo, iso.base)
        elif self.lane.lane_checker is not None and iso.base == self.lane.isolation.base:
            self.lane.base_refs.check(self.lane.lane_checker, self.lane.repo, iso.base)
