"""LangChain: the ``langchain`` appender, and MemconfigMiddleware inside a real ``create_agent``."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from deepagents.middleware._utils import append_to_system_message
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from langgraph.checkpoint.memory import InMemorySaver
from structlog.testing import capture_logs
from support.models import RecordingModel

from memconfig import Config, ConfigError, Pipeline, SourceError
from memconfig.append import appender_for
from memconfig.append.langchain import LangchainAppender
from memconfig.install import install_hint
from memconfig.integrations.langchain import MemconfigMiddleware


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
    config = Config.from_mapping(
        {"version": 1, "appender": {"format": "langchain", "placement": "user", "cache_control": {}}}
    )
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


@pytest.mark.parametrize(
    ("placement", "turns", "expected"),
    [
        pytest.param(
            "system",
            [SystemMessage("You help."), HumanMessage("hi")],
            [("system", ["You help.", "\n\nMEMORY"]), ("human", ["hi"])],
            id="system-extended",
        ),
        pytest.param("system", [HumanMessage("hi")], [("system", ["MEMORY"]), ("human", ["hi"])], id="system-added"),
        pytest.param(
            "user",
            [SystemMessage("You help."), HumanMessage("hi")],
            [("system", ["You help."]), ("human", ["MEMORY"]), ("human", ["hi"])],
            id="user",
        ),
    ],
)
def test_appender_places_the_block_in_a_whole_conversation(
    placement: str, turns: list[BaseMessage], expected: list[tuple[str, list[str]]]
) -> None:
    """Given a message list, append() puts the block where the placement says and leaves the rest as it was."""
    placed = LangchainAppender(placement=placement).append(turns, _Block("MEMORY"))
    assert [(m.type, [b["text"] for b in m.content_blocks]) for m in placed] == expected
    assert LangchainAppender(placement=placement).append(turns, _Block("")) == turns


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
        "formatter": {"preset": "plain", "template": "{agent_memory}", "section": "{content}"},
        "appender": {"format": "langchain"},
    }
    sent = Pipeline.from_config(config).render(SystemMessage("You help."))
    assert isinstance(sent, SystemMessage)
    assert sent.content_blocks == [{"type": "text", "text": "You help."}, {"type": "text", "text": "\n\nalpha"}]


# -- the middleware, inside a real create_agent --------------------------------


def _answers() -> RecordingModel:
    return RecordingModel(messages=(AIMessage("ok") for _ in itertools.count()))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with one memory file, AGENTS.md, holding `v1`."""
    (tmp_path / "AGENTS.md").write_text("v1", encoding="utf-8")
    return tmp_path


def _config(project: Path, policy: str = "once", **extra: Any) -> dict[str, Any]:
    """A config over AGENTS.md; the layout is given here, so the test pins the middleware and not a preset."""
    layout = {"preset": "plain", "template": "[memory] {agent_memory}", "section": "{path}={content}"}
    appender = {"format": "langchain", **extra.pop("appender", {})}
    return {
        "version": 1,
        "base_dir": str(project),
        "sources": ["AGENTS.md"],
        "cache": {"policy": policy},
        "formatter": layout,
        "appender": appender,
        **extra,
    }


def _memory(content: str, separator: str = "\n\n") -> str:
    """The memory block's text block for AGENTS.md holding *content*."""
    return f"{separator}[memory] AGENTS.md={content}"


Invoke = Callable[[Any, Any, dict[str, Any]], dict[str, Any]]


