"""Codex's own AGENTS.md tests, ported to ``preset: codex``: which file a folder, root to cwd, the byte budget.

Source: openai/codex, codex-rs/core/src/agents_md_tests.rs (the tests of
codex-rs/core/src/agents_md.rs, formerly the tests module of project_doc.rs);
each test names the Rust test it ports. ``make_config``'s limit is
``formatter.budget.max_bytes`` (Codex's ``project_doc_max_bytes``), its fallbacks
more ``names``, its ``cwd`` the working folder (``from:`` where Codex's is a
symbolic link), its ``user_instructions`` the user's ``~/.codex/AGENTS.md`` (HOME
points at a temporary folder). Codex's ``text()`` is compared with the render's text.

Not ported:
- read_agents_md_propagates_metadata_errors, read_agents_md_propagates_read_errors,
  read_agents_md_ignores_files_removed_after_discovery: an injected failing file system (Codex's own executor API).
- multiple_environment_docs_use_labeled_layout_and_preserve_source_order,
  secondary_only_project_doc_uses_labeled_layout,
  primary_only_project_doc_preserves_legacy_layout_with_multiple_bound_environments,
  project_doc_byte_limit_is_applied_independently_per_environment,
  multiple_environments_can_exceed_single_environment_project_doc_limit,
  secondary_environment_invalid_utf8_warns_without_suppressing_other_docs: Codex's exec-server environments.
- child_agents_guidance_is_appended_once_after_environment_groups,
  child_agents_message_after_global_instructions_uses_plain_separator,
  child_agents_message_after_project_docs_is_not_an_instruction_source: Codex's built-in ChildAgentsMd message.
- skills_are_not_appended_to_agents_md, apps_feature_does_not_emit_user_instructions_by_itself,
  apps_feature_does_not_append_to_agents_md_user_instructions: Codex's skills and apps features.
- project_layers_do_not_override_project_root_markers: Codex's layered config.toml files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.trees import write

from memconfig import Pipeline

GLOBAL = "docs/discovery.md, codex: ~/.codex/AGENTS.md (global) — not part of the preset: add it as a source of its own"
SYMLINKED_CWD = "docs/discovery.md, codex: project root — differs for a symlinked start folder (resolved with realpath)"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex's codex_home: a home folder of the test's own, CODEX_HOME unset (so ~/.codex)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def _codex(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, limit: int = 4096, **more: Any
) -> tuple[str, list[str], list[dict[str, Any]]]:
    """The codex preset's text in *cwd* under Codex's *limit*, the discovered files taken, and the events."""
    monkeypatch.chdir(cwd)
    config = {"version": 1, "formatter": {"preset": "codex", "budget": {"max_bytes": limit}}, **more}
    with capture_logs() as logs:
        render = Pipeline.from_config(config).build({})
    found = [r.source for r in render.sources if r.via == "discover" and r.status == "loaded"]
    return render.text, found, logs


def _names(*fallbacks: str, **more: Any) -> list[dict[str, Any]]:
    """The preset's discovery with Codex's project_doc_fallback_filenames after AGENTS.md (and *more*)."""
    names = ["AGENTS.override.md", "AGENTS.md", *fallbacks]
    return [{"discover": {"names": names, "pick": "first", "skip_blank": False, **more}}]


def test_no_doc_file_returns_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """no_doc_file_returns_none."""
    (tmp_path / "work").mkdir()
    assert _codex(tmp_path / "work", monkeypatch)[0] == ""


@pytest.mark.parametrize("blank", ["", " \n\t"])
def test_empty_loaded_instructions_are_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    """empty_loaded_instructions_are_empty, loaded_instructions_with_only_empty_or_whitespace_entries_are_empty."""
    write(tmp_path / "work" / "AGENTS.md", blank)
    assert _codex(tmp_path / "work", monkeypatch)[0] == ""


def test_doc_smaller_than_limit_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """doc_smaller_than_limit_is_returned: verbatim."""
    write(tmp_path / "work" / "AGENTS.md", "hello world")
    assert _codex(tmp_path / "work", monkeypatch)[0] == "hello world"


def test_project_doc_invalid_utf8_warns_and_uses_lossy_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """project_doc_invalid_utf8_warns_and_uses_lossy_text: U+FFFD, one warning naming the file."""
    path = write(tmp_path / "work" / "AGENTS.md", b"project\xff doc")
    text, _, logs = _codex(tmp_path / "work", monkeypatch)
    assert text == "project\ufffd doc"
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert (warning["event"], warning["source"]) == ("bytes_replaced", str(path))


def test_doc_larger_than_limit_is_truncated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """doc_larger_than_limit_is_truncated: 2 KiB cut to the 1,024-byte limit."""
    huge = "A" * 2048
    write(tmp_path / "work" / "AGENTS.md", huge)
    text = _codex(tmp_path / "work", monkeypatch, limit=1024)[0]
    assert len(text) == 1024 and text == huge[:1024]


def test_total_byte_limit_truncates_later_project_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """total_byte_limit_truncates_later_project_docs: a running budget of 7, root first; the separator is free."""
    repo = tmp_path / "repo"
    write(repo / ".git", "")
    root = write(repo / "AGENTS.md", "root")
    nested = write(repo / "nested" / "AGENTS.md", "abcdef")
    text, found, _ = _codex(repo / "nested", monkeypatch, limit=7)
    assert (text, found) == ("root\n\nabc", [str(root), str(nested)])


def test_finds_doc_in_repo_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """finds_doc_in_repo_root: a .git file marks the root, two folders above the cwd."""
    repo = tmp_path / "repo"
    write(repo / ".git", "gitdir: /path/to/actual/git/dir\n")
    write(repo / "AGENTS.md", "root level doc")
    (repo / "workspace" / "crate_a").mkdir(parents=True)
    assert _codex(repo / "workspace" / "crate_a", monkeypatch)[0] == "root level doc"


def test_zero_byte_limit_disables_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zero_byte_limit_disables_docs."""
    write(tmp_path / "work" / "AGENTS.md", "something")
    assert _codex(tmp_path / "work", monkeypatch, limit=0)[0] == ""


