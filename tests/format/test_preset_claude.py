"""The `claude` preset pins Claude Code's documented memory behaviour (code.claude.com/docs/en/memory), case by case.

Each tree is built in tmp_path with a real `git init`; the render runs from the
working folder Claude Code would be started in (monkeypatch.chdir), or from a
discovery's `from`. The documented points: every CLAUDE.md and CLAUDE.local.md
from the root down to the working folder, CLAUDE.local.md after CLAUDE.md in a
folder; `@path` imports relative to the importing file, five hops, not in code;
`.claude/rules/` files (any depth) always loaded without `paths`, and only for
a matching file with it; HTML comments not shown to the model.
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


def _claude(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, paths: list[str] | None = None, **more: Any
) -> tuple[str, list[dict[str, Any]]]:
    """The text the claude preset renders with *cwd* as the working folder (and *paths* in play), and the events."""
    monkeypatch.chdir(cwd)
    formatter = {"preset": "claude", **more.pop("formatter", {})}
    with capture_logs() as logs:
        render = Pipeline.from_config({"version": 1, "formatter": formatter, **more}).build({}, paths=paths)
    return render.text, logs


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def _repo(tmp_path: Path) -> Path:
    """repo/ (git) with CLAUDE.md and CLAUDE.local.md at the root, services/api/CLAUDE.md, and src/ below it."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "Root rules.\n")
    _write(repo / "CLAUDE.local.md", "My sandbox is sbx-1.\n")
    _write(repo / "services" / "api" / "CLAUDE.md", "API rules.\n")
    (repo / "services" / "api" / "src").mkdir()
    return repo


def test_every_claude_md_from_the_root_down_local_after_checked_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Working in services/api/src: the root's CLAUDE.md, then its CLAUDE.local.md, then services/api's."""
    repo = _repo(tmp_path)
    text, logs = _claude(repo / "services" / "api" / "src", monkeypatch)
    assert text == "Root rules.\n\nMy sandbox is sbx-1.\n\nAPI rules."
    taken = [e["source"] for e in _events(logs, "source_loaded") if e.get("via") == "discover"]
    assert taken == [str(repo / "CLAUDE.md"), str(repo / "CLAUDE.local.md"), str(repo / "services/api/CLAUDE.md")]


def test_agents_md_is_read_in_a_folder_without_claude_md(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code reads AGENTS.md where a folder has no CLAUDE.md; beside a CLAUDE.md it is not read (but imported)."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "Root rules.\n@AGENTS.md\n")
    _write(repo / "AGENTS.md", "Shared rules.\n")
    _write(repo / "web" / "AGENTS.md", "Web rules.\n")
    _write(repo / "web" / "CLAUDE.local.md", "My web sandbox.\n")
    text, logs = _claude(repo / "web", monkeypatch)
    assert text == "Root rules.\nShared rules.\n\nWeb rules.\n\nMy web sandbox."
    taken = [e["source"] for e in _events(logs, "source_loaded") if e.get("via") == "discover"]
    assert taken == [str(repo / "CLAUDE.md"), str(repo / "web/AGENTS.md"), str(repo / "web/CLAUDE.local.md")]


def test_agents_md_stays_out_when_the_discovery_is_declared_without_fallbacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _git_init(tmp_path / "repo")
    _write(repo / "AGENTS.md", "Shared rules.\n")
    _write(repo / "CLAUDE.local.md", "Mine.\n")
    sources = [{"discover": {"names": ["CLAUDE.md", "CLAUDE.local.md"], "pick": "all"}}]
    assert _claude(repo, monkeypatch, sources=sources)[0] == "Mine."


def test_files_above_the_git_root_and_in_sibling_folders_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLAUDE.md above the repository and one in a sibling folder stay out (the walk is root → working folder)."""
    repo = _repo(tmp_path)
    _write(tmp_path / "CLAUDE.md", "Above the repository.\n")
    _write(repo / "services" / "web" / "CLAUDE.md", "Web rules.\n")
    text, _ = _claude(repo / "services" / "api", monkeypatch)
    assert text == "Root rules.\n\nMy sandbox is sbx-1.\n\nAPI rules."


