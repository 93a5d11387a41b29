"""The user docs (docs/*.md) ship in the wheel as ``wave_orchestrator/docs/``, so `wave docs`
works for a pipx install as for a checkout; everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithDocs(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "wave_orchestrator" / "docs"
        target.mkdir(parents=True, exist_ok=True)
        for page in sorted((HERE / "docs").glob("*.md")):
            shutil.copyfile(page, target / page.name)


setup(cmdclass={"build_py": BuildWithDocs})
