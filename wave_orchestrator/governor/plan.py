"""The governor's plan up front, as `wave launch --dry-run` prints it: per account, the agents
that will run on it and the caps that apply; the spend limits; what a usage limit does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..definitions.model import Governance, WaveDef

if TYPE_CHECKING:  # a dry run prints the plan without loading the governor, its ledger and clock
    from .governor import Slot


def plan_lines(rules: Governance, wave: WaveDef, agents: Sequence[tuple[str, Slot]]) -> list[str]:
    """``agents``: (id, (executor, account, model)) of each agent of ``wave``. Nothing for a
    wave of ``local`` agents on their own ``local`` account with no cap or spend limit: a
    person's scripts, whose usage limit (when they wrap a CLI) is waited out unannounced."""
    caps = rules.caps.over(wave.caps)
    limited = any(slot[1] and slot[:2] != ("local", "local") for _, slot in agents)
    if not (limited or caps or rules.spend_limit_usd or wave.spend_limit_usd):
        return []
    by_account: dict[str, list[tuple[str, Slot]]] = {}
    for agent, slot in agents:
        by_account.setdefault(slot[1] or f"none ({slot[0]})", []).append((agent, slot))
    lines = []
    for account, members in by_account.items():
        executors = {slot[0] for _, slot in members}
        models = {slot[2] for _, slot in members if slot[2] is not None}
        applies = {f"{ex}={caps.executor[ex]}" for ex in executors if ex in caps.executor}
        applies |= {f"{m}={caps.model[m]}" for m in models if m in caps.model}
        if account in caps.account:
            applies.add(f"{account}={caps.account[account]}")
        ids = ", ".join(a for a, _ in members)
        cap_text = f"; caps {', '.join(sorted(applies))}" if applies else ""
        lines.append(f"account {account}: {len(members)} agent(s) ({ids}){cap_text}")
    if caps.total is not None:
        lines.append(f"at most {caps.total} agents at once")
    limits = [f"${rules.spend_limit_usd:.2f} per run of the lane"] if rules.spend_limit_usd else []
    limits += [f"${wave.spend_limit_usd:.2f} for this wave"] if wave.spend_limit_usd else []
    if limits:
        hard = " (running agents stopped too)" if rules.spend_hard else ""
        lines.append(f"spend limit {' and '.join(limits)}{hard}")
    policy = rules.usage_limit
    if not limited:
        return lines
    if policy.wait:
        lines.append(
            f"usage limits: a reset within {policy.max_wait_minutes:g} minutes is "
            f"waited out, {policy.margin_seconds:g}s after it"
        )
    else:
        lines.append("usage limits: the agent ends (usage_limit.wait: false)")
    return lines