@pytest.mark.xfail(strict=True, reason=GLOBAL)
def test_merges_existing_instructions_with_agents_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _home: Path
) -> None:
    """merges_existing_instructions_with_agents_md: the user's instructions, AGENTS_MD_SEPARATOR, the project doc."""
    write(_home / ".codex" / "AGENTS.md", "base instructions")
    write(tmp_path / "work" / "AGENTS.md", "proj doc")
    assert _codex(tmp_path / "work", monkeypatch)[0] == "base instructions\n\n--- project-doc ---\n\nproj doc"


@pytest.mark.xfail(strict=True, reason=GLOBAL)
def test_keeps_existing_instructions_when_doc_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _home: Path
) -> None:
    """keeps_existing_instructions_when_doc_missing: the user's instructions alone."""
    write(_home / ".codex" / "AGENTS.md", "some instructions")
    (tmp_path / "work").mkdir()
    assert _codex(tmp_path / "work", monkeypatch)[0] == "some instructions"


@pytest.mark.xfail(strict=True, reason=GLOBAL)
def test_instruction_sources_include_global_before_agents_md_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _home: Path
) -> None:
    """instruction_sources_include_global_before_agents_md_docs: ~/.codex/AGENTS.md first, then the project doc."""
    write(_home / ".codex" / "AGENTS.md", "global doc")
    write(tmp_path / "work" / "AGENTS.md", "project doc")
    assert _codex(tmp_path / "work", monkeypatch)[0] == "global doc\n\n--- project-doc ---\n\nproject doc"


def test_concatenates_root_and_cwd_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """concatenates_root_and_cwd_docs: root to cwd, joined by a blank line."""
    repo = tmp_path / "repo"
    write(repo / ".git", "gitdir: /path/to/actual/git/dir\n")
    root = write(repo / "AGENTS.md", "root doc")
    crate = write(repo / "workspace" / "crate_a" / "AGENTS.md", "crate doc")
    text, found, _ = _codex(crate.parent, monkeypatch)
    assert (text, found) == ("root doc\n\ncrate doc", [str(root), str(crate)])


