"""What a sandboxed agent's channel binds: its own two outboxes writable, the wave's shared log
and the lane's questions read-only (made first, so that it sees what the launcher appends
later), no lock and nothing of another agent; and inside real bubblewrap, its commands write
its outbox while the shared files refuse every write."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import sandboxed_agent_site

from wave_orchestrator.coordination.follower import Coordinator
from wave_orchestrator.coordination.log import CoordLog
from wave_orchestrator.definitions.model import SandboxSettings
from wave_orchestrator.sandbox.bwrap import build_binds, shell_line, to_argv
from wave_orchestrator.sandbox.plan import plan_sandbox, prepare
from wave_orchestrator.sandbox.probe import probe
from wave_orchestrator.state.events import EventLog

BOXED = SandboxSettings(mode="bubblewrap")


def test_the_channel_writes_only_its_own_outboxes(outside_tmp: Path) -> None:
    repo, layout, env = sandboxed_agent_site(outside_tmp)
    plan = plan_sandbox(
        BOXED, layout=layout, repo=repo, wave=1, agent_id="A1", executor="local", env=env
    )
    own = {e.target: e for e in plan.own}
    state, outboxes = layout.root.resolve(), layout.outboxes(1)
    written = {e.target for e in plan.own if e.writable}
    assert written == {outboxes.coordination("A1").resolve(), outboxes.questions("A1").resolve()}
    for shared in (state / "coordination/wave-1.jsonl", state / "feedback.jsonl"):
        assert not own[shared].writable and not own[shared].optional  # bound whatever happens
    assert state / "feedback.jsonl.lock" not in own
    prepare(plan)
    for path in written | {state / "coordination/wave-1.jsonl", state / "feedback.jsonl"}:
        assert path.is_file() and not path.is_symlink()
    assert not layout.agent(1, "A1").dir.is_file()  # its folder is never made a file


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (setup.sh)")
def test_inside_its_commands_write_its_outbox_and_the_shared_files_refuse_writes(
    outside_tmp: Path,
) -> None:
    repo, layout, env = sandboxed_agent_site(outside_tmp)
    plan = plan_sandbox(
        BOXED, layout=layout, repo=repo, wave=1, agent_id="A1", executor="local", env=env
    )
    prepare(plan)
    log, questions = layout.coordination_log(1), layout.feedback
    CoordLog(log, 1, direct=True).post(kind="request", summary="from a person", agent="human")
    script = "; ".join(
        [
            shell_line(["wave", "coord", "post", "--kind", "request", "--summary", "boxed"]),
            shell_line(["wave", "feedback", "ask", "--question", "which port?"]),
            shell_line(["wave", "coord", "show"]),
            f"if : > {shell_line([str(log)])}; then echo log=written; else echo log=refused; fi",
            f"if echo x >> {shell_line([str(questions)])}; then echo q=written; "
            "else echo q=refused; fi",
            shell_line(["wave", "coord", "post", "--wave", "2", "--kind", "ack", "--summary", "x"]),
        ]
    )
    argv = to_argv(build_binds(plan), ["bash", "-c", script], bwrap=probe().require())
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert "from a person" in done.stdout  # it reads the shared log
    assert "log=refused" in done.stdout and "q=refused" in done.stdout
    assert "not this agent's outbox" in done.stderr and done.returncode == 2
    assert "boxed" not in log.read_text() and "which port?" not in questions.read_text()
    outboxes = layout.outboxes(1)
    assert "boxed" in outboxes.coordination("A1").read_text()
    assert "which port?" in outboxes.questions("A1").read_text()
    coordinator = Coordinator(
        layout, EventLog(outside_tmp / "events.jsonl"), lambda _: None, echo=lambda _: None
    )
    coordinator.begin(1, {"A1": ()})  # the launcher's look merges them
    merged = {r.summary: r for r in CoordLog(log, 1).records().values()}
    assert merged["boxed"].agent == "A1" and merged["which port?"].kind == "human-feedback"
    assert "which port?" in questions.read_text()
