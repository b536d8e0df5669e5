"""The `codex` preset pins Codex's project docs (codex-rs/core/src/agents_md.rs and its tests), case by case.

Each tree is built in tmp_path, with a real `git init` where Codex would find a
`.git`; the render runs with the working directory Codex would have. Expected
strings are the ones Codex's own tests assert where it has one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.trees import git_init as _git_init
from support.trees import write as _write

from memconfig import Pipeline


def _codex(cwd: Path, monkeypatch: pytest.MonkeyPatch, **more: Any) -> tuple[str, list[dict[str, Any]]]:
    """The text the codex preset renders with *cwd* as the working directory, and the events."""
    monkeypatch.chdir(cwd)
    formatter = {"preset": "codex", **more.pop("formatter", {})}
    with capture_logs() as logs:
        render = Pipeline.from_config({"version": 1, "formatter": formatter, **more}).build({})
    return render.text, logs


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def test_no_doc_gives_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No AGENTS.md: nothing (Codex: None), and the discovery says it found no file."""
    text, logs = _codex(tmp_path, monkeypatch)
    assert text == ""
    assert [e["detail"] for e in _events(logs, "source_skipped")] == ["discovery found no file"]


def test_a_small_doc_is_returned_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's doc_smaller_than_limit_is_returned: "hello world"."""
    _write(tmp_path / "AGENTS.md", "hello world")
    assert _codex(tmp_path, monkeypatch)[0] == "hello world"


def test_content_is_not_stripped_or_trimmed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frontmatter, HTML comments, a byte order mark and trailing newlines stay, as Codex keeps them."""
    _git_init(tmp_path)
    body = "\ufeff---\nname: x\n---\n<!-- note -->\nrules\n\n"
    _write(tmp_path / "AGENTS.md", body)
    _write(tmp_path / "sub" / "AGENTS.md", "sub\n")
    assert _codex(tmp_path / "sub", monkeypatch)[0] == body + "\n\n" + "sub\n"


def test_root_and_cwd_docs_are_joined_root_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's concatenates_root_and_cwd_docs: "root doc\\n\\ncrate doc" (folders between without a doc)."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "AGENTS.md", "root doc")
    nested = repo / "workspace" / "crate_a"
    _write(nested / "AGENTS.md", "crate doc")
    assert _codex(nested, monkeypatch)[0] == "root doc\n\ncrate doc"


def test_the_repo_root_doc_is_found_from_a_nested_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's finds_doc_in_repo_root, with `.git` a file (a worktree): "root level doc"."""
    _write(tmp_path / ".git", "gitdir: /path/to/actual/git/dir\n")
    _write(tmp_path / "AGENTS.md", "root level doc")
    nested = tmp_path / "workspace" / "crate_a"
    nested.mkdir(parents=True)
    assert _codex(nested, monkeypatch)[0] == "root level doc"


def test_without_git_only_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `.git` above: only the working folder's doc (the parent's is not read)."""
    _write(tmp_path / "AGENTS.md", "parent")
    _write(tmp_path / "cwd" / "AGENTS.md", "cwd doc")
    assert _codex(tmp_path / "cwd", monkeypatch)[0] == "cwd doc"


def test_the_override_beats_agents_md(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's agents_local_md_preferred: "local"; AGENTS.md is not even a candidate looked at."""
    _write(tmp_path / "AGENTS.md", "versioned")
    _write(tmp_path / "AGENTS.override.md", "local")
    text, logs = _codex(tmp_path, monkeypatch)
    assert text == "local"
    assert [e["source"] for e in _events(logs, "source_loaded")] == [str(tmp_path / "AGENTS.override.md")]


