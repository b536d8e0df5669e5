"""The layout's cleaning steps: their order decides what a source's text becomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memconfig import Pipeline
from memconfig.process import Cleaning

COMMENTED = "<!-- generated -->---\ntitle: x\n---\nBody.\n"
"""A comment before a frontmatter-looking block: the block is not at the very start, so it is not frontmatter."""


def _render(root: Path, strip_bom: bool, own: bool) -> str:
    """a.md and b.md under the plain layout with comments stripped; frontmatter stripped for a.md only
    (*own*: by a.md's own ``strip_frontmatter``) or for every source (the layout's)."""
    formatter: dict[str, Any] = {"preset": "plain", "strip_html_comments": True, "strip_bom": strip_bom}
    if own:
        sources: list[Any] = [{"url": "a.md", "strip_frontmatter": True}, "b.md"]
    else:
        formatter["strip_frontmatter"] = True
        sources = ["a.md", "b.md"]
    config = {"version": 1, "base_dir": str(root), "sources": sources, "formatter": formatter}
    return Pipeline.from_config(config).build({}).text


@pytest.mark.parametrize("strip_bom", [True, False])
def test_a_sources_own_frontmatter_rule_runs_before_comments_are_stripped(tmp_path: Path, strip_bom: bool) -> None:
    """With or without the BOM step, a.md's own ``strip_frontmatter`` sees the text as read, as the layout's does.

    Run after the comment step (as it was with ``strip_bom: false``), it would see ``---`` at the start and strip
    a block that was not frontmatter in the file.
    """
    (tmp_path / "a.md").write_text(COMMENTED, encoding="utf-8")
    (tmp_path / "b.md").write_text("B.\n", encoding="utf-8")

    own = _render(tmp_path, strip_bom, own=True)

    assert own == _render(tmp_path, strip_bom, own=False)
    assert own == "---\ntitle: x\n---\nBody.\n\nB."


def test_the_steps_run_bom_then_frontmatter_then_comments() -> None:
    """The order of the steps, for each combination of the BOM step and a per-source frontmatter rule."""
    per_source = {"a.md": True, "b.md": False}

    def names(cleaning: Cleaning) -> list[str]:
        return [type(step).__name__ for step in cleaning.steps]

    assert names(Cleaning(True, per_source, strip_bom=True)) == ["StripBOM", "StripFrontmatterOf", "StripHTMLComments"]
    assert names(Cleaning(True, per_source, strip_bom=False)) == ["StripFrontmatterOf", "StripHTMLComments"]
    assert names(Cleaning(True, True, strip_bom=False)) == ["StripFrontmatter", "StripHTMLComments"]
    assert names(Cleaning(False, per_source, strip_bom=False)) == ["StripFrontmatterOf"]
