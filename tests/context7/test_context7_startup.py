"""A launch of a lane without Context7 or skills loads nothing of them: neither wave's fetching
modules nor urllib, nor the skills' projection (bench/startup.py measures a launch's imports)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import Repo, local_agent, local_lane

pytestmark = pytest.mark.e2e

NOT_LOADED = (
    "urllib.request",
    "http.client",
    "wave_orchestrator.agents.context7_docs",
    "wave_orchestrator.agents.context7_fetch",
    "wave_orchestrator.agents.skills_projection",
)


def test_a_launch_without_context7_loads_none_of_it(tmux_repo: Repo) -> None:
    tmux_repo.lane("main", local_lane(), {1: "agents:\n" + local_agent("A", "true")})
    probe = (
        "import json, sys, runpy\n"
        "sys.argv = ['wave', 'launch', '--lane', 'main', '--no-dashboard', '--repo', sys.argv[1]]\n"
        "try:\n    runpy.run_module('wave_orchestrator', run_name='__main__')\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        f"found = [n for n in {NOT_LOADED!r} if n in sys.modules]\n"
        "print('RESULT', json.dumps({'code': code, 'loaded': found}), file=sys.__stderr__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmux_repo.root)],
        env=tmux_repo.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("RESULT ")]
    assert line, done.stderr
    assert json.loads(line[-1].removeprefix("RESULT ")) == {"code": 0, "loaded": []}
