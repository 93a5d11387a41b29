"""Finding the repository and its lanes: the nearest folder above with a `lanes/`."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import NamedTuple

from ...errors import LaneProblem, UsageError
from ...names import LANE_NAME_RE
from ..source.yaml_source import YamlSyntaxError, load_located


def find_repository(explicit: str | None = None, start: Path | None = None) -> Path:
    """``--repo``, then ``WAVE_REPO``, then the nearest ancestor holding a ``lanes/`` folder."""
    chosen = explicit or os.environ.get("WAVE_REPO")
    if chosen:
        repo = Path(chosen).expanduser().resolve()
        if not repo.is_dir():
            raise UsageError(f"repository {chosen!r} is not a folder")
        return repo
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "lanes").is_dir():
            return folder
    raise UsageError(f"no lanes/ folder in {here} or above: run `wave init` or pass --repo PATH")


def lane_folders(repo: Path) -> tuple[list[str], list[str]]:
    """(lanes, skipped): folders of ``lanes/`` holding a lane.yaml, split by whether their
    name is a valid lane name. A skipped folder is reported, never used: its name would
    become a state path and a tmux socket name."""
    lanes_dir = repo / "lanes"
    try:
        entries = sorted(lanes_dir.iterdir()) if lanes_dir.is_dir() else []
    except OSError:
        return [], []
    lanes: list[str] = []
    skipped: list[str] = []
    for folder in entries:
        lane_yaml = folder / "lane.yaml"
        if not (lane_yaml.exists() or lane_yaml.is_symlink()):
            continue
        (lanes if LANE_NAME_RE.fullmatch(folder.name) else skipped).append(folder.name)
    return lanes, skipped


def skipped_lane_warnings(repo: Path) -> list[str]:
    """One line per ``lanes/`` folder skipped for its name, for commands to print."""
    return [
        f"skipped the folder {'lanes/' + name!r}: not a valid lane name "
        f"(expected {LANE_NAME_RE.pattern})"
        for name in lane_folders(repo)[1]
    ]


def list_lanes(repo: Path) -> list[str]:
    """The repository's lanes, by name; folders with invalid names are left out."""
    return lane_folders(repo)[0]


def default_lane(repo: Path) -> str | None:
    """``default_lane:`` in the repository-level ``lanes/wave.yaml``, if it names one."""
    path = repo / "lanes" / "wave.yaml"
    if not path.is_file():
        return None
    try:  # the bounded loader lane files are read with
        raw = load_located(path).data
    except YamlSyntaxError as exc:
        raise UsageError(f"lanes/wave.yaml:{exc.line}:{exc.column}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"lanes/wave.yaml: cannot read file: {exc.strerror or exc}") from None
    value = raw.get("default_lane") if isinstance(raw, dict) else None
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{path}: default_lane must be a lane name")
    return value


def resolve_lane_name(repo: Path, lane: str | None) -> str:
    """The lane to use: the one given, else $WAVE_LANE, else ``default_lane:`` in
    ``lanes/wave.yaml``, else the only lane of the repository."""
    lanes = list_lanes(repo)
    source = "--lane"
    if lane is None and os.environ.get("WAVE_LANE"):
        lane, source = os.environ["WAVE_LANE"], "$WAVE_LANE"
    if lane is None:
        lane, source = default_lane(repo), "default_lane in lanes/wave.yaml"
    if lane is None:
        if len(lanes) == 1:
            return lanes[0]
        listed = ", ".join(lanes) or "none"
        raise UsageError(
            f"--lane is required when the repository has {len(lanes)} lanes (lanes: {listed}); "
            "or set $WAVE_LANE, or default_lane: in lanes/wave.yaml"
            if lanes
            else f"no lane in {repo / 'lanes'}: run `wave init` or pass --lane"
        )
    if not LANE_NAME_RE.fullmatch(lane):
        raise UsageError(
            f"invalid lane name {lane!r} from {source} (expected to match {LANE_NAME_RE.pattern})"
        )
    if lane not in lanes:
        listed = ", ".join(lanes) or "none"
        raise UsageError(f"no lane {lane!r} ({source}) in {repo / 'lanes'} (lanes: {listed})")
    return lane


class LaneHeader(NamedTuple):
    """What read-only commands and `wave stop` need from lane.yaml, and why it could not be
    read (``problem``): they go on with the defaults instead of failing on a broken file.
    (A NamedTuple: those commands then load no `dataclasses`.)"""

    description: str = ""
    state_dir: str | None = None
    problem: LaneProblem | None = None


def read_lane_header(repo: Path, lane: str) -> LaneHeader:
    """lane.yaml's ``description`` and ``state_dir``, without validating the lane."""
    path = repo / "lanes" / lane / "lane.yaml"
    shown = f"lanes/{lane}/lane.yaml"
    try:
        data = load_located(path).data
    except YamlSyntaxError as exc:
        return LaneHeader(problem=LaneProblem(shown, exc.line, exc.column, "", str(exc)))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return LaneHeader(problem=LaneProblem(shown, 1, 1, "", f"cannot read file: {reason}"))
    if not isinstance(data, dict):
        return LaneHeader()
    description = data.get("description")
    state_dir = data.get("state_dir")
    if isinstance(state_dir, str) and (why := state_dir_problem(state_dir)):
        problem = LaneProblem(shown, 1, 1, "state_dir", why)
        return LaneHeader(description=str(description or ""), problem=problem)
    return LaneHeader(
        description=description if isinstance(description, str) else "",
        state_dir=state_dir if isinstance(state_dir, str) else None,
    )


def state_dir_problem(text: str) -> str | None:
    """Why ``state_dir: text`` cannot be a folder (a NUL makes every file call raise, and
    `~nobody/x` names a home that does not exist), or None."""
    if not text or any(unicodedata.category(c) in ("Cc", "Cf") for c in text):
        return "empty or has control characters"
    try:
        Path(text).expanduser()
    except RuntimeError as exc:
        return f"{text!r}: {exc}"
    return None