def test_from_sets_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A discovery's `from` replaces the process's working folder (the config's own sources replace the preset's)."""
    repo = _repo(tmp_path)
    sources = [{"discover": {"names": ["CLAUDE.md", "CLAUDE.local.md"], "pick": "all", "from": "services/api"}}]
    text, _ = _claude(repo, monkeypatch, sources=sources)
    assert text == "Root rules.\n\nMy sandbox is sbx-1.\n\nAPI rules."


def test_an_import_is_rendered_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`@AGENTS.md` in CLAUDE.md: the file's text where the token was (the issue's done-when case)."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "# Project\n\n@AGENTS.md\n\nMore.\n")
    _write(repo / "AGENTS.md", "Run the tests.\n")
    text, logs = _claude(repo, monkeypatch)
    assert text == "# Project\n\nRun the tests.\n\nMore."
    [imported] = [e for e in _events(logs, "source_loaded") if e.get("via") == "import"]
    assert (imported["parent"], imported["url"]) == (str(repo / "CLAUDE.md"), str(repo / "AGENTS.md"))


def test_imports_are_relative_to_the_importing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """services/api/CLAUDE.md imports @docs/api.md: services/api/docs/api.md, not the working folder's docs/."""
    repo = _repo(tmp_path)
    _write(repo / "services" / "api" / "CLAUDE.md", "API rules.\n@docs/api.md\n")
    _write(repo / "services" / "api" / "docs" / "api.md", "Versioned endpoints.\n")
    _write(repo / "services" / "api" / "src" / "docs" / "api.md", "The wrong file.\n")
    text, _ = _claude(repo / "services" / "api" / "src", monkeypatch)
    assert text.endswith("API rules.\nVersioned endpoints.")


def test_a_missing_import_is_a_warning_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code drops a missing import silently; here the token stays and a warning names the file."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "See @docs/missing.md for more.\n")
    text, logs = _claude(repo, monkeypatch)
    assert text == "See @docs/missing.md for more."
    [skipped] = [e for e in _events(logs, "source_skipped") if e.get("via") == "import"]
    assert skipped["log_level"] == "warning"
    assert (skipped["reason"], skipped["name"], skipped["url"]) == (
        "not_found",
        "docs/missing.md",
        str(repo / "docs" / "missing.md"),
    )


def test_imports_go_five_hops_deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDE.md → 1 → … → 5 are inlined; the @6 in file 5 stays text, logged as import_depth."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "top @h1.md\n")
    for hop in range(1, 6):
        _write(repo / f"h{hop}.md", f"hop {hop} @h{hop + 1}.md\n")
    _write(repo / "h6.md", "hop 6\n")
    text, logs = _claude(repo, monkeypatch)
    assert text == "top hop 1 hop 2 hop 3 hop 4 hop 5 @h6.md"
    assert [e["reason"] for e in _events(logs, "source_skipped") if e.get("via") == "import"] == ["import_depth"]


def test_imports_in_code_are_not_evaluated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`@AGENTS.md` in a code span and in a fenced block stays as written (the docs: not evaluated in code)."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "AGENTS.md", "Imported.\n")
    body = "Use `@AGENTS.md` literally.\n\n```\n@AGENTS.md\n```\n"
    _write(repo / "CLAUDE.md", body)
    text, logs = _claude(repo, monkeypatch)
    assert text == body.rstrip()
    assert not [e for e in _events(logs, "source_loaded") if e.get("via") == "import"]


def test_html_comments_are_not_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A maintainer's `<!-- … -->` note is stripped (Claude Code hides HTML comments from the model)."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "<!-- maintainers: keep this short -->\nBe brief.\n")
    assert _claude(repo, monkeypatch)[0] == "\nBe brief."


def _rules(repo: Path) -> None:
    _write(repo / ".claude" / "rules" / "style.md", "Always: be brief.\n")
    _write(repo / ".claude" / "rules" / "lang" / "ts.md", '---\npaths:\n  - "src/**/*.ts"\n---\nTS: strict mode.\n')


