"""``context7`` of lane.yaml, a wave or an agent: which library docs an agent is given, fetched
from Context7 before it starts, as a fenced block of its prompt marked external.

The bundles are named in a bundle index, a JSON file of the repository (by default
``docs/context7/bundles.json``, where the JavaScript launcher keeps it, in its shape:
``{version, defaultBundle, laneDefaults {lane: bundle}, bundles {id: {description,
libraries [{libraryId | libraryName, queryHint}]}}}``; it must define ``none``). An agent's
bundle is its own, else its wave's, else the lane's (lane.yaml, then the index's
``laneDefaults``), else the index's default; its query is its own, else its wave's, else the
first lines of its prompt. A lane that names no ``context7`` and has no index fetches nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ...errors import LaneProblem
from ..model import Context7Selection, Context7Settings
from ..repository.paths import inside_repository, normalise_repo_path
from ..source.schema import Checker
from ..source.yaml_source import FieldPath, Located, YamlSyntaxError, load_located

BUNDLE_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
LIBRARY_ID_RE = re.compile(r"/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){1,4}")
LANE_KEYS = ("index", "bundle", "url")
PICK_KEYS = ("bundle", "query")
INDEX_KEYS = ("version", "defaultBundle", "laneDefaults", "bundles")
BUNDLE_KEYS = ("description", "libraries")
LIBRARY_KEYS = ("libraryId", "libraryName", "queryHint")
MAX_QUERY = 260  # a derived query, as the JavaScript launcher cuts it
MAX_TEXT = 500  # a query or hint written in a file
MAX_LIBRARIES = 12
URL_RE = re.compile(r"https?://[A-Za-z0-9.:\[\]_-]+(?:/[A-Za-z0-9._~/-]*)?")
HOSTILE = ("Cc", "Cf", "Zl", "Zp")
# A prompt line that lists owned paths says nothing of the libraries the work needs.
OWNERSHIP_RE = re.compile(r"(?i)^(?:[-*]\s*)?(?:file\s+)?(?:owns?|ownership|owned paths?)\b")


class BundleIndex(NamedTuple):
    """The bundle index, checked: each bundle's libraries as (id, name, query hint)."""

    default_bundle: str
    lane_defaults: Mapping[str, str]
    bundles: Mapping[str, tuple[tuple[str, str, str], ...]]


class Pick(NamedTuple):
    """A wave's or an agent's ``context7``: a bundle and a query, either left to the level
    above (None)."""

    bundle: str | None = None
    query: str | None = None


class LaneContext7(NamedTuple):
    """What every agent of the lane is resolved against."""

    settings: Context7Settings
    catalog: BundleIndex
    lane_bundle: str | None  # lane.yaml's own, over the index's laneDefaults


def check_lane_context7(
    ck: Checker,
    value: Any,
    repo: Path,
    display: Callable[[Path], str],
    problems: list[LaneProblem],
) -> LaneContext7 | None:
    """lane.yaml's ``context7`` (a mapping, or a bundle id), with the index it names read and
    checked; None when the lane has neither (no docs are fetched)."""
    path: FieldPath = ("context7",)
    raw: dict[str, Any] = {}
    if isinstance(value, str):
        raw = {"bundle": value}
    elif value is not None:
        raw = ck.mapping(value, path, LANE_KEYS) or {}
    settings = Context7Settings()
    if "index" in raw:
        text = ck.string(raw["index"], (*path, "index"), what="a path in the repository")
        norm = normalise_repo_path(text) if text else None
        if text is not None and norm is None:
            ck.error((*path, "index"), f"path {text!r} leaves the repository", "a relative path")
        settings = settings._replace(index_file=norm or settings.index_file)
    if "url" in raw:
        url = ck.string(raw["url"], (*path, "url"), what="an http(s) URL")
        if url is not None and not URL_RE.fullmatch(url):
            ck.error((*path, "url"), f"invalid URL {url!r}", "http(s)://host[:port][/path]")
        elif url is not None:
            settings = settings._replace(url=url.rstrip("/"))
    bundle = None
    if "bundle" in raw:
        bundle = ck.string(raw["bundle"], (*path, "bundle"), pattern=BUNDLE_ID_RE, noun="bundle")
    index_file = repo / settings.index_file
    if value is None and not index_file.is_file():
        return None  # the lane never asked for docs
    if not index_file.exists():
        where = (*path, "index") if "index" in raw else path
        ck.error(where, f"no bundle index at {settings.index_file}", "a JSON bundle index")
        return None
    index = read_index(repo, settings.index_file, display, problems)
    if index is None:
        return None
    if bundle is not None and bundle not in index.bundles:
        ck.error((*path, "bundle"), f"unknown bundle {bundle!r}", _known(index))
    return LaneContext7(settings, index, bundle)


