"""The skills folder of a repository: one folder per skill bundle, each with a manifest
(``skill.yaml``, or the reference launcher's ``skill.json``: JSON is YAML, and both are read
with positions), ``SKILL.md``, optional ``adapters/<executor>.md`` and ``references/**``.

The folder is the repository's, so it is read as hostile: bounded in files, bytes and depth,
never through a link that leads out of the skills folder, never a FIFO or device; nothing in
it is run. Every problem is reported with the file (and line and column in a manifest).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ...errors import LaneProblem
from ..model import EXECUTOR_IDS, ROLES
from ..skill_model import SKILL_ID_RE, SkillBundle
from ..source.schema import Checker
from ..source.yaml_source import Located, YamlSyntaxError, load_located, read_lane_file

MANIFESTS = ("skill.yaml", "skill.json")
INSTRUCTIONS = "SKILL.md"
MAX_BUNDLES = 200
MAX_FILES = 200  # per bundle
MAX_FILE_BYTES = 256 * 1024
MAX_BUNDLE_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 8
MANIFEST_KEYS = (
    "id",
    "title",
    "description",
    "version",
    "tags",
    "activation",
    # The reference launcher's keys, accepted so its manifests load; wave does not act on them.
    "termination",
    "permissions",
    "trust",
    "evalCases",
)
ACTIVATION_KEYS = ("roles", "executors", "runtimes", "when", "deployKinds")


class BundleReader:
    """Reads the bundles of one skills folder; problems go to ``problems``."""

    def __init__(self, root: Path, display: str, problems: list[LaneProblem]) -> None:
        self.root = root  # resolved, inside the repository
        self.display = display  # the folder as problems name it (repository-relative)
        self.problems = problems
        self.broken: list[str] = []  # bundles found with a problem

    def problem(self, rel: str, message: str) -> None:
        self.problems.append(LaneProblem(f"{self.display}/{rel}", 1, 1, "", message))

    def read_all(self) -> dict[str, SkillBundle]:
        try:
            names = sorted(os.listdir(self.root))
        except OSError as exc:
            self.problems.append(LaneProblem(self.display, 1, 1, "", f"cannot list: {exc}"))
            return {}
        if len(names) > MAX_BUNDLES:
            self.problem(names[MAX_BUNDLES], f"more than {MAX_BUNDLES} entries in the folder")
            names = names[:MAX_BUNDLES]
        bundles: dict[str, SkillBundle] = {}
        for name in names:
            if name.startswith("."):
                continue  # .gitkeep, editors' files
            before = len(self.problems)
            bundle = self.read(name)
            if bundle is not None:
                bundles[bundle.id] = bundle
            elif len(self.problems) > before and SKILL_ID_RE.fullmatch(name):
                self.broken.append(name)
        return bundles

    def read(self, name: str) -> SkillBundle | None:
        folder = self.root / name
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            if stat.S_ISLNK(st.st_mode):
                self.problem(name, "a skill bundle is a folder, not a symbolic link")
            return None  # a README beside the bundles is no bundle
        if not SKILL_ID_RE.fullmatch(name):
            self.problem(
                name, f"invalid skill id {name!r} (expected to match {SKILL_ID_RE.pattern})"
            )
            return None
        files = self._files(folder, name)
        if files is None:
            return None
        manifests = [m for m in MANIFESTS if m in files]
        if len(manifests) != 1:
            what = "both" if manifests else "neither"
            self.problem(name, f"{what} of {', '.join(MANIFESTS)} (expected exactly one)")
            return None
        if INSTRUCTIONS not in files:
            self.problem(name, f"no {INSTRUCTIONS} (the skill's instructions)")
            return None
        meta = self._manifest(folder, name, manifests[0])
        if meta is None:
            return None
        import hashlib  # a lane with skills only: OpenSSL's loading costs every command

        digest = hashlib.sha256()
        for rel in sorted(files):
            digest.update(rel.encode() + b"\0" + files[rel] + b"\0")
        given = tuple(sorted(f for f in files if f in (*manifests, INSTRUCTIONS)))
        adapters = tuple(sorted(f for f in files if f.startswith("adapters/")))
        references = tuple(sorted(f for f in files if f.startswith("references/")))
        return SkillBundle(
            id=name,
            folder=folder,
            manifest=manifests[0],
            files=given + adapters + references,
            adapters=tuple(a.removeprefix("adapters/").removesuffix(".md") for a in adapters),
            digest=digest.hexdigest(),
            **meta,
        )

    def _files(self, folder: Path, name: str) -> dict[str, bytes] | None:
        """What an agent may be given of the bundle: its manifest, SKILL.md, adapters and
        references, by relative path; anything else in the folder is left alone."""
        out: dict[str, bytes] = {}
        total, ok = 0, True
        for rel in self._walk(folder, name, ""):
            if not _given(rel):
                continue
            if len(out) >= MAX_FILES:
                self.problem(f"{name}/{rel}", f"more than {MAX_FILES} files in the bundle")
                return None
            try:
                data = read_lane_file(folder / rel)
            except OSError as exc:
                self.problem(f"{name}/{rel}", f"cannot read: {exc.strerror or exc}")
                ok = False
                continue
            if len(data) > MAX_FILE_BYTES:
                self.problem(f"{name}/{rel}", f"larger than {MAX_FILE_BYTES // 1024} KB")
                ok = False
                continue
            total += len(data)
            out[rel] = data
        if total > MAX_BUNDLE_BYTES:
            self.problem(name, f"the bundle's files are over {MAX_BUNDLE_BYTES // 2**20} MB")
            return None
        for rel in out:
            if rel.startswith("adapters/") and _adapter_executor(rel) not in EXECUTOR_IDS:
                self.problem(
                    f"{name}/{rel}",
                    "an adapter is adapters/<executor>.md, executor one of: "
                    + ", ".join(EXECUTOR_IDS),
                )
                ok = False
        return out if ok else None

    def _walk(self, folder: Path, name: str, rel: str, depth: int = 0) -> list[str]:
        if depth > MAX_DEPTH:
            self.problem(f"{name}/{rel}", f"nested more than {MAX_DEPTH} folders deep")
            return []
        found: list[str] = []
        try:
            entries = sorted(os.listdir(folder / rel if rel else folder))
        except OSError as exc:
            self.problem(f"{name}/{rel}", f"cannot list: {exc.strerror or exc}")
            return []
        for entry in entries[: MAX_FILES * 4]:
            sub = f"{rel}/{entry}" if rel else entry
            path = folder / sub
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    self.problem(f"{name}/{sub}", "a broken symbolic link")
                    continue
                if not target.is_relative_to(self.root):
                    self.problem(f"{name}/{sub}", "a symbolic link out of the skills folder")
                    continue
                if target.is_dir():
                    continue  # a link to a folder would let a walk go round: not followed
            if path.is_dir():
                found += self._walk(folder, name, sub, depth + 1)
            else:
                found.append(sub)
        return found

    def _manifest(self, folder: Path, name: str, manifest: str) -> dict[str, Any] | None:
        display = f"{self.display}/{name}/{manifest}"
        before = len(self.problems)
        try:
            doc = load_located(folder / manifest)
        except YamlSyntaxError as exc:
            self.problems.append(LaneProblem(display, exc.line, exc.column, "", str(exc)))
            return None
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(LaneProblem(display, 1, 1, "", f"cannot read file: {exc}"))
            return None
        ck = Checker(display, doc or Located(None), self.problems)
        raw = ck.mapping(doc.data, (), MANIFEST_KEYS)
        if raw is None:
            return None
        if raw.get("id", name) != name:
            ck.error(("id",), f"id {raw.get('id')!r} is not the folder's name", repr(name))
        if "description" not in raw:
            ck.error((), "missing description", "what the skill is for, in a sentence")
        title = ck.string(raw.get("title", name), ("title",)) or name
        description = ck.string(raw.get("description", ""), ("description",)) or ""
        version = raw.get("version", "")
        if not isinstance(version, str | int | float) or isinstance(version, bool):
            ck.wrong_type(("version",), version, "a string")
        tags = ck.string_list(raw.get("tags"), ("tags",)) or []
        act = ck.mapping(raw.get("activation"), ("activation",), ACTIVATION_KEYS) or {}
        roles = ck.string_list(
            act.get("roles"), ("activation", "roles"), choices=ROLES, noun="role"
        )
        execs = [
            ck.string_list(act.get(k), ("activation", k), choices=EXECUTOR_IDS, noun="executor")
            for k in ("executors", "runtimes")
        ]
        if "when" in act:
            ck.string(act["when"], ("activation", "when"))
        ck.string_list(act.get("deployKinds"), ("activation", "deployKinds"))
        if len(self.problems) > before:
            return None
        return {
            "title": _one_line(title),
            "description": _one_line(description),
            "version": str(version),
            "tags": tuple(tags),
            "roles": tuple(roles or ()),
            "executors": tuple(dict.fromkeys([*(execs[0] or ()), *(execs[1] or ())])),
        }


def _given(rel: str) -> bool:
    return rel in (*MANIFESTS, INSTRUCTIONS) or rel.startswith(("adapters/", "references/"))


def _adapter_executor(rel: str) -> str:
    name = rel.removeprefix("adapters/")
    return name.removesuffix(".md") if "/" not in name and name.endswith(".md") else ""


def _one_line(text: str) -> str:
    """A catalog line: control characters and line breaks out, at most 300 characters."""
    clean = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(clean.split())[:300]
