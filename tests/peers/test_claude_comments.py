"""Claude Code's HTML comments, as its documentation pins them, under ``preset: claude``.

Source: "Manage Claude's memory", code.claude.com/docs/en/memory: "Block-level
HTML comments … are stripped before the content is injected … Comments inside
code blocks are preserved." deepagents strips every comment, inside code too:
its preset is unchanged (byte-identical to its middleware).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline
from memconfig.process.cleaning import StripHTMLComments

TEXT = (
    "Use tabs. <!-- a note for editors -->\n"
    "```html\n<!-- an example: kept -->\n```\n"
    "~~~~\n<!-- kept too -->\n~~~~\n"
    "<!-- after the fences: stripped -->Done.\n"
)


def test_comments_inside_fenced_code_are_kept_under_preset_claude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_init(tmp_path / "repo")
    write(repo / "CLAUDE.md", TEXT)
    monkeypatch.chdir(repo)
    with capture_logs():
        text = Pipeline.from_config({"version": 1, "formatter": {"preset": "claude"}}).build({}).text
    assert text == ("Use tabs. \n```html\n<!-- an example: kept -->\n```\n~~~~\n<!-- kept too -->\n~~~~\nDone.")


def test_deepagents_strips_them_everywhere(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", TEXT)
    config = {"version": 1, "base_dir": str(tmp_path), "sources": ["AGENTS.md"], "formatter": {"preset": "deepagents"}}
    with capture_logs():
        text = Pipeline.from_config(config).build({}).text
    assert "<!--" not in text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("```\n<!-- a -->\n", "```\n<!-- a -->\n"),  # an unclosed fence runs to the end
        ("````\n```\n<!-- a -->\n````\n", "````\n```\n<!-- a -->\n````\n"),  # closed only by as long a fence
        ("``` x ` y\n<!-- a -->\n", "``` x ` y\n\n"),  # a backtick in the info string: not a fence
        ("    ```\n<!-- a -->\n", "    ```\n\n"),  # four spaces: indented code, not a fence here
    ],
)
def test_fences_as_commonmark_reads_them(text: str, kept: str) -> None:
    assert StripHTMLComments(outside_code=True).clean(text) == kept
