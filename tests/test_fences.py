"""memconfig.fences: one reading of fenced code, shared by imports (no token inside) and comment stripping (kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from support.trees import git_init, write

from memconfig import Pipeline
from memconfig.fences import closes, opens


@pytest.mark.parametrize(
    ("line", "fence"),
    [
        ("```", "```"),
        ("~~~~ python", "~~~~"),
        ("   ```js", "```"),  # three spaces: still a fence
        ("    ```", None),  # four: indented code, not a fence
        ("> ```", "```"),  # inside a block quote
        ("> > ~~~", "~~~"),
        ("``` x ` y", None),  # a backtick in a backtick fence's info string
        ("``", None),
        ("text ```", None),
    ],
)
def test_what_opens_a_fence(line: str, fence: str | None) -> None:
    assert opens(line) == fence


@pytest.mark.parametrize(
    ("line", "fence", "closed"),
    [
        ("```", "```", True),
        ("````  ", "```", True),  # as long or longer, blanks after
        ("```", "````", False),  # shorter
        ("~~~", "```", False),  # the other character
        ("``` x", "```", False),  # text after
        ("> ```", "```", True),
    ],
)
def test_what_closes_a_fence(line: str, fence: str, closed: bool) -> None:
    assert closes(line, fence) is closed


def test_imports_and_comments_read_a_quoted_fence_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under preset claude, code in a block quote keeps its comment and its @path stays text: one reading."""
    repo = git_init(tmp_path / "repo")
    write(repo / "other.md", "Imported.\n")
    write(repo / "CLAUDE.md", "> ```\n> <!-- kept --> @other.md\n> ```\n<!-- gone -->\n@other.md\n")
    monkeypatch.chdir(repo)
    with capture_logs():
        text = Pipeline.from_config({"version": 1, "formatter": {"preset": "claude"}}).build({}).text
    assert text == "> ```\n> <!-- kept --> @other.md\n> ```\n\nImported."
