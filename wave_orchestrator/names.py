"""The names that reach file paths and tmux: lane names, agent ids, wave file names.

They sit below every other layer because the state layout, the lane loader and the command line
all refuse a bad name with the same rule before it becomes a path or a session name.
"""

from __future__ import annotations

import re

LANE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
AGENT_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
WAVE_FILE_RE = re.compile(r"^wave-(\d+)\.yaml$")  # waves/wave-<n>.yaml
# `isolation: worktree`: the integration worktree's folder is `w<n>-integration`, next to the
# agents' `w<n>-<agent id>`, so no implementation agent may take this id.
INTEGRATION_WORKTREE = "integration"