def read_index(
    repo: Path, rel: str, display: Callable[[Path], str], problems: list[LaneProblem]
) -> BundleIndex | None:
    """The bundle index at ``rel``, every problem of it located in it (None: unusable)."""
    target = inside_repository(repo, rel)
    shown = display(repo / rel)
    if target is None:
        problems.append(LaneProblem(shown, 1, 1, "", "leads out of the repository"))
        return None
    if not target.exists():
        return None
    try:
        doc = load_located(target)
    except YamlSyntaxError as exc:
        problems.append(LaneProblem(shown, exc.line, exc.column, "", str(exc)))
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(LaneProblem(shown, 1, 1, "", f"cannot read file: {exc}"))
        return None
    ck = Checker(shown, doc if doc.data is not None else Located({}), problems)
    before = len(problems)
    raw = ck.mapping(doc.data, (), INDEX_KEYS) or {}
    if "version" in raw:
        ck.number(raw["version"], ("version",), integer=True, limits=(1, 1000))
    bundles: dict[str, tuple[tuple[str, str, str], ...]] = {}
    table = raw.get("bundles")
    if not isinstance(table, dict):
        ck.wrong_type(("bundles",), table, "a mapping of bundle ids to bundles")
        table = {}
    for bid, body in table.items():
        where: FieldPath = ("bundles", bid)
        if not isinstance(bid, str) or not BUNDLE_ID_RE.fullmatch(bid):
            ck.error(
                where, f"invalid bundle id {bid!r}", f"to match {BUNDLE_ID_RE.pattern}", key=True
            )
            continue
        bundles[bid] = _libraries(ck, body, where)
    if "none" not in bundles and isinstance(raw.get("bundles"), dict):
        ck.error(("bundles",), "the index does not define bundle 'none'", "a bundle none")
    elif bundles.get("none"):
        ck.error(("bundles", "none", "libraries"), "bundle 'none' names libraries", "none")
    default = _bundle_name(ck, raw.get("defaultBundle", "none"), ("defaultBundle",), bundles)
    lanes: dict[str, str] = {}
    table = raw.get("laneDefaults")
    if table is not None and not isinstance(table, dict):
        ck.wrong_type(("laneDefaults",), table, "a mapping of lane names to bundle ids")
    for lane, bid in (table or {}).items():
        if (got := _bundle_name(ck, bid, ("laneDefaults", lane), bundles)) is not None:
            lanes[str(lane)] = got
    if len(problems) > before:
        return None
    return BundleIndex(default or "none", lanes, bundles)