def test_rules_without_paths_always_apply_and_with_paths_only_for_a_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.claude/rules/**/*.md`: style.md always; lang/ts.md (a subfolder) only when a src/**/*.ts path is in play.

    Rule files come after the CLAUDE.md files, in path order (lang/ts.md before style.md).
    """
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "Root rules.\n")
    _rules(repo)
    text, logs = _claude(repo, monkeypatch)
    assert text == "Root rules.\n\nAlways: be brief."
    [skipped] = [e for e in _events(logs, "source_skipped") if e["reason"] == "not_applicable"]
    assert (skipped["source"], skipped["log_level"]) == (str(repo / ".claude/rules/lang/ts.md"), "debug")
    text, _ = _claude(repo, monkeypatch, paths=["src/app/main.ts"])
    assert text == "Root rules.\n\nTS: strict mode.\n\nAlways: be brief."
    assert _claude(repo, monkeypatch, paths=["src/app/main.py"])[0] == "Root rules.\n\nAlways: be brief."


def test_rule_paths_are_relative_to_the_project_root_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Working in services/api (base_dir there too): rules are found at the root and matched against root paths."""
    repo = _repo(tmp_path)
    _rules(repo)
    api = repo / "services" / "api"
    text, _ = _claude(api, monkeypatch, paths=[str(repo / "src" / "app.ts")])
    assert text.endswith("API rules.\n\nTS: strict mode.\n\nAlways: be brief.")
    # services/api/src/x.ts is not under the root's src/: the rule does not apply.
    assert "TS: strict mode." not in _claude(api, monkeypatch, paths=["src/x.ts"])[0]


def test_a_subfolders_rules_are_relative_to_that_subfolder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """services/api/.claude/rules/db.md with paths `src/**`: it applies to services/api/src/…, read from there."""
    repo = _repo(tmp_path)
    api = repo / "services" / "api"
    _write(api / ".claude" / "rules" / "db.md", "---\npaths: src/**\n---\nUse the pool.\n")
    assert "Use the pool." in _claude(api, monkeypatch, paths=[str(api / "src" / "db.py")])[0]
    assert "Use the pool." not in _claude(api, monkeypatch, paths=[str(repo / "src" / "db.py")])[0]


def test_a_directory_or_fifo_among_the_rules_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO named like a rule is passed over at debug, without blocking the render."""
    repo = _git_init(tmp_path / "repo")
    rules = repo / ".claude" / "rules"
    rules.mkdir(parents=True)

    os.mkfifo(rules / "pipe.md")
    _write(rules / "ok.md", "Fine.\n")
    text, logs = _claude(repo, monkeypatch)
    assert text == "Fine."
    passed = [e for e in _events(logs, "candidate_passed") if e["candidate"] == str(rules / "pipe.md")]
    assert [(e["reason"], e["detail"]) for e in passed] == [("not_regular_file", "is a FIFO, not a regular file")]


def test_without_git_only_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `.git` anywhere: the preset's root markers find no root, and only the working folder is read."""
    _write(tmp_path / "CLAUDE.md", "Parent.\n")
    _write(tmp_path / "work" / "CLAUDE.md", "Here.\n")
    assert _claude(tmp_path / "work", monkeypatch)[0] == "Here."


def test_the_preset_defaults_give_way_to_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`imports: {max_depth: 1}` in the config keeps the preset's other import settings; HTML comments may stay."""
    repo = _git_init(tmp_path / "repo")
    _write(repo / "CLAUDE.md", "<!-- note --> @a.md\n")
    _write(repo / "a.md", "A @b.md\n")
    _write(repo / "b.md", "B\n")
    text, _ = _claude(repo, monkeypatch, imports={"max_depth": 1}, formatter={"strip_html_comments": False})
    assert text == "<!-- note --> A @b.md"


def test_comment_markers_under_the_claude_layout_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout strips HTML comments, so Gemini's import markers would vanish: a config error at its key."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config({"version": 1, "formatter": {"preset": "claude"}, "imports": {"markers": "comments"}})
    assert "imports.markers" in str(caught.value)