def _sync(agent: Any, message: Any, config: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke(message, config)
    return result


def _async(agent: Any, message: Any, config: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = asyncio.run(agent.ainvoke(message, config))
    return result


@pytest.fixture(params=[pytest.param(_sync, id="invoke"), pytest.param(_async, id="ainvoke")])
def invoke(request: pytest.FixtureRequest) -> Invoke:
    """Run one turn of an agent: `invoke`, or `ainvoke` on a fresh event loop."""
    run: Invoke = request.param
    return run


def _turn(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _thread(name: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _agent(middleware: MemconfigMiddleware, model: RecordingModel, **extra: Any) -> Any:
    return create_agent(
        model=model,
        tools=extra.pop("tools", []),
        system_prompt="You help.",
        middleware=[middleware],
        checkpointer=extra.pop("checkpointer", None) or InMemorySaver(),
        **extra,
    )


def _edit(project: Path, text: str) -> None:
    """Change AGENTS.md, its size with it (a check by stat sees it whatever the clock's resolution)."""
    (project / "AGENTS.md").write_text(text, encoding="utf-8")


def test_system_message_holds_the_block_as_its_own_text_block(project: Path, invoke: Invoke) -> None:
    """The model is sent the agent's system prompt, then the memory block as a second text block."""
    model = _answers()
    invoke(_agent(MemconfigMiddleware.from_config(_config(project)), model), _turn("hi"), _thread())
    assert model.system().content_blocks == [
        {"type": "text", "text": "You help."},
        {"type": "text", "text": _memory("v1")},
    ]
    assert [type(m).__name__ for m in model.sent[0]] == ["SystemMessage", "HumanMessage"]


def test_revalidate_brings_an_edit_into_turn_two(project: Path, invoke: Invoke) -> None:
    """Under revalidate, a file edited between two turns of one thread is in turn two's system message."""
    model = _answers()
    agent = _agent(MemconfigMiddleware.from_config(_config(project, "revalidate")), model)
    invoke(agent, _turn("one"), _thread())
    _edit(project, "version two")
    with capture_logs() as logs:
        invoke(agent, _turn("two"), _thread())
    assert model.system(0).content_blocks[1]["text"] == _memory("v1")
    assert model.system(1).content_blocks[1]["text"] == _memory("version two")
    [loaded] = [e for e in logs if e["event"] == "source_loaded"]
    assert (loaded["source"], loaded["cache"]) == ("AGENTS.md", "refreshed")
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert loaded["render_id"] == built["render_id"] and built["refreshed"] == 1
    assert agent.get_state(_thread()).values["memory_contents"] == {"AGENTS.md": "version two"}


def test_revalidate_reads_nothing_when_nothing_changed(project: Path, invoke: Invoke) -> None:
    """Under revalidate, an unchanged file is not logged as loaded again on turn two and the block stays."""
    model = _answers()
    agent = _agent(MemconfigMiddleware.from_config(_config(project, "revalidate")), model)
    invoke(agent, _turn("one"), _thread())
    with capture_logs() as logs:
        invoke(agent, _turn("two"), _thread())
    assert [e["event"] for e in logs] == ["prompt_built"]
    assert logs[0]["revalidated"] == 1
    assert model.system(0).content_blocks == model.system(1).content_blocks


def test_once_keeps_turn_ones_content(project: Path, invoke: Invoke) -> None:
    """Under once, an edit between turns does not reach turn two: nothing is read, the thread keeps v1."""
    model = _answers()
    agent = _agent(MemconfigMiddleware.from_config(_config(project, "once")), model)
    invoke(agent, _turn("one"), _thread())
    _edit(project, "version two")
    with capture_logs() as logs:
        invoke(agent, _turn("two"), _thread())
    assert model.system(1).content_blocks[1]["text"] == _memory("v1")
    assert [e["event"] for e in logs] == ["prompt_built"]
    assert logs[0]["cache_hits"] == 1
    assert agent.get_state(_thread()).values["memory_contents"] == {"AGENTS.md": "v1"}


def test_a_second_thread_gets_its_own_load(project: Path, invoke: Invoke) -> None:
    """Each thread has its own state: a new thread loads (and sees the edit) while the first keeps its copy."""
    model = _answers()
    agent = _agent(MemconfigMiddleware.from_config(_config(project, "once")), model)
    invoke(agent, _turn("one"), _thread("a"))
    _edit(project, "version two")
    with capture_logs() as logs:
        invoke(agent, _turn("one"), _thread("b"))
    invoke(agent, _turn("two"), _thread("a"))
    [loaded] = [e for e in logs if e["event"] == "source_loaded"]
    assert loaded["cache"] == "miss"
    assert model.system(1).content_blocks[1]["text"] == _memory("version two")
    assert model.system(2).content_blocks[1]["text"] == _memory("v1")
    assert agent.get_state(_thread("b")).values["memory_contents"] == {"AGENTS.md": "version two"}


def test_state_keys_are_private_but_checkpointed(project: Path, invoke: Invoke) -> None:
    """The keys are in neither the input nor the output schema nor the result, but are in the checkpoint."""
    model = _answers()
    middleware = MemconfigMiddleware.from_config(_config(project, cache={"policy": "once", "state_key": "notes"}))
    agent = _agent(middleware, model)
    result = invoke(agent, _turn("hi"), _thread())
    for schema in (agent.get_input_jsonschema(), agent.get_output_jsonschema()):
        assert "messages" in schema["properties"]
        assert not {"notes", "notes_meta"} & set(schema["properties"])
    assert not {"notes", "notes_meta"} & set(result)
    values = agent.get_state(_thread()).values
    assert values["notes"] == {"AGENTS.md": "v1"}
    assert values["notes_meta"]["entries"][0]["key"] == "AGENTS.md"
    assert (middleware.state_key, middleware.meta_key, middleware.name) == (
        "notes",
        "notes_meta",
        "MemconfigMiddleware[notes]",
    )


def test_an_unchanged_turn_writes_no_state_update(project: Path) -> None:
    """before_agent returns only the keys a load changed: nothing for an unchanged `once` turn."""
    middleware = MemconfigMiddleware.from_config(_config(project, "once"))
    first = middleware.before_agent({"messages": []}, None)  # type: ignore[arg-type]
    assert first is not None and set(first) == {"memory_contents", "memory_contents_meta"}
    assert middleware.before_agent({"messages": [], **first}, None) is None  # type: ignore[arg-type]


def test_a_checkpointed_thread_resumes_in_a_new_process_from_its_state(project: Path, invoke: Invoke) -> None:
    """A fresh middleware (a new process) over the same checkpoints serves turn two from the state, reading nothing."""
    saver = InMemorySaver()
    first = _agent(MemconfigMiddleware.from_config(_config(project, "once")), _answers(), checkpointer=saver)
    invoke(first, _turn("one"), _thread())
    _edit(project, "version two")
    model = _answers()
    second = _agent(MemconfigMiddleware.from_config(_config(project, "once")), model, checkpointer=saver)
    with capture_logs() as logs:
        invoke(second, _turn("two"), _thread())
    assert [e["event"] for e in logs] == ["prompt_manifest", "prompt_built"]  # a block new to this process
    assert model.system().content_blocks[1]["text"] == _memory("v1")


@pytest.mark.parametrize(
    ("policy", "seen"),
    [pytest.param("once", "v1", id="once"), pytest.param("revalidate", "version two", id="revalidate")],
)
def test_a_model_call_resumed_elsewhere_builds_from_the_state(
    project: Path, invoke: Invoke, policy: str, seen: str
) -> None:
    """A run interrupted before the model and resumed by a fresh middleware injects what its policy gives.

    The load of the model call is written back to the checkpoint.
    """
    saver = InMemorySaver()
    stop = {"interrupt_before": ["model"], "checkpointer": saver}
    first = _agent(MemconfigMiddleware.from_config(_config(project, policy)), _answers(), **stop)
    invoke(first, _turn("one"), _thread())
    _edit(project, "version two")
    model = _answers()
    second = _agent(MemconfigMiddleware.from_config(_config(project, policy)), model, checkpointer=saver)
    invoke(second, None, _thread())
    assert model.system().content_blocks[1]["text"] == _memory(seen)
    assert second.get_state(_thread()).values["memory_contents"] == {"AGENTS.md": seen}


@tool
def look() -> str:
    """Look around."""
    return "nothing here"


def test_every_model_call_of_a_turn_gets_the_block_from_one_load(project: Path, invoke: Invoke) -> None:
    """A tool loop calls the model twice; both calls carry the block, and the turn loads and renders once."""
    script = [AIMessage("", tool_calls=[{"name": "look", "args": {}, "id": "call-1"}]), AIMessage("done")]
    model = RecordingModel(messages=iter(script))
    agent = _agent(MemconfigMiddleware.from_config(_config(project, "revalidate")), model, tools=[look])
    with capture_logs() as logs:
        invoke(agent, _turn("hi"), _thread())
    assert len(model.sent) == 2
    assert model.system(0).content_blocks == model.system(1).content_blocks
    assert model.system(1).content_blocks[1]["text"] == _memory("v1")
    assert [e["event"] for e in logs] == ["source_loaded", "prompt_manifest", "prompt_built"]


def test_placement_user_puts_the_block_before_the_first_user_turn(project: Path, invoke: Invoke) -> None:
    """`placement: user`: the system message is the agent's own; a user message with the block precedes the first turn.

    The message is added to each model call, not to the thread's history.
    """
    model = _answers()
    agent = _agent(MemconfigMiddleware.from_config(_config(project, appender={"placement": "user"})), model)
    invoke(agent, _turn("one"), _thread())
    invoke(agent, _turn("two"), _thread())
    sent = model.sent[1]
    assert [type(m).__name__ for m in sent] == [
        "SystemMessage",
        "HumanMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert sent[0].content_blocks == [{"type": "text", "text": "You help."}]
    assert sent[1].content_blocks == [{"type": "text", "text": _memory("v1", "")}]
    assert sent[2].content == "one"
    history = agent.get_state(_thread()).values["messages"]
    assert [m.content for m in history] == ["one", "ok", "two", "ok"]


def test_cache_control_marks_the_memory_block(project: Path, invoke: Invoke) -> None:
    """`appender.cache_control` tags the memory block, and only it, with cache_control (ttl included)."""
    model = _answers()
    appender = {"cache_control": {"type": "ephemeral", "ttl": "1h"}}
    invoke(_agent(MemconfigMiddleware.from_config(_config(project, appender=appender)), model), _turn("hi"), _thread())
    assert model.system().content_blocks == [
        {"type": "text", "text": "You help."},
        {"type": "text", "text": _memory("v1"), "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]


def test_a_missing_required_source_stops_the_run(project: Path, invoke: Invoke) -> None:
    """A required source that is not there raises SourceError out of invoke; the model is never called."""
    model = _answers()
    config = _config(project)
    config["sources"] = [{"url": "gone.md", "required": True}]
    agent = _agent(MemconfigMiddleware.from_config(config), model)
    with capture_logs() as logs, pytest.raises(SourceError, match=r"gone\.md"):
        invoke(agent, _turn("hi"), _thread())
    assert model.sent == []
    assert [e["event"] for e in logs] == ["source_skipped", "prompt_failed"]


def test_from_yaml_builds_the_middleware(project: Path, invoke: Invoke) -> None:
    """`from_yaml(path)` reads the config file; relative sources resolve against its folder."""
    path = project / "memconfig.yaml"
    config = _config(project)
    del config["base_dir"]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    model = _answers()
    invoke(_agent(MemconfigMiddleware.from_yaml(path), model), _turn("hi"), _thread())
    assert model.system().content_blocks[1]["text"] == _memory("v1")


def test_from_yaml_with_a_bad_config_names_the_file(tmp_path: Path) -> None:
    """A bad config is a ConfigError whose message starts with the file and names the key."""
    path = tmp_path / "memconfig.yaml"
    path.write_text("version: 1\ncache:\n  policy: sometimes\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        MemconfigMiddleware.from_yaml(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert "cache.policy" in str(caught.value)


def test_built_from_a_pipeline_uses_its_state_key(project: Path) -> None:
    """`MemconfigMiddleware(pipeline)` takes the pipeline's cache keys and the config's appender settings."""
    pipeline = Pipeline.from_config(_config(project, cache={"state_key": "mem"}, appender={"placement": "user"}))
    middleware = MemconfigMiddleware(pipeline)
    assert middleware.pipeline is pipeline
    assert (middleware.state_key, middleware.meta_key, middleware.appender.placement) == ("mem", "mem_meta", "user")
    assert "state_key='mem'" in repr(middleware)


_WITHOUT_LANGCHAIN = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("langchain", "langchain_core", "langgraph"):
            raise ImportError(f"No module named {name!r}")

sys.meta_path.insert(0, Refuse())
import memconfig.integrations
try:
    import memconfig.integrations.langchain
except ImportError as exc:
    print(exc)
"""


def test_import_without_langchain_says_what_to_install() -> None:
    """Importing the middleware without LangChain is an ImportError naming the command that installs the extra."""
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_LANGCHAIN], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert install_hint("langchain") in done.stdout


class _RunRecorder(BaseTracer):
    """A LangChain tracer that keeps every finished chain run (what LangSmith would be sent)."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        pass

    def _on_chain_end(self, run: Run) -> None:
        self.runs.append(run)


def test_traces_keep_the_hook_but_not_the_memory_files_text(project: Path) -> None:
    """The `before_agent` span is traced without its payload: memory files' text stays out of traces."""
    _edit(project, "private-note-v1")
    recorder = _RunRecorder()
    agent = _agent(MemconfigMiddleware.from_config(_config(project)), _answers())

    agent.invoke(_turn("hi"), {**_thread(), "callbacks": [recorder]})

    [hook] = [run for run in recorder.runs if run.name.endswith("before_agent")]
    assert "private-note-v1" not in f"{hook.inputs}{hook.outputs}"
    assert any("private-note-v1" in str(run.inputs) for run in recorder.runs if run.name == "model")  # it was sent


def test_middleware_closes_the_pipeline_it_built_and_not_one_it_was_given(project: Path) -> None:
    """Leaving ``with`` stops the watcher of the pipeline it built; a pipeline handed to it is the caller's to close."""
    with MemconfigMiddleware.from_config(_config(project, "watch")) as built:
        built.pipeline.build()
        assert built.pipeline.cache.watching is not None  # type: ignore[attr-defined]
    assert built.pipeline.cache.watching is None  # type: ignore[attr-defined]
    with Pipeline.from_config(_config(project, "watch")) as given:
        given.build()
        MemconfigMiddleware(given).close()
        assert given.cache.watching is not None  # type: ignore[attr-defined]
