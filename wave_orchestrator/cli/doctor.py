"""`wave doctor`: one health check before a real run. Every lane validates, the
executors its agents use are installed (with their versions) and logged in (a key variable
or a login file: never printed), each account they use is logged in as its CLI says and has
no limit on record (a parked reset, a backoff), tmux and git answer, the Slurm cluster
answers when a lane places there, bubblewrap starts a trial sandbox that keeps its promise
(blocking only when a lane's agents need one), and every state dir is writable. Warned of,
never blocking: a state dir in the repository that git does not ignore, a lane wanting
desktop notifications with no notify-send, a skill bundle a lane lists that no agent gets.
Exit 1 with each blocking problem.

Its lines quote lane settings (a problem's value) and the environment (a login folder's
path): every line is printed with the credentials in it hidden by value, JSON too."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LaneInvalid, WaveError
from ._common import add_json, add_repo, emit_json
from ._help import add_command

if TYPE_CHECKING:
    from ..sandbox.probe import Probe
    from ..sandbox.trial import Runner

# Where each CLI keeps its login, and the variables that stand in for one (never printed).
AUTH_VARIABLES = {
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "claude": ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"),
    "opencode": ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY"),
}
LOGIN_HINT = {
    "codex": "run `codex login` (or set OPENAI_API_KEY)",
    "claude": "run `claude` and /login (or set ANTHROPIC_API_KEY)",
    "opencode": "run `opencode auth login` (or set a provider's API key variable)",
}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    blocking: bool = True  # a failure that would stop (or fail) a live launch
    fix: str = ""  # the one command or setting that fixes a failure, when wave knows it
    informational: bool = False  # a failure nothing of the lanes needs fixed: told, not warned

    def line(self) -> str:
        word = "ok" if self.ok else ("FAIL" if self.blocking else "warn")
        word = "info" if not self.ok and self.informational else word
        return f"  {word:<5} {self.name}: {self.detail}"


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "doctor",
        "check lanes, agent CLIs and their logins, tmux, git, Slurm and state dirs",
        "One health check before a real run: every lane validates; each executor a lane's "
        "agents use (fallbacks included) is on PATH, with its version, and logged in (an API "
        "key variable or its login file; values are never printed); each account they use: "
        "logged in as its CLI says (claude auth status, codex login status, opencode auth "
        "list; a few seconds each, never a request that spends) and the limits wave has on "
        "record for it (parked until a reset, a rate-limit backoff); tmux and git answer; the "
        "Slurm cluster answers when a lane places agents there; bubblewrap starts a trial "
        "sandbox that writes its workspace and is refused a write outside it (when it cannot, "
        "the line gives the fix: a blocking problem only when a lane sets sandbox: "
        "bubblewrap); every lane's state dir is writable, and (a warning) git-ignored when it "
        "is inside the repository; notify-send is on PATH when a lane sets notify.desktop "
        "(a warning); a lane's skill bundles: how many its agents get, and (a warning) one "
        "lane.yaml lists that its activation keeps from every agent; each SSH host of a lane "
        "placed there answers and has tmux, git and the lane's CLIs, with room on its "
        "disk. Prints one line per "
        "check and exits 1 when any blocking check failed.",
        [
            ("wave doctor", "every check, one line each"),
            ("wave doctor --json", "the checks as JSON, for a script or CI"),
        ],
    )
    add_repo(p)
    add_json(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..definitions.repository.lanes import find_repository

    repo = find_repository(args.repo)
    checks = diagnose(repo)
    failed = [c for c in checks if not c.ok and c.blocking]
    from ..sanitize import clean_tree, safe_text

    if args.json:
        shown = {"repository": str(repo), "ok": not failed, "checks": [c.__dict__ for c in checks]}
        emit_json(clean_tree(shown, redact=True))
    else:
        print(safe_text(f"wave doctor: {repo}"))
        for check in checks:
            print(safe_text(check.line()))
        print("no blocking problem" if not failed else f"{len(failed)} blocking problem(s)")
    return 1 if failed else 0


def diagnose(repo: Path) -> list[Check]:
    from ..definitions.loading.lane_loader import load_lane
    from ..definitions.model import LaneDef
    from ..definitions.repository.lanes import list_lanes

    checks: list[Check] = []
    lanes: list[LaneDef] = []
    for name in list_lanes(repo):
        try:
            lane = load_lane(repo, name)
        except LaneInvalid as exc:
            first = exc.problems[0] if exc.problems else None
            said = f"{len(exc.problems)} problem(s), first: {first}" if first else str(exc)
            checks.append(Check(f"lane {name}", False, f"{said} (wave validate --lane {name})"))
            continue
        except WaveError as exc:
            checks.append(Check(f"lane {name}", False, str(exc)))
            continue
        lanes.append(lane)
        checks.append(Check(f"lane {name}", True, f"valid, {len(lane.waves)} wave(s)"))
    if not checks:
        checks.append(Check("lanes", False, "no lane in lanes/ (wave init writes one)"))
    checks += [_tool("tmux", ["tmux", "-V"], True), _tool("git", ["git", "--version"], _git(lanes))]
    checks += _executors(lanes)
    from .doctor_accounts import account_checks  # imports this module: not at its top

    checks += account_checks([lane for lane in lanes if not lane.placement.remote])
    if any(lane.placement.slurm for lane in lanes):
        checks.append(_slurm())
    if any(lane.placement.remote for lane in lanes):
        from .doctor_hosts import host_checks  # imports this module: not at its top

        checks += host_checks(lanes)
    checks.append(_sandbox(lanes))
    checks += [_writable(lane.name, lane.state_dir) for lane in lanes]
    checks += _ignored(repo, lanes) + _desktop(lanes)
    checks += [c for lane in lanes if lane.skills is not None for c in _skills(lane)]
    return checks


def _version(argv: list[str]) -> str | None:
    from .debug_info import _version_of

    return _version_of(argv)


def _tool(name: str, argv: list[str], needed: bool) -> Check:
    found = _version(argv)
    if found is None:
        why = "not found on PATH" + ("" if needed else " (no lane needs it yet)")
        return Check(name, False, why, blocking=needed)
    return Check(name, True, found)


def _git(lanes: list[Any]) -> bool:
    return any(w.isolation.worktree for lane in lanes for w in lane.waves)


def _executors(lanes: list[Any]) -> list[Check]:
    """Each agent CLI some agent uses (its fallbacks too): installed, and logged in."""
    users: dict[str, set[str]] = {}
    for lane in lanes:
        if lane.placement.remote:  # its agents' CLIs are on its hosts: their lines say
            continue
        for wave in lane.waves:
            for agent in wave.agents:
                for executor in (agent.executor.id, *agent.executor.fallbacks):
                    if executor != "local":
                        users.setdefault(executor, set()).add(lane.name)
    checks = []
    for executor in sorted(users):
        who = f"(lanes: {', '.join(sorted(users[executor]))})"
        version = _version([executor, "--version"])
        if version is None:
            said = f"not found on PATH {who}: a live launch stops before any session starts"
            checks.append(Check(executor, False, said))
            continue
        checks.append(Check(executor, True, f"{version} {who}"))
        checks.append(_login(executor))
    return checks


def _login(executor: str) -> Check:
    """Whether the CLI can authenticate: a key variable set, or its login file present."""
    name = f"{executor} login"
    for variable in AUTH_VARIABLES[executor]:
        if os.environ.get(variable):
            return Check(name, True, f"{variable} is set")
    path = _login_file(executor)
    if path.is_file():
        return Check(name, True, f"{path} exists")
    variables = ", ".join(AUTH_VARIABLES[executor])
    return Check(name, False, f"no {variables} and no {path}: {LOGIN_HINT[executor]}")


def _login_file(executor: str) -> Path:
    home = Path.home()
    if executor == "codex":
        return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "auth.json"
    if executor == "claude":
        return Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude") / ".credentials.json"
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return data / "opencode" / "auth.json"


def _slurm() -> Check:
    from ..placement.slurm_commands import controller_up

    if shutil.which("sinfo") is None:
        return Check("slurm", False, "a lane places agents on Slurm; sinfo is not on PATH")
    if not controller_up():
        return Check(
            "slurm",
            False,
            "a lane places agents on Slurm; its controller does not answer (scontrol ping)",
        )
    return Check("slurm", True, "the controller answers")


def _sandbox(lanes: list[Any], found: Probe | None = None, run: Runner | None = None) -> Check:
    """Bubblewrap, end to end: a trial sandbox. A failure blocks only when an agent asks for
    ``sandbox: bubblewrap`` (it would fail); under ``auto`` its agents run unsandboxed (a
    warning); with no lane sandboxed it is information. ``found``, ``run``: for tests."""
    from ..sandbox.trial import try_sandbox

    users: dict[str, set[str]] = {}
    for lane in lanes:
        modes = {lane.defaults.sandbox.mode}
        modes |= {a.sandbox_settings.mode for w in lane.waves for a in w.agents}
        for mode in modes:
            users.setdefault(mode, set()).add(lane.name)
    trial = try_sandbox(found, run)
    used = sorted(users.get("bubblewrap", set()) | users.get("auto", set()))
    if trial.ok:
        said = f"lanes that sandbox agents: {', '.join(used)}" if used else "no lane sets sandbox"
        return Check("bubblewrap", True, f"{trial.message} ({said})")
    if "bubblewrap" in users:
        lanes_of = ", ".join(sorted(users["bubblewrap"]))
        said = f"sandbox: bubblewrap in lanes {lanes_of}: their agents fail until it is fixed"
        return Check("bubblewrap", False, f"{trial.message} ({said})", True, trial.fix)
    if "auto" in users:
        lanes_of = ", ".join(sorted(users["auto"]))
        said = f"sandbox: auto in lanes {lanes_of}: their agents run unsandboxed"
        return Check("bubblewrap", False, f"{trial.message} ({said})", False, trial.fix)
    said = "no lane sets sandbox: nothing needs it yet"
    return Check("bubblewrap", False, f"{trial.message} ({said})", False, trial.fix, True)


def _writable(lane: str, state_dir: Path) -> Check:
    """The state dir (or, before a first run, the nearest folder that would hold it) takes a
    new file: a launch writes its lock, run state and agent folders there."""
    folder = state_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    name = f"state dir of {lane}"
    if not folder.is_dir():
        return Check(name, False, f"{state_dir} cannot be made: {folder} is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".wave-doctor-"):
            pass
    except OSError as exc:
        return Check(name, False, f"{state_dir} is not writable ({exc.strerror})")
    return Check(name, True, f"{state_dir} writable")


def _ignored(repo: Path, lanes: list[Any]) -> list[Check]:
    """The state dirs inside the repository are git-ignored: they hold logs, prompts and a
    person's answers, which `git add .` would otherwise commit. None outside a git work tree."""
    import subprocess

    inside = []
    for lane in lanes:
        try:
            inside.append(lane.state_dir.resolve().relative_to(repo.resolve()).as_posix())
        except ValueError:  # WAVE_STATE_DIR or state_dir: elsewhere; not git's business
            continue
    if not inside or shutil.which("git") is None:
        return []

    def git(*args: str) -> int:
        try:
            argv = ["git", "-C", str(repo), *args]
            return subprocess.run(argv, capture_output=True, timeout=10, check=False).returncode
        except (OSError, subprocess.SubprocessError):
            return 128

    if git("rev-parse", "--is-inside-work-tree") != 0:
        return []
    shown = ", ".join(inside)
    seen = [rel for rel in inside if git("check-ignore", "-q", "--", f"{rel}/") != 0]
    if not seen:
        return [Check("gitignore", True, f"{shown} git-ignored")]
    lines = sorted({".wave/" if rel.split("/")[0] == ".wave" else f"/{rel}/" for rel in seen})
    fix = f"add the line{'s' if len(lines) > 1 else ''} {', '.join(f'`{x}`' for x in lines)}"
    said = f"{', '.join(seen)} is inside the repository and not git-ignored: `git add .` "
    said += f"would commit the lane's logs, prompts and answers; fix: {fix} to .gitignore"
    return [Check("gitignore", False, said, blocking=False, fix=f"{fix} to .gitignore")]


