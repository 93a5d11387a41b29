"""docs/launcher.md quotes the words wave writes when an agent's session is gone: the page's
example is what the liveness check itself returns for a local agent."""

from __future__ import annotations

import re
from pathlib import Path

from wave_orchestrator.placement.local import LocalPlacement
from wave_orchestrator.runtime.pool.liveness import ended_unsaid
from wave_orchestrator.state.lifecycle import AgentState

PAGE = Path(__file__).resolve().parent.parent / "docs" / "launcher.md"


def test_the_page_quotes_the_lost_session_detail() -> None:
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    said = re.search(r"fails as \*\*`session-missing`\*\* \(`([^`]+)`\)", text)
    assert said, "docs/launcher.md no longer says how a lost session fails"
    state, code, detail = ended_unsaid(None, LocalPlacement.kind, "w1-x")
    assert (state, code) == (AgentState.SESSION_MISSING, None)
    assert said.group(1) == detail