def test_project_root_markers_are_honored_for_agents_discovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """project_root_markers_are_honored_for_agents_discovery: [.codex-root], past a .git below it."""
    write(tmp_path / ".codex-root", "")
    parent = write(tmp_path / "AGENTS.md", "parent doc")
    (tmp_path / "dir1" / ".git").mkdir(parents=True)
    child = write(tmp_path / "dir1" / "AGENTS.md", "child doc")
    sources = _names(root_markers=[".codex-root"])
    text, found, _ = _codex(tmp_path / "dir1", monkeypatch, sources=sources)
    assert (text, found) == ("parent doc\n\nchild doc", [str(parent), str(child)])


def _linked(tmp_path: Path) -> Path:
    write(tmp_path / "target" / "AGENTS.md", "project doc")
    os.symlink(tmp_path / "target", tmp_path / "linked", target_is_directory=True)
    return tmp_path / "linked"


def test_agents_md_paths_preserve_symlinked_cwd_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_md_paths_preserve_symlinked_cwd: the text, "project doc"."""
    linked = _linked(tmp_path)
    assert _codex(tmp_path, monkeypatch, sources=_names(**{"from": str(linked)}))[0] == "project doc"


@pytest.mark.xfail(strict=True, reason=SYMLINKED_CWD)
def test_agents_md_paths_preserve_symlinked_cwd_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_md_paths_preserve_symlinked_cwd: the file found is cwd.join("AGENTS.md"), through the link."""
    linked = _linked(tmp_path)
    assert _codex(tmp_path, monkeypatch, sources=_names(**{"from": str(linked)}))[1] == [str(linked / "AGENTS.md")]


def test_agents_local_md_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_local_md_preferred: AGENTS.override.md over AGENTS.md, one file found."""
    write(tmp_path / "work" / "AGENTS.md", "versioned")
    local = write(tmp_path / "work" / "AGENTS.override.md", "local")
    text, found, _ = _codex(tmp_path / "work", monkeypatch)
    assert (text, found) == ("local", [str(local)])


def test_uses_configured_fallback_when_agents_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uses_configured_fallback_when_agents_missing: project_doc_fallback_filenames = [EXAMPLE.md]."""
    write(tmp_path / "work" / "EXAMPLE.md", "example instructions")
    assert _codex(tmp_path / "work", monkeypatch, sources=_names("EXAMPLE.md"))[0] == "example instructions"


def test_agents_md_preferred_over_fallbacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_md_preferred_over_fallbacks: [EXAMPLE.md, .example.md] after AGENTS.md, one file found."""
    agents = write(tmp_path / "work" / "AGENTS.md", "primary")
    write(tmp_path / "work" / "EXAMPLE.md", "secondary")
    text, found, _ = _codex(tmp_path / "work", monkeypatch, sources=_names("EXAMPLE.md", ".example.md"))
    assert (text, found) == ("primary", [str(agents)])


def test_agents_md_directory_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_md_directory_is_ignored."""
    (tmp_path / "work" / "AGENTS.md").mkdir(parents=True)
    assert _codex(tmp_path / "work", monkeypatch)[:2] == ("", [])


def test_agents_md_special_file_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agents_md_special_file_is_ignored: a FIFO named AGENTS.md (never opened: the test would hang)."""
    (tmp_path / "work").mkdir()
    os.mkfifo(tmp_path / "work" / "AGENTS.md", 0o644)
    assert _codex(tmp_path / "work", monkeypatch)[:2] == ("", [])


def test_override_directory_falls_back_to_agents_md_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """override_directory_falls_back_to_agents_md_file."""
    (tmp_path / "work" / "AGENTS.override.md").mkdir(parents=True)
    agents = write(tmp_path / "work" / "AGENTS.md", "primary")
    text, found, _ = _codex(tmp_path / "work", monkeypatch)
    assert (text, found) == ("primary", [str(agents)])
