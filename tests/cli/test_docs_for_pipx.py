"""`wave docs` as a pipx user reads it: the pages come from the copy inside the package, with
no bench/, scripts/ or tests/ next to them. A page whose prose cites such a file says, before
the first one, that it is a file of a clone of wave's repository; from a checkout, where the
files are, the page is printed as it is."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest

from wave_orchestrator.cli import docs

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"`((?:bench|scripts|tests)/[^`\s]*)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def checkout_files_cited(text: str) -> list[str]:
    """The checkout's own files a page's prose names (code blocks show the reader's files)."""
    return [p for p in CITED.findall(FENCE.sub("", text)) if (ROOT / p).exists()]


def printed(page: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert docs.run(argparse.Namespace(topic=page)) == 0
    return capsys.readouterr().out


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pages as a wheel ships them: a docs/ copy with no checkout around it."""
    copy = tmp_path / "site-packages" / "wave_orchestrator" / "docs"
    shutil.copytree(ROOT / "docs", copy)
    monkeypatch.setattr(docs, "docs_folder", lambda: copy)
    return copy


PAGES = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", PAGES)
def test_a_page_says_whose_files_it_cites(
    page: str, installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = printed(page, capsys)
    cited = checkout_files_cited(text)
    if not cited:
        return
    first = text.index(f"`{cited[0]}`")
    assert "a clone of wave's repository" in text[:first], (
        f"`wave docs {page}` cites {cited[0]} with no word that a pipx user does not have it"
    )


def test_the_slurm_dev_cluster_is_found_in_a_clone(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = printed("placement", capsys)
    section = text.split("## Trying it: a cluster on one machine", 1)[1][:600]
    assert "scripts/slurm-dev-cluster.sh" in section
    assert "clone of wave's repository" in section  # where it is, said where it is used


def test_most_pages_cite_the_checkout() -> None:
    """The check above has something to check: the pages do cite the checkout's files."""
    cited = [p for p in PAGES if checkout_files_cited((ROOT / "docs" / f"{p}.md").read_text())]
    assert len(cited) >= 8, cited


def test_from_a_checkout_a_page_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert docs.from_checkout(docs.docs_folder())
    assert printed("placement", capsys) == (ROOT / "docs" / "placement.md").read_text()
