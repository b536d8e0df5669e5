"""The `gemini` preset pins Gemini CLI's context files (packages/core/src/utils/memoryDiscovery.ts), case by case.

Each tree is built in tmp_path with a real `git init` where Gemini CLI's tests
make a `.git`; the render runs from the working folder Gemini CLI would be
started in. The expected strings are the ones Gemini CLI's own tests assert for
its project memory (`concatenateInstructions`): each file between
`--- Context from: <absolute path> ---` and `--- End of Context from: <absolute
path> ---`, trimmed, files joined by a blank line, root first; imports between
its `<!-- Imported from: P -->` / `<!-- End of import from: P -->` comments.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.trees import git_init as _git_init
from support.trees import write as _write

from memconfig import ConfigError, Pipeline


def _gemini(cwd: Path, monkeypatch: pytest.MonkeyPatch, **more: Any) -> tuple[str, list[dict[str, Any]]]:
    """The text the gemini preset renders with *cwd* as the working folder, and the events."""
    monkeypatch.chdir(cwd)
    formatter = {"preset": "gemini", **more.pop("formatter", {})}
    with capture_logs() as logs:
        render = Pipeline.from_config({"version": 1, "formatter": formatter, **more}).build({})
    return render.text, logs


def _block(path: Path, content: str) -> str:
    """One file as Gemini CLI's concatenateInstructions writes it."""
    return f"--- Context from: {path} ---\n{content}\n--- End of Context from: {path} ---"


def _names(*names: str) -> list[dict[str, Any]]:
    """The preset's discovery with other names: Gemini CLI's `context.fileName` (a string or a list)."""
    return [{"discover": {"names": list(names), "pick": "all"}}]


def test_no_file_gives_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI's "should return empty memory and count if no context files are found": ''."""
    _git_init(tmp_path / "repo")
    assert _gemini(tmp_path / "repo", monkeypatch)[0] == ""


def test_upward_from_the_working_folder_to_the_project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should load ORIGINAL_GEMINI_MD_FILENAME files by upward traversal from CWD to project root"."""
    project = _git_init(tmp_path / "project")
    root_file = _write(project / "GEMINI.md", "Project root memory")
    src_file = _write(project / "src" / "GEMINI.md", "Src directory memory")
    text, _ = _gemini(project / "src", monkeypatch)
    assert text == (
        "--- Context from: "
        + str(root_file)
        + " ---\nProject root memory\n--- End of Context from: "
        + str(root_file)
        + " ---\n\n--- Context from: "
        + str(src_file)
        + " ---\nSrc directory memory\n--- End of Context from: "
        + str(src_file)
        + " ---"
    )


def test_a_custom_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should load context files by upward traversal with custom filename" (PROJECT_CONTEXT.md)."""
    project = _git_init(tmp_path / "project")
    root_file = _write(project / "PROJECT_CONTEXT.md", "project context content")
    cwd_file = _write(project / "src" / "PROJECT_CONTEXT.md", "cwd context content")
    text, _ = _gemini(project / "src", monkeypatch, sources=_names("PROJECT_CONTEXT.md"))
    assert text == _block(root_file, "project context content") + "\n\n" + _block(cwd_file, "cwd context content")


def test_nothing_above_the_git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should traverse upward from trusted root to git root": parent/GEMINI.md, above repo/.git, stays out."""
    parent = tmp_path / "parent"
    _write(parent / "GEMINI.md", "Parent content")
    repo = _git_init(parent / "repo")
    repo_file = _write(repo / "GEMINI.md", "Repo content")
    src_file = _write(repo / "src" / "GEMINI.md", "Src content")
    text, _ = _gemini(repo / "src", monkeypatch)
    assert text == _block(repo_file, "Repo content") + "\n\n" + _block(src_file, "Src content")


def test_without_git_only_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should fall back to trusted root as ceiling when no .git exists": docs/notes reads only notes/."""
    docs = tmp_path / "docs"
    docs_file = _write(docs / "GEMINI.md", "Docs content")
    (docs / "notes").mkdir()
    assert _gemini(docs / "notes", monkeypatch)[0] == ""
    assert _gemini(docs, monkeypatch)[0] == _block(docs_file, "Docs content")


def test_a_git_file_marks_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should recognize .git as a file (submodules/worktrees)"."""
    repo = tmp_path / "worktree_repo"
    _write(repo / ".git", "gitdir: /some/other/path/.git/worktrees/worktree_repo")
    repo_file = _write(repo / "GEMINI.md", "Repo content")
    src_file = _write(repo / "src" / "GEMINI.md", "Src content")
    text, _ = _gemini(repo / "src", monkeypatch)
    assert text == _block(repo_file, "Repo content") + "\n\n" + _block(src_file, "Src content")


def test_several_names_stay_adjacent_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should keep multiple memory files from the same directory adjacent and in order" (a fileName list)."""
    folder = _git_init(tmp_path / "multi_file_dir")
    primary = _write(folder / "PRIMARY.md", "Primary content")
    secondary = _write(folder / "SECONDARY.md", "Secondary content")
    text, _ = _gemini(folder, monkeypatch, sources=_names("PRIMARY.md", "SECONDARY.md"))
    assert text == _block(primary, "Primary content") + "\n\n" + _block(secondary, "Secondary content")


