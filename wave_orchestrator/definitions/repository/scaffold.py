"""`wave init`'s templates: a commented lane.yaml and an example wave that validates as is."""

from __future__ import annotations

import os
from pathlib import Path

from ...state.fsutil import UnsafePath, open_regular

LANE_YAML = """\
# lane.yaml - settings for every wave of this lane. Every key is optional; the values shown
# are the defaults. Reference: `wave docs lanes`
description: "{description}"
# state_dir: null                # default <repository>/.wave/<lane>
# shared_files: false            # true: agents of a wave may own the same paths
defaults:
  executor: {executor}           # codex | claude | opencode | local
  timeout_minutes: 240           # longest any agent may run
  max_retries_per_wave: 1        # wave attempts = this + 1
  launch_stagger_ms: 1200        # pause between two agent launches
  stall_minutes: 0               # 0 = off; else stop an agent silent this long
  max_running: 500               # agents of a wave running at once
  rate_limit:
    retries: 2                   # tries = retries + 1
    base_delay_seconds: 20
    max_delay_seconds: 180
    jitter_seconds: 5
# closure:
#   required_roles: [cont-qa]    # every wave needs an agent of each of these roles
# role_prompts:
#   cont-qa: prompts/cont-qa.md  # relative to this folder
# executors:
#   codex: {{sandbox: workspace-write}}
#   claude: {{output_format: text}}
# profiles:
#   implement-fast: {{executor: codex, model: gpt-5-codex, budget: {{minutes: 45}}}}
"""

LOCAL_EXECUTOR = """\
executors:
  local:
    command: [my-agent]          # the program to run: it reads its prompt on stdin
"""

WAVE_YAML = """\
# wave-1.yaml - the agents of wave 1 run in parallel (`wave docs lanes`)
wave: 1
title: First wave
agents:
  - id: A1
    title: Example task
    prompt: |
      Describe the task here. Change only the paths you own.
    owns: [docs/example.md]
    deliverables: [docs/example.md]
  # The wave is complete only when its cont-qa agent passes the gate (docs/markers.md).
  - id: QA
    title: Continuous QA
    role: cont-qa
    prompt: |
      Review what the agents of this wave changed. Write your report, ending with a line
      `Verdict: PASS` (or CONCERNS / BLOCKED), then print the [wave-gate] marker line.
    owns: [docs/reviews/wave-1-cont-qa.md]
"""


# An agent started unattended cannot answer a permission prompt: without these it reads files,
# asks to edit one, and waits until its timeout. Each says what it allows.
PERMISSIONS = {
    "claude": """\
executors:
  claude:
    # acceptEdits: the agent may create and edit files in the repository without asking;
    # other tools (shell commands, the network) still follow your Claude Code settings.
    # Use bypassPermissions only in a sandbox you can throw away.
    permission_mode: acceptEdits
""",
    "opencode": """\
executors:
  opencode:
    # auto: opencode runs without asking before each edit or command (`opencode run --auto`);
    # run such lanes in a repository you have committed, or with isolation: worktree.
    auto: true
""",
}


def scaffold_demo(repo: Path, lane: str = "demo") -> list[Path]:
    """Copy the demo lane bundled in the package (runs with no agent CLI installed)."""
    from importlib.resources import files

    source = files(__package__).joinpath("demo_lane")
    lane_dir = repo / "lanes" / lane
    (lane_dir / "waves").mkdir(parents=True)
    written = []
    for rel in ("lane.yaml", *(f"waves/{n.name}" for n in source.joinpath("waves").iterdir())):
        if not rel.endswith(".yaml"):
            continue
        target = lane_dir / rel
        target.write_text(source.joinpath(rel).read_text(encoding="utf-8"), encoding="utf-8")
        written.append(target)
    return sorted(written)


def scaffold(repo: Path, lane: str, executor: str) -> list[Path]:
    """Create the lane files; returns the paths written."""
    lane_dir = repo / "lanes" / lane
    written = []
    (lane_dir / "waves").mkdir(parents=True)
    text = LANE_YAML.format(description=f"{lane} lane", executor=executor)
    if executor == "local":  # a local agent is whatever program you name: the lane must say which
        text += LOCAL_EXECUTOR
    text += PERMISSIONS.get(executor, "")
    (lane_dir / "lane.yaml").write_text(text)
    (lane_dir / "waves" / "wave-1.yaml").write_text(WAVE_YAML)
    written += [lane_dir / "lane.yaml", lane_dir / "waves" / "wave-1.yaml"]
    return written


def ignore_state(repo: Path) -> tuple[bool, str | None]:
    """Add `.wave/` to the repository's .gitignore unless a line says so already; returns
    (added, what stopped it: a .gitignore that is a FIFO, a link, a folder). Read and
    written as bytes: a .gitignore in another encoding is kept as it is."""
    ignore = repo / ".gitignore"
    try:
        fd = open_regular(ignore)  # never waits on a FIFO, never follows a link
    except FileNotFoundError:
        data = b""
    except (UnsafePath, OSError) as exc:
        return False, f"{exc}; add .wave/ to it yourself"
    else:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
    lines = [line.strip() for line in data.splitlines()]
    if b".wave/" in lines or b".wave" in lines or b"/.wave/" in lines or b"/.wave" in lines:
        return False, None
    try:
        fd = open_regular(ignore, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW)
    except (UnsafePath, OSError) as exc:
        return False, f"{exc}; add .wave/ to it yourself"
    with os.fdopen(fd, "ab") as fh:
        fh.write((b"\n" if data and not data.endswith(b"\n") else b"") + b".wave/\n")
    return True, None
