"""Writing one try's files: its prompt.md and the run.sh that starts its CLI (with the argv
and stdin of its later tries when they go on with its first try's conversation)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from ...agents.prompts import compose_prompt
from ...agents.wrapper import WRAPPER_TOOLS, WrapperSpec, render_run_script
from ...state.fsutil import check_regular_or_missing, ensure_dir, write_atomic
from .plan import AgentLaunch
from .programs import ensure_agent_bin

# The whole prompt of run.sh's later tries of a claude conversation: its task it has.
RETRY_NOTE = (
    "Your last request was turned away by a rate limit, now waited out. "
    "Continue the task where you were.\n"
)


def materialize(
    launch: AgentLaunch, write: Callable[..., object] = write_atomic, *, live: bool = True
) -> None:
    """Write prompt.md and run.sh for one launch (and nothing else). A dry run passes its own
    ``write``, which leaves alone what an earlier dry run wrote the same, and ``live=False``:
    no wrapper will write beside them, and it makes the private bin folder once for all. A try
    that continues its conversation is told only why it stopped: the rest it has."""
    prompt = launch.continuation or compose_prompt(
        launch.lane,
        launch.wave,
        launch.agent,
        launch.attempt,
        launch.briefing,
        launch.retry_context,
        launch.coordination,
        reference=launch.docs.settle() if launch.docs is not None else "",
        skill_context=launch.skills.catalog() if launch.skills is not None else "",
    )
    ensure_dir(launch.paths.dir)
    paths = launch.paths
    if live:
        for path in (paths.output_log, paths.status, paths.backoff):  # the wrapper writes these
            check_regular_or_missing(path)  # through a link it would write outside the state dir
        if launch.bin_dir is not None:
            ensure_agent_bin(launch.bin_dir)
    if (shared := launch.account_backoff) is not None:
        ensure_dir(shared.parent)
    if launch.skills is not None:
        launch.skills.materialize(launch.agent.executor, launch.cwd, write, fresh=live)
    write(launch.paths.prompt, prompt)
    spec = WrapperSpec(
        lane=launch.lane.name,
        wave=launch.wave.number,
        agent=launch.agent.id,
        attempt=launch.attempt,
        repo=str(launch.cwd),
        agent_dir=str(launch.paths.dir),
        prompt_file=str(launch.paths.prompt),
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
        argv=launch.confined(live)[0],
        env=launch.env,
        rate_limit=launch.rate_limit,
        env_file=str(launch.env_file) if launch.env_file else None,
        model=launch.model,
        account=launch.account,
        account_backoff=str(shared) if shared else None,
        orchestrator_id=launch.orchestrator_id,
        # On an SSH host the wrapper's tools are the host's, found on its PATH.
        tools={name: name for name in WRAPPER_TOOLS} if launch.lane.placement.remote else None,
    )
    if retry := launch.retry_argv:  # a later try goes on with what the first one began
        retry_prompt = launch.paths.dir / "retry-prompt.md"
        write(retry_prompt, RETRY_NOTE)
        spec = spec._replace(
            retry_argv=launch.confined(live, retry)[0], retry_prompt_file=str(retry_prompt)
        )
    # Owner-only: run.sh holds the agent's env in clear text (the preview redacts it).
    write(launch.paths.run_script, render_run_script(spec), mode=0o700)