def test_content_is_trimmed_and_a_blank_file_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI trims each file and drops one that is empty once trimmed; memconfig logs it as `empty`."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "GEMINI.md", "   \n\n")
    sub = _write(repo / "sub" / "GEMINI.md", "Sub memory\n\n\n")
    text, logs = _gemini(repo / "sub", monkeypatch)
    assert text == _block(sub, "Sub memory")
    [empty] = [e for e in logs if e["event"] == "source_skipped" and e["reason"] == "empty"]
    assert empty["source"] == str(repo / "GEMINI.md")


def test_html_comments_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI strips no comment: `<!-- … -->` in a GEMINI.md reaches the model."""
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "<!-- a note -->\nBe brief.\n")
    assert _gemini(repo, monkeypatch)[0] == _block(path, "<!-- a note -->\nBe brief.")


def test_a_directory_named_gemini_md_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI skips an EISDIR GEMINI.md silently; memconfig passes it over at debug, saying what it is."""
    repo = _git_init(tmp_path / "repo")
    (repo / "GEMINI.md").mkdir()
    sub = _write(repo / "sub" / "GEMINI.md", "Sub")
    text, logs = _gemini(repo / "sub", monkeypatch)
    assert text == _block(sub, "Sub")
    passed = [e for e in logs if e["event"] == "candidate_passed" and e["candidate"] == str(repo / "GEMINI.md")]
    assert [(e["reason"], e["log_level"]) for e in passed] == [("not_regular_file", "debug")]


def test_an_import_is_wrapped_in_gemini_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should process basic md file imports": `@./test.md` becomes its text between Gemini CLI's comments."""
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "Some content @./test.md more content")
    _write(repo / "test.md", "# Imported Content\nThis is imported.")
    text, _ = _gemini(repo, monkeypatch)
    inner = (
        "Some content <!-- Imported from: ./test.md -->\n# Imported Content\nThis is imported.\n"
        "<!-- End of import from: ./test.md --> more content"
    )
    assert text == _block(path, inner)


def test_nested_imports_are_wrapped_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should handle nested imports recursively": ./nested.md imports ./inner.md, both wrapped."""
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "Main @./nested.md content")
    _write(repo / "nested.md", "Nested @./inner.md content")
    _write(repo / "inner.md", "Inner content")
    inner = (
        "Main <!-- Imported from: ./nested.md -->\nNested <!-- Imported from: ./inner.md -->\nInner content\n"
        "<!-- End of import from: ./inner.md --> content\n<!-- End of import from: ./nested.md --> content"
    )
    assert _gemini(repo, monkeypatch)[0] == _block(path, inner)


def test_a_missing_import_leaves_a_failure_comment_and_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "should handle file not found errors": `<!-- Import failed: ./nonexistent.md - … -->`, and one warning."""
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "Content @./nonexistent.md more content")
    text, logs = _gemini(repo, monkeypatch)
    assert text == _block(path, "Content <!-- Import failed: ./nonexistent.md - not_found --> more content")
    [skipped] = [e for e in logs if e["event"] == "source_skipped"]
    assert (skipped["log_level"], skipped["reason"], skipped["url"]) == (
        "warning",
        "not_found",
        str(repo / "nonexistent.md"),
    )


def test_an_import_outside_the_project_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "should reject imports outside project root": a `../` escape is a failure comment, never read."""
    _write(tmp_path / "secret.md", "Not for the model.")
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "Try @../secret.md here")
    text, _ = _gemini(repo, monkeypatch)
    assert text == _block(path, "Try <!-- Import failed: ../secret.md - outside_root --> here")


def test_downward_search_is_opt_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI's former downward scan ("…by downward traversal from CWD"): `down:` brings it back, cwd first."""
    repo = _git_init(tmp_path / "repo")
    cwd_file = _write(repo / "GEMINI.md", "CWD memory")
    sub_file = _write(repo / "subdir" / "GEMINI.md", "Subdir memory")
    assert _gemini(repo, monkeypatch)[0] == _block(cwd_file, "CWD memory")
    sources = [{"discover": {"names": ["GEMINI.md"], "pick": "all", "down": {"max_dirs": 200}}}]
    text, _ = _gemini(repo, monkeypatch, sources=sources)
    assert text == _block(cwd_file, "CWD memory") + "\n\n" + _block(sub_file, "Subdir memory")


def test_the_global_file_is_a_source_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.gemini/GEMINI.md is not part of the preset; declared before the discovery, it comes first."""
    home = tmp_path / "home"
    global_file = _write(home / ".gemini" / "GEMINI.md", "default context content")
    repo = _git_init(tmp_path / "repo")
    repo_file = _write(repo / "GEMINI.md", "Repo content")
    monkeypatch.setenv("HOME", str(home))
    sources = [{"url": "~/.gemini/GEMINI.md", "name": str(global_file)}, *_names("GEMINI.md")]
    text, _ = _gemini(repo, monkeypatch, sources=sources)
    assert text.endswith(_block(repo_file, "Repo content"))
    assert "default context content" in text


def test_stripping_comments_under_markers_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """strip_html_comments: true would strip the import markers: the config is refused, at its key."""
    monkeypatch.chdir(tmp_path)
    config = {"version": 1, "formatter": {"preset": "gemini", "strip_html_comments": True}}
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config(config)
    assert "imports.markers" in str(caught.value)


def test_working_folder_through_a_symlink_is_shown_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path in each header is the file's absolute path, the working folder resolved (as Node's process.cwd())."""
    repo = _git_init(tmp_path / "repo")
    path = _write(repo / "GEMINI.md", "Repo content")
    os.symlink(repo, tmp_path / "link")
    assert _gemini(tmp_path / "link", monkeypatch)[0] == _block(path, "Repo content")
