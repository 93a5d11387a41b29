"""What `wave validate` and `wave launch` refuse in `isolation: worktree`, before anything runs:
an agent id that is the integration worktree's, a base that names no commit, and a program
that is only in the main checkout, not in the worktree its agent starts in."""

from __future__ import annotations

from helpers import Repo, git_init

LANE = "closure: {required_roles: []}\ndefaults: {executor: local, launch_stagger_ms: 0}\n"


def agent(agent_id: str, program: str = "sh") -> str:
    return f"  - {{id: {agent_id}, prompt: p, executor: {{local: {{command: [{program}]}}}}}}\n"


def test_validate_and_launch_refuse_a_reserved_id_and_a_base_that_is_no_commit(
    repo: Repo,
) -> None:
    repo.lane(
        "main",
        LANE + "isolation: worktree\n",
        {
            1: "agents:\n" + agent("A") + agent("Integration"),
            2: "base: nope\nagents:\n" + agent("A"),
        },
    )
    git_init(repo.root)
    expected = [
        "lanes/main/waves/wave-1.yaml:3:10: agents[1].id: agent id 'Integration' is reserved in "
        "isolation: worktree (wave's integration worktree w1-integration); rename the agent",
        f"lanes/main/waves/wave-2.yaml:1:7: base: 'nope' is not a branch, tag or commit in "
        f"{repo.root}",
        "2 problem(s) found; nothing was launched.",
    ]
    checked = repo.wave("validate", "--lane", "main")
    assert checked.returncode == 2, checked.stderr
    assert checked.stderr.splitlines() == expected
    launched = repo.wave("launch", "--lane", "main", "--start-wave", "2", "--no-dashboard")
    assert launched.returncode == 2, launched.stderr
    assert f"base: 'nope' is not a branch, tag or commit in {repo.root}" in launched.stderr
    assert not (repo.state("main") / "run-state.json").exists()  # never recorded running


def test_launch_stops_on_a_program_the_agents_worktree_will_not_have(repo: Repo) -> None:
    repo.lane("main", LANE + "isolation: worktree\n", {1: "agents:\n" + agent("A", "./agent.sh")})
    base = git_init(repo.root)
    (repo.root / "agent.sh").write_text("#!/bin/sh\nexit 0\n")  # written after the commit
    (repo.root / "agent.sh").chmod(0o755)
    line = (
        "agent w1/A: executor local needs `./agent.sh`, which is not committed at base "
        f"{base[:12]} (isolation: worktree starts from it): commit it, or list it in setup.copy"
    )
    dry = repo.wave("launch", "--lane", "main", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "warning: executables missing (a live launch would stop):\n  " + line in (
        dry.stdout + dry.stderr
    )
    live = repo.wave("launch", "--lane", "main", "--no-dashboard")
    assert live.returncode == 1, live.stderr
    assert "cannot launch, executables missing:\n  " + line in live.stderr
    assert not (repo.state("main") / "run-state.json").exists()
    assert not (repo.state("main") / "worktrees").exists()  # nothing prepared, nothing started
