"""Cursor's project rules as its documentation pins them, read with ``rules: cursor``.

Source: Cursor's documentation, "Rules" (docs.cursor.com/context/rules): a rule
in ``.cursor/rules/*.mdc`` is one of four types, chosen by its frontmatter —
**Always** (``alwaysApply: true``: in every request), **Auto Attached**
(``globs``: when a file matching them is referenced; a comma-separated string or
a list), **Agent Requested** (a ``description`` and no globs: the agent decides
to fetch it) and **Manual** (none of these: only when named with ``@ruleName``).
memconfig has no agent that picks rules by description, nor an ``@ruleName``
mention: an Agent Requested rule is logged as not applying; a Manual rule
applies (the row "Cursor: a .mdc with no frontmatter" of docs/conventions.md says **differs**).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.trees import write

from memconfig import Pipeline

MANUAL = (
    "docs/conventions.md, Cursor: a .mdc with no frontmatter — differs: always applied "
    "(Claude Code's rule for its rule files)"
)


def _render(project: Path, paths: list[str]) -> tuple[str, list[dict[str, object]]]:
    config = {
        "version": 1,
        "base_dir": str(project),
        "sources": [{"glob": ".cursor/rules/*.mdc", "rules": "cursor"}],
        "formatter": {"preset": "plain"},
    }
    with capture_logs() as logs:
        text = Pipeline.from_config(config).build({}, paths=[str(project / p) for p in paths]).text
    return text, logs


def _rule(project: Path, head: str, body: str = "The rule.") -> None:
    write(project / ".cursor" / "rules" / "rule.mdc", head + body + "\n")


def test_always_applies_to_every_request(tmp_path: Path) -> None:
    _rule(tmp_path, "---\nalwaysApply: true\n---\n")
    assert _render(tmp_path, [])[0] == "The rule."
    assert _render(tmp_path, ["docs/readme.md"])[0] == "The rule."


@pytest.mark.parametrize(
    "globs", ['"src/**/*.ts, src/**/*.tsx"', "src/**/*.ts,src/**/*.tsx", '["src/**/*.ts", "src/**/*.tsx"]']
)
def test_auto_attached_applies_when_a_matching_file_is_in_play(tmp_path: Path, globs: str) -> None:
    """A comma-separated string (quoted or as Cursor writes it, unquoted) or a list of globs."""
    _rule(tmp_path, f"---\nglobs: {globs}\nalwaysApply: false\n---\n")
    assert _render(tmp_path, ["src/ui/button.tsx"])[0] == "The rule."
    text, logs = _render(tmp_path, ["docs/readme.md"])
    assert text == ""
    (skipped,) = [e for e in logs if e["event"] == "source_skipped"]
    assert (skipped["reason"], skipped["log_level"]) == ("not_applicable", "debug")


def test_agent_requested_is_not_applied_and_says_why(tmp_path: Path) -> None:
    """No agent chooses rules by description here: it is left out, and the event quotes the description."""
    _rule(tmp_path, "---\ndescription: RPC service conventions\nalwaysApply: false\n---\n")
    text, logs = _render(tmp_path, ["src/rpc/server.ts"])
    assert text == ""
    (skipped,) = [e for e in logs if e["event"] == "source_skipped"]
    assert skipped["reason"] == "not_applicable"
    assert "'RPC service conventions'" in str(skipped["detail"])


@pytest.mark.xfail(strict=True, reason=MANUAL)
def test_manual_applies_only_when_named(tmp_path: Path) -> None:
    """A rule with none of the keys is Manual in Cursor: not in a request that does not name it."""
    _rule(tmp_path, "")
    assert _render(tmp_path, ["src/a.ts"])[0] == ""


def test_claude_code_keys_mean_nothing_to_cursor(tmp_path: Path) -> None:
    """`paths` is Claude Code's key: under Cursor's reading the rule has none of Cursor's keys."""
    _rule(tmp_path, '---\npaths: ["src/**"]\nalwaysApply: false\n---\n')
    assert _render(tmp_path, ["src/a.ts"])[0] == ""  # alwaysApply false and nothing else: not applied
