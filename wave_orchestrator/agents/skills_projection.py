"""An agent's skill bundles as its executor takes them, and the files written for that.

Every executor gets the catalog in its prompt (``## Skill context``); codex gets each bundle's
folder with ``--add-dir``; claude gets the skills' text as its system prompt file, and the
bundles as Claude Code skills of its own (``.claude/skills/<id>/SKILL.md`` of a folder it is
given with ``--add-dir``: the person's repository and HOME are left alone); opencode gets the
bundles' files with ``--file`` and the skills' text as ``instructions`` of a config file of its
own (``OPENCODE_CONFIG``). The bundles are copied beside the agent's prompt, so what it reads
is what was checked at launch, and nothing of the repository is opened to it for writing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..definitions.model import AgentDef, ExecutorSpec
from ..definitions.skill_model import SkillBundle, SkillsSettings
from ..state.fsutil import open_read, write_atomic
from ..state.owned_trees import clear_owned

# The files of an agent's skills folder (state/layout.py: ``AgentPaths.skills``).
RESOLVED, TEXT, BUNDLES, NATIVE, OPENCODE_CONFIG = (
    "resolved.json",
    "skills.md",
    "bundles",
    "native",
    "opencode.json",
)
MAX_FILE_BYTES = 256 * 1024  # as the lane check allows
MAX_TEXT_CHARS = 400_000  # the system prompt file and opencode's instructions
MAX_ATTACHED = 40  # opencode --file arguments
CLAUDE_NAME = re.compile(r"[^a-z0-9-]")


class SkillProjection(NamedTuple):
    """One attempt's skills on one executor, and where their files go."""

    executor: str
    role: str
    bundles: tuple[SkillBundle, ...]
    dir: Path  # the agent's skills folder
    own_opencode_config: bool = False  # the agent's env sets OPENCODE_CONFIG: left to it

    @property
    def ids(self) -> list[str]:
        return [b.id for b in self.bundles]

    def bundle_dir(self, bundle: SkillBundle) -> Path:
        return self.dir / BUNDLES / bundle.id

    @property
    def text_file(self) -> Path:
        return self.dir / TEXT

    @property
    def native_dir(self) -> Path:
        return self.dir / NATIVE

    @property
    def opencode_config(self) -> Path:
        return self.dir / OPENCODE_CONFIG

    def record(self) -> dict[str, Any]:
        """What launch records, summaries and the dry run's preview say of them."""
        digest = hashlib.sha256("\n".join(f"{b.id} {b.digest}" for b in self.bundles).encode())
        return {
            "ids": self.ids,
            "role": self.role,
            "executor": self.executor,
            "digest": digest.hexdigest(),
            "dir": str(self.dir),
        }

    def catalog(self) -> str:
        """The prompt's ``## Skill context``: one line per skill and where its files are."""
        lines = [
            "## Skill context",
            "Skills given to you for this run. Read a skill's SKILL.md (and the adapter for "
            f"{self.executor}, when there is one) before work it covers:",
        ]
        for b in self.bundles:
            where = self.bundle_dir(b)
            lines.append(f"- {b.id}: {b.title}. {b.description}")
            lines.append(f"  files: {where}/ ({', '.join(self._files(b))})")
        return "\n".join(lines) + "\n"

    def _files(self, b: SkillBundle) -> list[str]:
        """The bundle's files this executor is given: its adapter only, of the adapters."""
        own = f"adapters/{self.executor}.md"
        return [f for f in b.files if not f.startswith("adapters/") or f == own]

    def argv(self) -> list[str]:
        """What its CLI's command line gets (see the module's docstring)."""
        if self.executor == "codex":
            return [a for b in self.bundles for a in ("--add-dir", str(self.bundle_dir(b)))]
        if self.executor == "claude":
            return [
                "--append-system-prompt-file",
                str(self.text_file),
                "--add-dir",
                str(self.native_dir),
            ]
        if self.executor == "opencode":
            files = [self.bundle_dir(b) / f for b in self.bundles for f in self._files(b)]
            return [a for f in files[:MAX_ATTACHED] for a in ("-f", str(f))]
        return []

    def env(self) -> dict[str, str]:
        out = {"WAVE_SKILLS": ",".join(self.ids), "WAVE_SKILLS_DIR": str(self.dir / BUNDLES)}
        if self.executor == "opencode" and not self.own_opencode_config:
            out["OPENCODE_CONFIG"] = str(self.opencode_config)
        return out

    def write(self, write: Callable[..., object] = write_atomic, system: str = "") -> None:
        """The files: the bundles' copies, the skills' text (after ``system``, a system
        prompt file the lane gives claude itself), the resolved list, the executor's own."""
        texts = [system.rstrip("\n") + "\n"] if system else []
        for b in self.bundles:
            files = {rel: _read(b, rel) for rel in self._files(b)}
            for rel, data in files.items():
                write(self.bundle_dir(b) / rel, data)
            texts.append(self._expanded(b, files))
            if self.executor == "claude":
                self._write_native(b, files, write)
        text = "\n".join(texts)
        if len(text) > MAX_TEXT_CHARS:
            text = text[:MAX_TEXT_CHARS] + "\n[skills text cut at its size limit]\n"
        write(self.text_file, text)
        if self.executor == "opencode" and not self.own_opencode_config:
            config = {
                "$schema": "https://opencode.ai/config.json",
                "instructions": [str(self.text_file)],
            }
            write(self.opencode_config, json.dumps(config, indent=2) + "\n")
        write(
            self.dir / RESOLVED,
            json.dumps(
                {
                    **self.record(),
                    "files": {
                        b.id: [str(self.bundle_dir(b) / f) for f in self._files(b)]
                        for b in self.bundles
                    },
                },
                indent=2,
            )
            + "\n",
        )

    def materialize(
        self, spec: ExecutorSpec, cwd: Path, write: Callable[..., object], fresh: bool
    ) -> None:
        """Write its files (``fresh``: the folder emptied first, so that what an earlier
        attempt on another executor was given is gone). A system prompt file the lane gives
        claude itself goes first in the skills' text, which takes its place on the argv."""
        if fresh:
            clear_owned(self.dir.parent, self.dir.name)
        system = ""
        own = spec.settings_for("claude").get("append_system_prompt_file")
        if self.executor == "claude" and own:
            system = _read_path((cwd / str(own)).resolve())
        self.write(write, system)

    def _expanded(self, b: SkillBundle, files: Mapping[str, str]) -> str:
        parts = [f"# Skill {b.id}: {b.title}", b.description, "", files["SKILL.md"].rstrip("\n")]
        adapter = files.get(f"adapters/{self.executor}.md")
        if adapter:
            parts += ["", f"## For {self.executor}", adapter.rstrip("\n")]
        refs = [f for f in files if f.startswith("references/")]
        if refs:
            parts += ["", "References (read them when you need them):"]
            parts += [f"- {self.bundle_dir(b) / f}" for f in refs]
        return "\n".join(parts) + "\n"

    def _write_native(
        self, b: SkillBundle, files: Mapping[str, str], write: Callable[..., object]
    ) -> None:
        """Claude Code's own skill folder: SKILL.md with the name and description it needs."""
        name = CLAUDE_NAME.sub("-", b.id)[:64]
        folder = self.native_dir / ".claude" / "skills" / name
        body = files["SKILL.md"]
        adapter = files.get("adapters/claude.md")
        if adapter:
            body = body.rstrip("\n") + "\n\n" + adapter
        if not body.startswith("---\n"):
            front = f"---\nname: {name}\ndescription: {json.dumps(b.description or b.title)}\n---\n"
            body = front + "\n" + body
        write(folder / "SKILL.md", body)
        for rel, data in files.items():
            if rel.startswith("references/"):
                write(folder / rel, data)


def _read(bundle: SkillBundle, rel: str) -> str:
    """A bundle file's text (bytes that are not UTF-8 kept as they are), read again at launch
    with the same bounds as the check: never through a link out of the skills folder."""
    target = (bundle.folder / rel).resolve()
    if not target.is_relative_to(bundle.folder.parent):
        raise PermissionError(f"{bundle.id}/{rel} leads out of the skills folder")
    return _read_path(target)


def _read_path(target: Path) -> str:
    with open_read(target) as fh:  # a regular file: never a FIFO waited on
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{target} is larger than {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", errors="surrogateescape")


def project_skills(
    settings: SkillsSettings | None,
    agent: AgentDef,
    executor: str,
    folder: Path,
    env: Mapping[str, str],
) -> SkillProjection | None:
    """The agent's skills on ``executor`` (resolved again for each executor it runs on: a
    fallback's own skills replace the first one's), or None when it has none."""
    if settings is None:
        return None
    bundles = settings.resolve(agent.role, executor, agent.skills)
    if not bundles:
        return None
    return SkillProjection(executor, agent.role, bundles, folder, "OPENCODE_CONFIG" in env)
