"""Finding the repository and its lanes (SPEC 0): the nearest folder above with a `lanes/`."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from ..names import LANE_NAME_RE


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


def list_lanes(repo: Path) -> list[str]:
    lanes_dir = repo / "lanes"
    if not lanes_dir.is_dir():
        return []
    return sorted(p.name for p in lanes_dir.iterdir() if (p / "lane.yaml").is_file())


def default_lane(repo: Path) -> str | None:
    """``default_lane:`` in the repository-level ``lanes/wave.yaml``, if it names one."""
    path = repo / "lanes" / "wave.yaml"
    if not path.is_file():
        return None
    import yaml  # only repositories with a wave.yaml pay for it here

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: unreadable ({exc})") from None
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
        )
    if not LANE_NAME_RE.fullmatch(lane):
        raise UsageError(
            f"invalid lane name {lane!r} from {source} (expected to match {LANE_NAME_RE.pattern})"
        )
    if lane not in lanes:
        listed = ", ".join(lanes) or "none"
        raise UsageError(f"no lane {lane!r} ({source}) in {repo / 'lanes'} (lanes: {listed})")
    return lane
