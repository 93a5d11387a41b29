"""docs/placement.md shows what wave prints (issue 23 §3): its console blocks run on the Slurm
dev cluster (scripts/slurm-dev-cluster.sh) with the lanes the page describes, each output
compared line by line once job ids, pids and paths are set aside."""

from __future__ import annotations

import re
import shlex

import pytest
from helpers import Repo, wait_for
from test_docs_console import DOCS, Shown, compare, console_commands

pytestmark = [pytest.mark.e2e, pytest.mark.slurm]

PAGE = "placement.md"
JOB = re.compile(r"(--jobid=|wave-)\d+\b")


def check(shown: Shown, printed: str) -> None:
    compare(shown, printed, extra=[(JOB, r"\1N")])


def big(repo: Repo, lane_yaml: str) -> None:
    folder = repo.root / "lanes" / "big"
    (folder / "waves").mkdir(parents=True, exist_ok=True)
    (folder / "lane.yaml").write_text(lane_yaml)
    (folder / "waves" / "wave-1.yaml").write_text(
        "agents:\n  - {id: A1, prompt: wait for release, executor: {local: {command: "
        "'while [ ! -e \"$WAVE_REPO/release\" ]; do sleep 0.2; done'}}}\n"
    )


def run(repo: Repo, shown: Shown, code: int) -> None:
    done = repo.wave(*shlex.split(shown.command)[1:])
    assert done.returncode == code, done.stderr
    check(shown, done.stderr + done.stdout)


def test_every_console_block_of_the_page_prints_what_it_shows(slurm_repo: Repo) -> None:
    validate, refused, dry, attach = console_commands(PAGE)
    text = (DOCS / PAGE).read_text()
    wrong = re.search(
        r"```yaml\n# lanes/big/lane.yaml, with an option wave sets itself\n(.*?)```", text, re.S
    )
    assert wrong is not None
    big(slurm_repo, wrong.group(1))
    run(slurm_repo, validate, 2)

    common = "closure: {required_roles: []}\ndefaults: {executor: local, timeout_minutes: 1}\n"
    big(slurm_repo, "placement: {kind: slurm, partition: gpus}\n" + common)
    run(slurm_repo, refused, 1)
    run(slurm_repo, dry, 0)

    # with a tmux session in the job (this page), and without one (cli.md's `wave attach`)
    plain = next(s for s in console_commands("cli.md") if s.command == attach.command)
    for placement, shown in (("{kind: slurm, tmux: true}", attach), ("{kind: slurm}", plain)):
        big(slurm_repo, f"placement: {placement}\n" + common)
        (slurm_repo.root / "release").unlink(missing_ok=True)
        launcher = slurm_repo.spawn("launch", "--lane", "big", "--no-dashboard")
        try:
            argv = shlex.split(shown.command)[1:]
            wait_for(
                lambda: slurm_repo.wave(*argv).returncode == 0,  # noqa: B023
                60,
                what="A1's job to run",
            )
            run(slurm_repo, shown, 0)
        finally:
            (slurm_repo.root / "release").touch()
            launcher.wait(timeout=120)