def _desktop(lanes: list[Any]) -> list[Check]:
    """A lane wants desktop notifications: notify-send is there to show them."""
    from ..notify.sinks import DESKTOP_FIX

    wanting = sorted(lane.name for lane in lanes if lane.notify.desktop)
    if not wanting:
        return []
    who = f"(lanes: {', '.join(wanting)})"
    found = shutil.which("notify-send")
    if found is not None:
        return [Check("notify-send", True, f"{found} {who}")]
    said = f"notify.desktop: true {who} but notify-send is not on PATH: no desktop "
    said += f"notifications; fix: {DESKTOP_FIX}"
    return [Check("notify-send", False, said, blocking=False, fix=DESKTOP_FIX)]


def _skills(lane: Any) -> list[Check]:
    """A lane's skill bundles (their manifests were checked with the lane): how many each
    agent gets on its executor, and (a warning) a skill the lane lists that no agent gets,
    its activation matching none of them."""
    skills = lane.skills
    given: dict[str, int] = {}
    listed = {
        *skills.base,
        *(i for ids in (*skills.by_role.values(), *skills.by_executor.values()) for i in ids),
    }
    for wave in lane.waves:
        for agent in wave.agents:
            for executor in dict.fromkeys((agent.executor.id, *agent.executor.fallbacks)):
                for bundle in skills.resolve(agent.role, executor, agent.skills):
                    given[bundle.id] = given.get(bundle.id, 0) + 1
    name = f"skills {lane.name}"
    said = f"{len(skills.bundles)} bundle(s) in {skills.dir}/, {len(given)} given to agents"
    checks = [Check(name, True, said)]
    idle = sorted(listed - set(given))
    if idle:
        checks.append(
            Check(
                name,
                False,
                "listed in lane.yaml but given to no agent (their activation matches none): "
                + ", ".join(idle),
                blocking=False,
                fix="widen the skill's activation or take it out of lane.yaml's skills",
            )
        )
    return checks
