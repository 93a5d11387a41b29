"""What a Slurm command's failure means (silent controller, refused job, passing trouble), and
the partition/account/QOS check made before anything is submitted."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from wave_orchestrator.definitions.model import PlacementSettings
from wave_orchestrator.errors import PlacementRefused, SlurmError
from wave_orchestrator.placement import slurm_commands
from wave_orchestrator.placement.slurm_commands import (
    Answer,
    ControllerSilent,
    preflight,
    submit_error,
)


@pytest.mark.parametrize(
    ("said", "kind", "words"),
    [
        (
            "sbatch: error: Batch job submission failed: Invalid partition name specified",
            PlacementRefused,
            "sbatch refused the job: Invalid partition name specified",
        ),
        (
            "sbatch: error: Batch job submission failed: Invalid account or account/partition "
            "combination specified",
            PlacementRefused,
            "Invalid account or account/partition",
        ),
        (
            "sbatch: error: Batch job submission failed: Invalid qos specification",
            PlacementRefused,
            "Invalid qos specification",
        ),
        (
            "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information",
            PlacementRefused,
            "unrecognized option '--bogus'",
        ),
        (
            "sbatch: error: Batch job submission failed: Resource temporarily unavailable",
            SlurmError,
            "sbatch failed (1)",
        ),
    ],
)
def test_a_failed_submission_is_read_as_refused_or_passing(
    said: str, kind: type[SlurmError], words: str
) -> None:
    error = submit_error(Answer(1, "", said))
    assert type(error) is kind
    assert words in str(error)


def test_a_silent_controller_is_told_from_a_failed_command(monkeypatch: pytest.MonkeyPatch) -> None:
    said = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    monkeypatch.setattr(slurm_commands.shutil, "which", lambda name: "/usr/bin/" + name)

    class Done:
        returncode, stdout, stderr = 1, "", said

    monkeypatch.setattr(slurm_commands.subprocess, "run", lambda *a, **k: Done())
    with pytest.raises(ControllerSilent, match="Unable to contact slurm controller"):
        slurm_commands.run_slurm(["squeue"], check=False)  # silent even when unchecked
    Done.stderr = "squeue: error: Invalid user: nobody-here"
    with pytest.raises(SlurmError, match=r"squeue failed \(1\): squeue: error: Invalid user") as e:
        slurm_commands.run_slurm(["squeue"])
    assert not isinstance(e.value, ControllerSilent)


class Cluster:
    """sinfo and sacctmgr as a cluster with accounting answers them."""

    def __init__(self, accounting: bool = True) -> None:
        self.accounting = accounting
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], check: bool = True) -> Answer:
        self.calls.append(list(argv))
        if argv[0] == "sinfo":
            return Answer(0, "debug\ngpu\ndebug\n", "")
        if not self.accounting:
            raise SlurmError(
                "sacctmgr failed (1): You are not running a supported accounting_storage plugin"
            )
        if "qos" in argv:
            return Answer(0, "normal\nhigh\n", "")
        return Answer(0, "physics\nchem\n", "")


def test_preflight_names_what_the_cluster_does_not_have(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster()
    monkeypatch.setattr(slurm_commands, "run_slurm", cluster)
    wrong = PlacementSettings(kind="slurm", partition="gpus", account="phys", qos="urgent")
    problems, notes = preflight(wrong, "ada")
    assert problems == [
        "placement.partition 'gpus' is not a partition of this cluster (sinfo lists: debug, gpu)",
        "placement.account 'phys' is not an account of user ada on this cluster "
        "(sacctmgr lists: chem, physics)",
        "placement.qos 'urgent' is not a QOS on this cluster (sacctmgr lists: high, normal)",
    ]
    assert notes == []
    assert [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "associations",
        "user=ada",
        "format=account",
    ] in cluster.calls
    right = PlacementSettings(kind="slurm", partition="gpu", account="physics", qos="HIGH")
    assert preflight(right, "ada") == ([], [])
    assert preflight(PlacementSettings(kind="slurm"), "ada") == ([], [])


def test_preflight_without_accounting_checks_what_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm_commands, "run_slurm", Cluster(accounting=False))
    problems, notes = preflight(PlacementSettings(kind="slurm", account="x", qos="y"), "ada")
    assert problems == []
    assert [n.split(":")[0] for n in notes] == [
        "placement.account not checked",
        "placement.qos not checked",
    ]
