"""Claude Code's ``@path`` imports with backslash-escaped spaces, as its documentation pins them.

Source: "Manage Claude's memory", code.claude.com/docs/en/memory: a path holding
spaces is written with each space escaped, ``@Design\\ Docs/x.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline
from memconfig.expand.imports import find_tokens


def test_an_escaped_space_is_part_of_the_path() -> None:
    (token,) = find_tokens("See @Design\\ Docs/x.md for the layout.\n")
    assert token.path == "Design Docs/x.md"
    assert "See @Design\\ Docs/x.md for"[token.start : token.end] == "@Design\\ Docs/x.md"


def test_a_plain_space_still_ends_the_path() -> None:
    (token,) = find_tokens("See @Design Docs/x.md\n")
    assert token.path == "Design"


def test_the_file_behind_an_escaped_space_is_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = git_init(tmp_path / "repo")
    write(repo / "CLAUDE.md", "Layout: @Design\\ Docs/x.md\n")
    write(repo / "Design Docs" / "x.md", "Grid of 8.\n")
    monkeypatch.chdir(repo)
    with capture_logs():
        text = Pipeline.from_config({"version": 1, "formatter": {"preset": "claude"}}).build({}).text
    assert text == "Layout: Grid of 8."
