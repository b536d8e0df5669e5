"""The appender stage: where the block goes relative to the system prompt."""

from __future__ import annotations

import pytest

from memconfig import Block, TextAppender

BLOCK = Block("MEMORY", "sha")


@pytest.mark.parametrize(
    ("system", "position", "expected"),
    [
        pytest.param("SYS", "append", "SYS\n\nMEMORY", id="append"),
        pytest.param("SYS", "prepend", "MEMORY\n\nSYS", id="prepend"),
        pytest.param(None, "append", "MEMORY", id="no-system"),
        pytest.param("", "append", "MEMORY", id="empty-system-counts-as-none"),
    ],
)
def test_block_placement(system: str | None, position: str, expected: str) -> None:
    """The block goes after (or before) the system prompt, a blank line between."""
    assert TextAppender(position=position).append(system, BLOCK) == expected


def test_custom_separator_and_empty_block() -> None:
    """The separator is configurable; an empty block leaves the system prompt as it was."""
    appender = TextAppender(separator="\n---\n")
    assert appender.append("SYS", BLOCK) == "SYS\n---\nMEMORY"
    assert appender.append("SYS", Block("", "sha")) == "SYS"


def test_bad_position_is_rejected() -> None:
    """Only append and prepend exist."""
    with pytest.raises(ValueError, match="position"):
        TextAppender(position="middle")
