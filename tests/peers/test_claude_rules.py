"""Claude Code's ``.claude/rules`` as its documentation pins them, under ``preset: claude`` (``rules: claude``).

Source: "Manage Claude's memory", code.claude.com/docs/en/memory (the section on
``.claude/rules/``): "Rules without a ``paths`` field are loaded unconditionally
and apply to all files"; ``paths`` is the only frontmatter key the page names.
Cursor's keys (``globs``, ``alwaysApply``, ``description``) mean nothing there:
a rule that holds only them is loaded as any rule without ``paths`` is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline

FRONTMATTER = {
    "description only": "---\ndescription: API handlers\n---\n",
    "globs only": '---\nglobs: "src/**/*.py"\n---\n',
    "alwaysApply false": "---\nalwaysApply: false\n---\n",
    "Cursor's three keys": '---\ndescription: API\nglobs: "src/**/*.py"\nalwaysApply: false\n---\n',
}


def _render(cwd: Path, monkeypatch: pytest.MonkeyPatch, paths: list[str], **formatter: Any) -> str:
    monkeypatch.chdir(cwd)
    config = {"version": 1, "formatter": {"preset": "claude", **formatter}}
    with capture_logs():
        return Pipeline.from_config(config).build({}, paths=paths).text


@pytest.mark.parametrize("head", list(FRONTMATTER.values()), ids=list(FRONTMATTER))
def test_a_rule_without_paths_applies_whatever_cursor_keys_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: str
) -> None:
    repo = git_init(tmp_path / "repo")
    write(repo / "CLAUDE.md", "Root.\n")
    write(repo / ".claude" / "rules" / "api.md", head + "API: validate input.\n")
    assert _render(repo, monkeypatch, ["docs/readme.md"]) == "Root.\n\nAPI: validate input."


def test_paths_alone_decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = git_init(tmp_path / "repo")
    write(repo / "CLAUDE.md", "Root.\n")
    write(repo / ".claude" / "rules" / "ts.md", '---\npaths: ["src/**/*.ts"]\nalwaysApply: true\n---\nTS: strict.\n')
    assert _render(repo, monkeypatch, ["docs/readme.md"]) == "Root."  # alwaysApply is Cursor's: not read
    assert _render(repo, monkeypatch, ["src/app/main.ts"]) == "Root.\n\nTS: strict."


def _rules_config(folder: Path, dialect: str) -> dict[str, Any]:
    return {
        "version": 1,
        "base_dir": str(folder),
        "formatter": {"preset": "plain"},
        "sources": [{"glob": "rules/*.md", "rules": dialect}],
    }


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        ("claude", "Described."),  # no paths: it applies
        ("cursor", ""),  # description only: an agent-requested Cursor rule, not applied
        ("frontmatter", ""),  # either tool's keys: the description makes it one
    ],
)
def test_each_dialect_reads_its_own_tool_keys(tmp_path: Path, dialect: str, expected: str) -> None:
    write(tmp_path / "rules" / "a.md", "---\ndescription: when asked\n---\nDescribed.\n")
    with capture_logs():
        assert Pipeline.from_config(_rules_config(tmp_path, dialect)).build({}).text == expected


def test_cursor_rules_ignore_claude_paths(tmp_path: Path) -> None:
    write(tmp_path / "rules" / "a.md", '---\npaths: ["src/**"]\n---\nNo Cursor key.\n')
    with capture_logs():
        render = Pipeline.from_config(_rules_config(tmp_path, "cursor")).build({}, paths=[str(tmp_path / "x.md")])
    assert render.text == "No Cursor key."  # no globs, no alwaysApply: Cursor's keys say nothing, it applies


def test_a_path_outside_the_project_root_is_reported_as_such(tmp_path: Path) -> None:
    """A `--path` that is not in the rule's project is said to be outside it, not "none given"."""
    project = tmp_path / "project"
    write(project / "rules" / "ts.md", '---\nglobs: "src/**/*.ts"\n---\nTS.\n')
    config = {**_rules_config(project, "cursor")}
    with capture_logs() as logs:
        assert Pipeline.from_config(config).build({}, paths=[str(tmp_path / "elsewhere" / "a.ts")]).text == ""
    (skip,) = [e for e in logs if e["event"] == "source_skipped"]
    assert skip["detail"] == (
        f"no path in play matches its patterns (src/**/*.ts): the one given is outside its project root {project}"
    )
