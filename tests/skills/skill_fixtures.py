"""Skill bundles for the skills tests: written into a test's repository, never the user's."""

from __future__ import annotations

import json
from pathlib import Path


def write_skill(
    root: Path,
    skill_id: str,
    *,
    folder: str = "skills",
    description: str = "",
    roles: tuple[str, ...] = (),
    executors: tuple[str, ...] = (),
    body: str = "",
    adapters: dict[str, str] | None = None,
    references: dict[str, str] | None = None,
    manifest: str | None = None,
    json_manifest: bool = False,
) -> Path:
    """``<root>/<folder>/<skill_id>/``: a manifest, SKILL.md, adapters and references."""
    bundle = root / folder / skill_id
    bundle.mkdir(parents=True, exist_ok=True)
    activation = {}
    if roles:
        activation["roles"] = list(roles)
    if executors:
        activation["runtimes" if json_manifest else "executors"] = list(executors)
    data = {
        "id": skill_id,
        "title": f"Skill {skill_id}",
        "description": description or f"What {skill_id} teaches",
        "version": "1.0.0",
        "tags": ["test"],
    }
    if activation:
        data["activation"] = activation
    if manifest is not None:
        (bundle / "skill.yaml").write_text(manifest)
    elif json_manifest:
        (bundle / "skill.json").write_text(json.dumps(data, indent=2))
    else:
        (bundle / "skill.yaml").write_text(
            "\n".join(f"{k}: {json.dumps(v)}" for k, v in data.items()) + "\n"
        )
    (bundle / "SKILL.md").write_text(body or f"# {skill_id}\n\nAlways do the {skill_id} thing.\n")
    for executor, text in (adapters or {}).items():
        (bundle / "adapters").mkdir(exist_ok=True)
        (bundle / "adapters" / f"{executor}.md").write_text(text)
    for rel, text in (references or {}).items():
        path = bundle / "references" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return bundle