def _libraries(ck: Checker, body: Any, where: FieldPath) -> tuple[tuple[str, str, str], ...]:
    raw = ck.mapping(body, where, BUNDLE_KEYS) or {}
    if "description" in raw:
        _text(ck, raw["description"], (*where, "description"))
    items = raw.get("libraries", [])
    if not isinstance(items, list):
        ck.wrong_type((*where, "libraries"), items, "a list of {libraryId | libraryName}")
        return ()
    if len(items) > MAX_LIBRARIES:
        ck.error((*where, "libraries"), f"{len(items)} libraries", f"at most {MAX_LIBRARIES}")
    out = []
    for i, item in enumerate(items):
        p: FieldPath = (*where, "libraries", i)
        lib = ck.mapping(item, p, LIBRARY_KEYS)
        if lib is None:
            continue
        lid = lib.get("libraryId")
        if lid is not None and (
            ck.string(lid, (*p, "libraryId"), pattern=LIBRARY_ID_RE, noun="library id") is None
        ):
            continue
        name = _text(ck, lib["libraryName"], (*p, "libraryName")) if "libraryName" in lib else ""
        hint = _text(ck, lib["queryHint"], (*p, "queryHint")) if "queryHint" in lib else ""
        if not lid and not name:
            ck.error(p, "a library needs libraryId or libraryName", "one of them")
            continue
        out.append((lid or "", name or "", hint or ""))
    return tuple(out)


def _bundle_name(
    ck: Checker, value: Any, where: FieldPath, bundles: Mapping[str, object]
) -> str | None:
    got = ck.string(value, where, pattern=BUNDLE_ID_RE, noun="bundle")
    if got is not None and bundles and got not in bundles:
        ck.error(where, f"unknown bundle {got!r}", "one of: " + ", ".join(sorted(bundles)))
        return None
    return got


def _text(ck: Checker, value: Any, where: FieldPath) -> str | None:
    """One line of text a person wrote: no control characters, at most MAX_TEXT long."""
    got = ck.string(value, where)
    if got is None:
        return None
    if any(unicodedata.category(c) in HOSTILE for c in got) or len(got) > MAX_TEXT:
        ck.error(where, "control characters, or too long", f"one line of <= {MAX_TEXT} chars")
        return None
    return got


def check_pick(ck: Checker, value: Any, lane: LaneContext7 | None, where: FieldPath) -> Pick:
    """A wave's or an agent's ``context7`` (``where``: ``()`` or ``("agents", i)``): a bundle
    id, or ``{bundle, query}``."""
    path: FieldPath = (*where, "context7")
    if value is None:
        return Pick()
    raw = {"bundle": value} if isinstance(value, str) else ck.mapping(value, path, PICK_KEYS)
    if raw is None:
        return Pick()
    if lane is None:
        ck.error(path, "the lane has no Context7 bundle index", "docs/context7/bundles.json")
        return Pick()
    bundle, query = None, None
    if "bundle" in raw:
        at = path if isinstance(value, str) else (*path, "bundle")
        bundle = _bundle_name(ck, raw["bundle"], at, lane.catalog.bundles)
    if "query" in raw:
        query = _text(ck, raw["query"], (*path, "query"))
    return Pick(bundle, query)


def resolve_selection(
    lane: LaneContext7 | None, name: str, wave: Pick, agent: Pick, prompt: str
) -> Context7Selection | None:
    """The agent's docs: agent → wave → lane → index default; None when that bundle names
    no library (``none``), so that its reuse fingerprint is that of a lane without docs."""
    if lane is None:
        return None
    index = lane.catalog
    bundle = (
        agent.bundle
        or wave.bundle
        or lane.lane_bundle
        or index.lane_defaults.get(name)
        or index.default_bundle
    )
    libraries = index.bundles.get(bundle, ())
    if not libraries:
        return None
    query = agent.query or wave.query or derive_query(prompt)
    return Context7Selection(bundle, query, libraries)


def derive_query(prompt: str) -> str:
    """The query a prompt implies: its first six lines that do not list owned paths, joined,
    at most MAX_QUERY characters."""
    kept = []
    for line in prompt.splitlines():
        text = "".join(c for c in line if unicodedata.category(c) not in HOSTILE)
        text = text.strip().lstrip("#").strip()
        if text and not OWNERSHIP_RE.match(text):
            kept.append(text)
        if len(kept) == 6:
            break
    return " ".join(" ".join(kept).split())[:MAX_QUERY].rstrip()


def _known(index: BundleIndex) -> str:
    return "one of: " + ", ".join(sorted(index.bundles))
