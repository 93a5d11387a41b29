"""`wave coord show` after a new run of a wave: the earlier run's log was set aside as
``wave-<n>.<stamp>.jsonl``; the command says where its items are and shows them with --run."""

from __future__ import annotations

from helpers import Repo, local_lane

WAVE = 'agents:\n  - {id: A, prompt: p, executor: {local: {command: "true"}}}\n'
STAMP = "20261205T101010Z"


def earlier_run_with_a_question(repo: Repo) -> str:
    """A question posted and answered in a run that a rerun then set aside (as the
    launcher's archive names it); returns the item's id."""
    repo.lane("main", local_lane(), {1: WAVE})
    args = ["coord", "post", "--lane", "main", "--wave", "1", "--kind", "request"]
    rid = repo.wave(*args, "--summary", "which port?", "--agent", "A").stdout.strip()
    assert rid.startswith("c-")
    done = repo.wave("coord", "resolve", rid, "--lane", "main", "--wave", "1", "--note", "8080")
    assert done.returncode == 0, done.stderr
    folder = repo.state("main") / "coordination"
    (folder / "wave-1.jsonl").rename(folder / f"wave-1.{STAMP}.jsonl")
    return rid


def test_show_names_the_earlier_runs_items_and_shows_them(repo: Repo) -> None:
    rid = earlier_run_with_a_question(repo)
    now = repo.wave("coord", "show", "--lane", "main", "--wave", "1")
    assert now.returncode == 0, now.stderr
    assert "wave 1: no coordination items" in now.stdout
    assert f"earlier run's items: wave coord show --lane main --wave 1 --run {STAMP}" in now.stdout
    then = repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--run", STAMP)
    assert then.returncode == 0, then.stderr
    assert rid in then.stdout and "resolved" in then.stdout and "which port?" in then.stdout
    assert "earlier run's items" not in then.stdout


def test_a_run_that_is_not_there_or_not_a_stamp_is_refused(repo: Repo) -> None:
    earlier_run_with_a_question(repo)
    gone = repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--run", "20200101T000000Z")
    assert gone.returncode == 2 and STAMP in gone.stderr  # the runs there are named
    bad = repo.wave("coord", "show", "--lane", "main", "--wave", "1", "--run", "../../x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_wave_never_rerun_names_no_earlier_run(repo: Repo) -> None:
    repo.lane("main", local_lane(), {1: WAVE})
    now = repo.wave("coord", "show", "--lane", "main", "--wave", "1")
    assert now.returncode == 0, now.stderr
    assert "no coordination items" in now.stdout and "earlier run" not in now.stdout
