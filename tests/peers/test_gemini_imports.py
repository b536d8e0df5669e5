"""Gemini CLI's import markers where memconfig's differ: each pinned as Gemini's own tests expect, a strict xfail.

Source: google-gemini/gemini-cli, packages/core/src/utils/memoryImportProcessor.ts
and its test file memoryImportProcessor.test.ts ('should handle circular imports',
'should reject imports outside project root', 'should respect max depth limit',
and the tree-mode join that keeps the imported file's last newline). The comparison
row "Gemini CLI: imports" of docs/conventions.md says **differs** and gives both texts; these
tests fail until memconfig writes Gemini's forms (strict: a pass is a change to
document).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline

DIFFERS = (
    "docs/conventions.md, Gemini CLI: imports — differs (memconfig gives its own reasons and trims the imported text)"
)


def _gemini(repo: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(repo)
    with capture_logs():
        return Pipeline.from_config({"version": 1, "formatter": {"preset": "gemini"}}).build({}).text


def _inner(text: str) -> str:
    """The file's content between Gemini's context lines."""
    return text.split(" ---\n", 1)[1].rsplit("\n--- End of Context from:", 1)[0]


def test_the_start_and_end_markers_are_gemini_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should process basic md file imports': the markers that are the same, byte for byte."""
    repo = git_init(tmp_path / "repo")
    write(repo / "GEMINI.md", "A @./test.md B")
    write(repo / "test.md", "T")
    assert _inner(_gemini(repo, monkeypatch)) == (
        "A <!-- Imported from: ./test.md -->\nT\n<!-- End of import from: ./test.md --> B"
    )


@pytest.mark.xfail(strict=True, reason=DIFFERS)
def test_a_cycle_is_marked_as_already_processed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should handle circular imports': `<!-- File already processed: ./main.md -->`."""
    repo = git_init(tmp_path / "repo")
    write(repo / "GEMINI.md", "Content @./circular.md more content")
    write(repo / "circular.md", "Circular @./circular.md content")
    assert "<!-- File already processed: ./circular.md -->" in _gemini(repo, monkeypatch)


@pytest.mark.xfail(strict=True, reason=DIFFERS)
def test_an_escape_from_the_root_is_a_path_traversal_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should reject imports outside project root': `- Path traversal attempt -->`."""
    repo = git_init(tmp_path / "repo")
    write(repo / "GEMINI.md", "X @../../../etc/passwd Y")
    assert "<!-- Import failed: ../../../etc/passwd - Path traversal attempt -->" in _gemini(repo, monkeypatch)


@pytest.mark.xfail(strict=True, reason=DIFFERS)
def test_the_depth_limit_leaves_the_token_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'should respect max depth limit': past the limit, the content is unchanged, no marker at all."""
    repo = git_init(tmp_path / "repo")
    write(repo / "GEMINI.md", "D0 @./d1.md")
    for level in range(1, 7):
        write(repo / f"d{level}.md", f"D{level} @./d{level + 1}.md")
    text = _gemini(repo, monkeypatch)
    assert "D5 @./d6.md" in text and "Import failed" not in text


@pytest.mark.xfail(strict=True, reason=DIFFERS)
def test_the_imported_file_keeps_its_last_newline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tree mode joins marker, content as read, and the end marker: a file ending in a newline leaves a blank line."""
    repo = git_init(tmp_path / "repo")
    write(repo / "GEMINI.md", "A @./test.md B")
    write(repo / "test.md", "T\n")
    assert "T\n\n<!-- End of import from: ./test.md -->" in _gemini(repo, monkeypatch)
