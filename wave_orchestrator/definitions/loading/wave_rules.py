"""The rules across a wave's agents: unique ids, dependencies that exist and have no cycle,
one agent per closure role (the lane's required ones present), owned paths that do not
overlap."""

from __future__ import annotations

from typing import Any

from ..model import CLOSURE_ORDER, AgentDef
from ..sections.ownership import OwnedPaths
from ..source.schema import Checker
from .lane_context import LaneContext


def check_wave_rules(
    ck: Checker,
    lane: LaneContext,
    number: int,
    loaded: list[tuple[int, AgentDef]],
    shared: list[str],
    raw_items: list[Any],
) -> None:
    """Rules across agents of wave ``number``. ``loaded`` keeps each agent's index in the file;
    ids and roles of agents that failed to load still count, so their absence is not reported
    twice."""
    raw_ids = _raw_strings(raw_items, "id")
    raw_roles = _raw_strings(raw_items, "role")
    closure_ids = {a.id for _, a in loaded if a.is_closure}
    index: dict[str, int] = {}
    for i, a in loaded:
        if a.id in index:
            ck.error(
                ("agents", i, "id"),
                f"duplicate agent id {a.id!r} (also agents[{index[a.id]}])",
                "ids unique in the wave",
            )
        index.setdefault(a.id, i)
    for i, a in loaded:
        for j, dep in enumerate(a.depends_on):
            if dep == a.id:
                ck.error(
                    ("agents", i, "depends_on", j),
                    "an agent cannot depend on itself",
                    "another agent of this wave",
                )
            elif dep not in raw_ids:
                ck.error(
                    ("agents", i, "depends_on", j),
                    f"unknown agent {dep!r}",
                    "one of: " + ", ".join(x for x in index if x != a.id),
                )
            elif dep in closure_ids and not a.is_closure:
                ck.error(
                    ("agents", i, "depends_on", j),
                    f"{dep!r} is a closure agent, which runs after every implementation agent",
                    "an implementation agent of this wave",
                )
    check_cycles(ck, loaded, index)
    required = lane.closure.required_in(number)
    for role in CLOSURE_ORDER:
        members = [i for i, a in loaded if a.role == role]
        if role in required and not members and role not in raw_roles:
            ck.error(
                ("agents",),
                f"no agent with the required closure role {role!r}",
                lane.closure.expected(role),
            )
        if role != "security" and len(members) > 1:
            ck.error(
                ("agents", members[1], "role"),
                f"more than one {role!r} agent",
                f"at most one {role} agent per wave",
            )
    if not lane.shared_files:
        check_ownership(ck, loaded, shared)


def check_cycles(ck: Checker, loaded: list[tuple[int, AgentDef]], index: dict[str, int]) -> None:
    """The first depends_on cycle, found without recursion (a chain of thousands of
    agents must not overflow the stack) in time linear in agents and edges."""
    graph = {a.id: [d for d in a.depends_on if d in index and d != a.id] for _, a in loaded}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for _, a in loaded:
        if a.id in state:
            continue
        trail: list[str] = [a.id]
        where: dict[str, int] = {a.id: 0}
        stack = [iter(graph[a.id])]
        state[a.id] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[trail.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                cycle = [*trail[where[nxt] :], nxt]
                ck.error(
                    ("agents", index[cycle[0]], "depends_on"),
                    "depends_on forms a cycle: " + " -> ".join(cycle),
                    "no cycles",
                )
                return
            if nxt not in state:
                state[nxt] = 1
                where[nxt] = len(trail)
                trail.append(nxt)
                stack.append(iter(graph[nxt]))


def check_ownership(ck: Checker, loaded: list[tuple[int, AgentDef]], shared: list[str]) -> None:
    """Each owned path overlaps no earlier path of another agent (unless shared); an index
    makes each check cost the path's depth, not the number of paths claimed so far."""
    shared_index = OwnedPaths()
    for path in shared:
        shared_index.add(path, -1, "")
    claimed = OwnedPaths()
    for i, a in loaded:
        for j, path in enumerate(a.owns):
            if shared_index.overlap(path, -2) is not None:
                continue
            other = claimed.overlap(path, i)
            if other is not None:
                ck.error(
                    ("agents", i, "owns", j),
                    f"{path!r} is also owned by {other.owner_id} ({other.path!r})",
                    "each path owned by one agent, or shared_files: true, "
                    "or the path listed in the wave's shared:",
                )
            claimed.add(path, i, a.id)


def _raw_strings(raw_items: list[Any], key: str) -> set[str]:
    """The ``key`` of each raw agent entry that gave a string (a list or a mapping there is
    its own problem, reported by the agent's loader: here it names nothing)."""
    found = (item.get(key) for item in raw_items if isinstance(item, dict))
    return {value for value in found if isinstance(value, str)}
