"""Infra and deploy signals, as the reference launcher reads them: any agent may
print ``[infra-status] kind=<k> target=<t> state=<s>`` or ``[deploy-status] service=<svc>
state=<s>``; its last one of each kind counts. They make the wave's **infra** gate, judged
after the closure sweep passed, and only in a wave where some agent printed one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..definitions.signal_words import INFRA_PASSING
from .gates import AgentResult, GateResult
from .markers import InvalidMarker, Marker

SIGNAL_KINDS = ("infra-status", "deploy-status")
STATE_WORD_RE = re.compile(r"[a-z][a-z0-9_-]{0,40}")  # what may become part of a status code


def has_signals(results: Sequence[AgentResult]) -> bool:
    """Whether any agent printed an infra or deploy signal (else the wave has no infra gate)."""
    return any(r.markers.get(kind) is not None for r in results for kind in SIGNAL_KINDS)


def judge_infra(results: Sequence[AgentResult]) -> GateResult:
    """Each agent's last infra signal must be in a passing state, and its last deploy signal
    must not be ``failed``; an unreadable signal fails as any invalid marker does."""
    gate = GateResult("infra")
    for r in results:
        infra = r.markers.get("infra-status")
        if isinstance(infra, InvalidMarker):
            gate.fail(infra.code, f"{infra.reason}: {infra.line}", r.agent.id)
        elif isinstance(infra, Marker):
            state = str(infra.get("state")).lower()
            if state not in INFRA_PASSING:
                code = f"infra-{state}" if STATE_WORD_RE.fullmatch(state) else "infra-unknown"
                said = f" ({infra.detail})" if infra.detail else ""
                gate.fail(
                    code,
                    f"Infra signal {infra.get('kind')} on {infra.get('target')} ended in state "
                    f"{state}{said}.",
                    r.agent.id,
                    said=infra.detail,
                )
        deploy = r.markers.get("deploy-status")
        if isinstance(deploy, InvalidMarker):
            gate.fail(deploy.code, f"{deploy.reason}: {deploy.line}", r.agent.id)
        elif isinstance(deploy, Marker) and deploy.get("state") == "failed":
            said = f" ({deploy.detail})" if deploy.detail else ""
            gate.fail(
                "deploy-failed",
                f"Deploy of {deploy.get('service')} failed{said}.",
                r.agent.id,
                said=deploy.detail,
            )
    return gate


def deploy_text(marker: Marker) -> str:
    """One deploy signal as the views show it: ``api healthy``."""
    return f"{marker.get('service')} {marker.get('state')}"