def test_fallback_names_come_after_agents_md(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's fallback tests: a fallback is used when AGENTS.md is missing, and AGENTS.md wins when present."""
    names = ["AGENTS.override.md", "AGENTS.md", "EXAMPLE.md", ".example.md"]  # project_doc_fallback_filenames
    sources = [{"discover": {"names": names}}]
    _write(tmp_path / "EXAMPLE.md", "example instructions")
    assert _codex(tmp_path, monkeypatch, sources=sources)[0] == "example instructions"
    _write(tmp_path / "AGENTS.md", "primary")
    assert _codex(tmp_path, monkeypatch, sources=sources)[0] == "primary"


def test_a_directory_named_agents_md_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's agents_md_directory_is_ignored and override_directory_falls_back_to_agents_md_file."""
    (tmp_path / "AGENTS.md").mkdir()
    text, logs = _codex(tmp_path, monkeypatch)
    assert text == ""
    [passed] = [e for e in _events(logs, "candidate_passed") if e["reason"] == "not_regular_file"]
    assert passed["detail"] == "is a directory, not a regular file"
    os.rmdir(tmp_path / "AGENTS.md")
    (tmp_path / "AGENTS.override.md").mkdir()
    _write(tmp_path / "AGENTS.md", "primary")
    assert _codex(tmp_path, monkeypatch)[0] == "primary"


def test_a_fifo_named_agents_md_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's agents_md_special_file_is_ignored: a FIFO is passed over (opening it would wait for a writer)."""
    os.mkfifo(tmp_path / "AGENTS.md")
    assert _codex(tmp_path, monkeypatch)[0] == ""


def test_a_blank_override_hides_agents_md_as_in_codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex takes the first regular file of a folder, then skips it if blank: AGENTS.md beside it is not read.

    memconfig logs it: the blank override is `source_skipped` (empty), so the hidden AGENTS.md is explained.
    """
    _git_init(tmp_path)
    _write(tmp_path / "AGENTS.md", "root")
    _write(tmp_path / "sub" / "AGENTS.override.md", "  \n\n")
    _write(tmp_path / "sub" / "AGENTS.md", "hidden by the blank override")
    text, logs = _codex(tmp_path / "sub", monkeypatch)
    assert text == "root"
    [skipped] = _events(logs, "source_skipped")
    assert (skipped["source"], skipped["reason"]) == (str(tmp_path / "sub" / "AGENTS.override.md"), "empty")


def test_skip_blank_passes_a_blank_override_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `skip_blank: true` (discovery's default), the blank override is passed over and AGENTS.md taken."""
    _write(tmp_path / "AGENTS.override.md", "\n")
    _write(tmp_path / "AGENTS.md", "primary")
    sources = [{"discover": {"names": ["AGENTS.override.md", "AGENTS.md"]}}]
    text, logs = _codex(tmp_path, monkeypatch, sources=sources)
    assert text == "primary"
    assert [e["reason"] for e in _events(logs, "candidate_passed")] == ["blank"]


def test_the_byte_budget_runs_from_the_root_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's total_byte_limit_truncates_later_project_docs: limit 7, "root" + "abcdef" → "root\\n\\nabc"."""
    _git_init(tmp_path)
    _write(tmp_path / "AGENTS.md", "root")
    _write(tmp_path / "nested" / "AGENTS.md", "abcdef")
    text, logs = _codex(tmp_path / "nested", monkeypatch, formatter={"budget": {"max_bytes": 7}})
    assert text == "root\n\nabc"
    [cut] = _events(logs, "source_truncated")
    assert (cut["source"], cut["unit"], cut["limit"], cut["bytes_before"], cut["bytes_after"], cut["marker"]) == (
        str(tmp_path / "nested" / "AGENTS.md"),
        "bytes",
        7,
        6,
        3,
        False,
    )
    assert cut["setting"] == "formatter.budget.max_bytes" and cut["log_level"] == "warning"


def test_a_large_doc_is_cut_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's doc_larger_than_limit_is_truncated: 2 KiB of "A", limit 1024 → the first 1024 bytes."""
    _write(tmp_path / "AGENTS.md", "A" * 2048)
    assert _codex(tmp_path, monkeypatch, formatter={"budget": {"max_bytes": 1024}})[0] == "A" * 1024


def test_the_default_budget_is_32_kib_cut_inside_a_character(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """32,768 bytes across files; a cut through a 3-byte character leaves U+FFFD; a doc after the budget is out."""
    _git_init(tmp_path)
    first = "x" * 20000
    _write(tmp_path / "AGENTS.md", first)
    second = "€" * 5000  # 15,000 bytes; 12,768 left: 4,256 whole characters, no partial one
    _write(tmp_path / "a" / "AGENTS.md", "y" + second)  # 12,767 left after "y": 4,255 characters and 2 bytes
    _write(tmp_path / "a" / "b" / "AGENTS.md", "after the budget")
    text, logs = _codex(tmp_path / "a" / "b", monkeypatch)
    assert text == first + "\n\n" + "y" + "€" * 4255 + "\ufffd"
    [dropped] = _events(logs, "source_dropped")
    assert (dropped["source"], dropped["reason"]) == (str(tmp_path / "a" / "b" / "AGENTS.md"), "over_budget")
    assert "all spent on the sources before this one" in dropped["detail"]


def test_max_bytes_0_disables_the_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's zero_byte_limit_disables_docs: nothing; memconfig says why for each file."""
    _write(tmp_path / "AGENTS.md", "something")
    text, logs = _codex(tmp_path, monkeypatch, formatter={"budget": {"max_bytes": 0}})
    assert text == ""
    [dropped] = _events(logs, "source_dropped")
    assert dropped["detail"] == "formatter.budget.max_bytes is 0: no content goes in"


def test_invalid_utf8_is_replaced_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's project_doc_invalid_utf8_warns_and_uses_lossy_text: "project\\u{FFFD} doc", a warning naming the file."""
    _write(tmp_path / "AGENTS.md", b"project\xff doc")
    text, logs = _codex(tmp_path, monkeypatch)
    assert text == "project\ufffd doc"
    [warned] = _events(logs, "bytes_replaced")
    assert (warned["source"], warned["log_level"]) == (str(tmp_path / "AGENTS.md"), "warning")
    assert warned["detail"] == "not valid utf-8 at byte 7"


def test_invalid_bytes_cost_their_raw_size_in_the_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex spends a file's raw bytes: 20,000 invalid bytes cost 20,000 (not U+FFFD's 60,000), the child is cut.

    Codex keeps 20,000 U+FFFD and 12,768 'm' of this tree; so does memconfig.
    """
    _git_init(tmp_path)
    _write(tmp_path / "AGENTS.md", b"\xff" * 20000)
    _write(tmp_path / "a" / "AGENTS.md", "m" * 20000)
    text, logs = _codex(tmp_path / "a", monkeypatch)
    assert text == "\ufffd" * 20000 + "\n\n" + "m" * 12768
    [cut] = _events(logs, "source_truncated")
    assert cut["source"] == str(tmp_path / "a" / "AGENTS.md")
    assert [e["source"] for e in _events(logs, "bytes_replaced")] == [str(tmp_path / "AGENTS.md")]


def test_a_cut_inside_a_file_with_invalid_bytes_is_made_on_its_decoded_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented difference left (docs/budgets.md): the cut point of a file holding replaced bytes.

    Codex cuts the raw bytes at 32,768 (16,384 'a' and 16,384 U+FFFD of this file); memconfig cuts the decoded
    text at 32,768 UTF-8 bytes (each 'a' + U+FFFD pair is 4 of them): 8,192 pairs, logged as a cut.
    """
    _git_init(tmp_path)
    _write(tmp_path / "AGENTS.md", b"a\xff" * 20000)
    text, logs = _codex(tmp_path, monkeypatch)
    assert text == "a\ufffd" * 8192
    [cut] = _events(logs, "source_truncated")
    assert cut["source"] == str(tmp_path / "AGENTS.md")


def test_a_config_may_override_the_presets_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's own keys win: its sources, its budget (with the default marker), its decode rule."""
    _write(tmp_path / "AGENTS.md", b"bad \xff")
    text, logs = _codex(tmp_path, monkeypatch, loader={"on_decode_error": "skip"})
    assert text == "" and [e["reason"] for e in _events(logs, "source_skipped")] == ["decode_error"]
    _write(tmp_path / "AGENTS.md", "line one\nline two\n")
    text, _ = _codex(tmp_path, monkeypatch, formatter={"budget": {"max_chars": 200}})
    assert text == "line one\nline two\n"  # max_chars replaces the preset's max_bytes (one limit at a time)
