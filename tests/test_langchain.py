"""LangChain: the ``langchain`` appender, and MemconfigMiddleware inside a real ``create_agent``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deepagents.middleware._utils import append_to_system_message
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from memconfig import Config, Pipeline
from memconfig.append import appender_for
from memconfig.append.langchain import LangchainAppender


class _Block:
    """Just what an appender reads of a Render."""

    def __init__(self, text: str) -> None:
        self.text = text


# -- the appender -------------------------------------------------------------


def test_appender_adds_the_block_as_its_own_text_block() -> None:
    """The existing blocks stay; the memory is one more text block, separated as deepagents separates it."""
    system = SystemMessage(
        content_blocks=[{"type": "text", "text": "You help."}, {"type": "text", "text": "Be brief."}]
    )
    sent = LangchainAppender().append(system, _Block("MEMORY"))
    assert sent is not None
    assert sent.content_blocks == [
        {"type": "text", "text": "You help."},
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "\n\nMEMORY"},
    ]
    assert system.content_blocks[-1]["text"] == "Be brief."  # the caller's message is not changed


@pytest.mark.parametrize(
    "system",
    [
        pytest.param(None, id="none"),
        pytest.param(SystemMessage("You help."), id="str-content"),
        pytest.param(
            SystemMessage(content_blocks=[{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]), id="blocks"
        ),
    ],
)
def test_appender_gives_the_shape_deepagents_gives(system: SystemMessage | None) -> None:
    """Content and content blocks equal those of deepagents' own helper for the same text."""
    ours = LangchainAppender().append(system, _Block("<agent_memory>x</agent_memory>"))
    theirs = append_to_system_message(system, "<agent_memory>x</agent_memory>")
    assert ours is not None
    assert (ours.content, ours.content_blocks) == (theirs.content, theirs.content_blocks)


def test_appender_takes_a_string_and_none() -> None:
    """A str is a system message's content; None gives a message holding only the block."""
    appender = LangchainAppender()
    from_str = appender.append("You help.", _Block("MEMORY"))
    from_none = appender.append(None, _Block("MEMORY"))
    assert from_str is not None and from_none is not None
    assert from_str.content_blocks == [{"type": "text", "text": "You help."}, {"type": "text", "text": "\n\nMEMORY"}]
    assert from_none.content_blocks == [{"type": "text", "text": "MEMORY"}]


def test_appender_leaves_the_message_unchanged_for_an_empty_block() -> None:
    """An empty block adds no content block; None stays None."""
    system = SystemMessage("You help.")
    appender = LangchainAppender(cache_control={"type": "ephemeral"})
    assert appender.append(system, _Block("")) is system
    assert appender.append(None, _Block("")) is None
    as_str = appender.append("You help.", _Block(""))
    assert as_str is not None and as_str.content_blocks == [{"type": "text", "text": "You help."}]


def test_appender_prepends_with_the_configured_separator() -> None:
    """`position: prepend` puts the block first, the separator after it."""
    appender = appender_for(
        "langchain", Config.from_mapping({"version": 1, "appender": {"position": "prepend", "separator": "\n---\n"}})
    )
    sent = appender.append(SystemMessage("You help."), _Block("MEMORY"))
    assert sent.content_blocks == [{"type": "text", "text": "MEMORY\n---\n"}, {"type": "text", "text": "You help."}]


@pytest.mark.parametrize(
    ("control", "expected"),
    [
        pytest.param({"type": "ephemeral"}, {"type": "ephemeral"}, id="ephemeral"),
        pytest.param({"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral", "ttl": "1h"}, id="with-ttl"),
    ],
)
def test_appender_marks_only_the_memory_block_for_caching(control: dict[str, str], expected: dict[str, str]) -> None:
    """`appender.cache_control` puts cache_control (with its ttl) on the memory block and on no other block."""
    config = Config.from_mapping({"version": 1, "appender": {"format": "langchain", "cache_control": control}})
    appender = appender_for("langchain", config)
    sent = appender.append(SystemMessage("You help."), _Block("MEMORY"))
    assert sent.content_blocks == [
        {"type": "text", "text": "You help."},
        {"type": "text", "text": "\n\nMEMORY", "cache_control": expected},
    ]


def test_appender_placement_user_puts_the_block_before_the_first_user_turn() -> None:
    """`placement: user`: the system message is left as it is; insert() adds a HumanMessage before the first one."""
    config = Config.from_mapping({"version": 1, "appender": {"placement": "user", "cache_control": {}}})
    appender = appender_for("langchain", config)
    system = SystemMessage("You help.")
    assert appender.append(system, _Block("MEMORY")) is system
    turns = [AIMessage("greeting"), HumanMessage("hi"), AIMessage("hello"), HumanMessage("again")]
    placed = appender.insert(turns, _Block("MEMORY"))
    assert [type(m).__name__ for m in placed] == [
        "AIMessage",
        "HumanMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert placed[1].content_blocks == [{"type": "text", "text": "MEMORY", "cache_control": {"type": "ephemeral"}}]
    assert placed[2:] == turns[1:] and len(turns) == 4  # the caller's list is not changed
    assert appender.insert([], _Block("MEMORY"))[0].content_blocks[0]["text"] == "MEMORY"
    assert appender.insert(turns, _Block("")) == turns


def test_appender_placement_system_inserts_nothing() -> None:
    """Under `placement: system`, insert() hands the turns back as they are."""
    turns = [HumanMessage("hi")]
    assert LangchainAppender().insert(turns, _Block("MEMORY")) == turns


def test_appender_repeats_its_last_message_for_an_unchanged_turn() -> None:
    """The same system message and the same block give the very same message object."""
    appender, system, block = LangchainAppender(), SystemMessage("You help."), _Block("MEMORY")
    first = appender.append(system, block)
    assert appender.append(system, block) is first
    assert appender.append(system, _Block("OTHER")) is not first


def test_appender_rejects_unknown_options() -> None:
    """A position or placement outside the schema's choices is a ValueError naming it."""
    with pytest.raises(ValueError, match="'middle'"):
        LangchainAppender(position="middle")
    with pytest.raises(ValueError, match="'assistant'"):
        LangchainAppender(placement="assistant")


def test_pipeline_renders_a_system_message(tmp_path: Path) -> None:
    """`appender.format: langchain` makes Pipeline.render return a SystemMessage holding the block."""
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    config: dict[str, Any] = {
        "version": 1,
        "base_dir": str(tmp_path),
        "sources": ["a.md"],
        "formatter": {"preset": "plain"},
        "appender": {"format": "langchain"},
    }
    sent = Pipeline.from_config(config).render(SystemMessage("You help."))
    assert isinstance(sent, SystemMessage)
    assert sent.content_blocks == [{"type": "text", "text": "You help."}, {"type": "text", "text": "\n\nalpha"}]
