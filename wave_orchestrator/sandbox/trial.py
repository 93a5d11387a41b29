"""A trial sandbox, started end to end as `wave doctor` checks one: an agent's plan built for a
throwaway repository and state dir, run by bwrap with a timeout. It must write its own
workspace, and nothing of what is outside it: a folder beside the repository, HOME's startup
file, wave's state. The probe only says bwrap starts; the trial says an agent's sandbox keeps
its promise here.

Every verdict is judged from outside, by what appeared or changed, not by what the sandboxed
command said. The throwaway folder is made outside ``/tmp`` where it can be (the sandbox's
``/tmp`` is private: a write beside a workspace there would land in it, unseen)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..definitions.model import SandboxSettings
from ..errors import WaveError
from ..state.layout import StateLayout
from .bwrap import build_binds, to_argv
from .plan import plan_sandbox, prepare
from .probe import Probe, check, probe, read_sysctl

TRIAL_SECONDS = 10.0
TRIAL_LANE = "doctor"
TRIAL_AGENT = "trial"
# Arguments: the workspace, then the paths it must not reach. Each refused write is expected;
# only a workspace it cannot write ends the script early.
TRIAL_SCRIPT = """\
true || exit 2
echo trial > "$1/written" || exit 3
shift
for target; do (echo reached >> "$target") 2>/dev/null; done
exit 0
"""
NOT_WRITTEN = 3
# Where the throwaway folder goes, the first that is a writable folder.
BASES = ("/var/tmp",)
REPORT = "report it as a bug of wave, with `wave debug-info`'s output"
# Runs a sandbox's argv with an environment: its exit status and what it said on stderr.
Runner = Callable[[list[str], dict[str, str]], tuple[int, str]]


class Trial(NamedTuple):
    """What the trial found: ``ok``, else the problem and its fix, each one line."""

    ok: bool
    bwrap: str | None = None
    problem: str = ""
    fix: str = ""

    @property
    def message(self) -> str:
        if self.ok:
            return (
                f"works here ({self.bwrap}): a trial sandbox wrote its workspace, and its "
                "writes beside it, to HOME and to wave's state were refused"
            )
        return f"not available: {self.problem}; fix: {self.fix}"


def try_sandbox(
    found: Probe | None = None,
    run: Runner | None = None,
    seconds: float = TRIAL_SECONDS,
) -> Trial:
    """Probe bubblewrap (asked afresh: a person may have just fixed it), then start a trial
    sandbox. ``found``, ``run``: a probe's answer and how the sandbox runs, given by tests."""
    found = probe(fresh=True) if found is None else found
    if not found.ok or found.bwrap is None:
        return Trial(False, found.bwrap, found.problem, found.fix)
    folder = Path(tempfile.mkdtemp(prefix="wave-doctor-sandbox-", dir=_base())).resolve()
    try:
        return _trial(found.bwrap, folder, run or _runner(seconds))
    except OSError as exc:
        why = f"the trial sandbox could not be set up in {folder} ({exc.strerror or exc})"
        return Trial(False, found.bwrap, why, "free space there, or set TMPDIR to a writable one")
    except WaveError as exc:
        return Trial(False, found.bwrap, f"the trial sandbox could not be planned: {exc}", REPORT)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _base() -> str:
    """Your TMPDIR when it is outside /tmp, else /var/tmp, else wherever temporary files go."""
    given = os.environ.get("TMPDIR", "")
    outside = [given] if given.startswith("/") and not _under_tmp(given) else []
    for base in (*outside, *BASES, tempfile.gettempdir()):
        if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            return base
    return tempfile.gettempdir()


def _under_tmp(path: str) -> bool:
    real = Path(path).resolve()
    return real == Path("/tmp") or real.is_relative_to("/tmp")


def _trial(bwrap: str, folder: Path, run: Runner) -> Trial:
    repo, home = folder / "repo", folder / "home"
    layout = StateLayout(repo / ".wave" / TRIAL_LANE, TRIAL_LANE, repo=repo)
    layout.agent(1, TRIAL_AGENT).dir.mkdir(parents=True)
    home.mkdir()
    guarded = {
        "a folder beside the repository": folder / "beside",
        "HOME's .bashrc": home / ".bashrc",
        "wave's run state": layout.run_state,
    }
    (home / ".bashrc").write_text("# yours\n")
    layout.run_state.write_text("{}\n")
    before = {what: _content(path) for what, path in guarded.items()}
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
    plan = plan_sandbox(
        SandboxSettings(mode="bubblewrap"),
        layout=layout,
        repo=repo,
        wave=1,
        agent_id=TRIAL_AGENT,
        executor="local",
        env=env,
    )
    prepare(plan)
    command = ["sh", "-c", TRIAL_SCRIPT, "sh", str(repo), *map(str, guarded.values())]
    code, said = run(to_argv(build_binds(plan), command, bwrap=bwrap), env)
    if code == NOT_WRITTEN:
        why = f"a trial sandbox could not write its own workspace ({' '.join(said.split())[:200]})"
        return Trial(False, bwrap, why, REPORT)
    if code != 0:
        verdict = check(bwrap, lambda _: (code, said), read_sysctl, os.geteuid())
        return Trial(False, bwrap, f"a trial sandbox failed: {verdict.problem}", verdict.fix)
    if _content(repo / "written") != "trial\n":
        why = "a trial sandbox's write to its workspace did not reach the workspace"
        return Trial(False, bwrap, why, REPORT)
    reached = [what for what, path in guarded.items() if _content(path) != before[what]]
    if reached:
        why = f"a trial sandbox wrote {', '.join(reached)}: it does not protect your files here"
        return Trial(False, bwrap, why, REPORT + "; run agents unsandboxed meanwhile")
    return Trial(True, bwrap)


def _content(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _runner(seconds: float) -> Runner:
    def run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        """Its exit status and what it said on stderr; no input, no terminal, a timeout."""
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                timeout=seconds,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return -1, f"no answer in {seconds:g} s"
        except OSError as exc:
            return -1, str(exc)
        return done.returncode, done.stderr.decode("utf-8", "replace").strip()

    return run
