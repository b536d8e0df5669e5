"""The appender registry: a read-only view of the output shapes, each imported when first asked for."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import structlog
import yaml
from pydantic import TypeAdapter
from structlog.testing import capture_logs
from support.cli import memconfig as run_cli

import memconfig
import memconfig.append
import memconfig.registry
from memconfig import APPENDERS, Block, Config, ConfigError, Pipeline, Render, TextAppender
from memconfig.append import AppenderEntry, appender_for
from memconfig.append.anthropic import AnthropicAppender
from memconfig.append.json import JSONAppender
from memconfig.append.openai import OpenAIAppender
from memconfig.cli import main
from memconfig.install import install_hint
from memconfig.registry import appenders


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    return tmp_path


def _config(project: Path, **extra: Any) -> dict[str, Any]:
    return {"version": 1, "base_dir": str(project), "sources": ["a.md"], "formatter": {"preset": "plain"}, **extra}


class Recorder:
    """A user's appender: keeps what it was given and hands back a message list."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, Render]] = []

    def append(self, system: Any, render: Render) -> list[dict[str, str]]:
        self.got.append((system, render))
        return [{"role": "system", "content": render.text}]


@pytest.fixture
def with_missing_extra() -> Iterator[None]:
    """The registry with one more entry, whose module is not installed."""
    memconfig.register("appenders", "fake", "no_such_module_xyz:Thing", extra="openai")
    yield
    appenders.unregister("fake")


def test_table_is_read_only_and_holds_text() -> None:
    """APPENDERS is a read-only mapping with `text`; it cannot be written to (names are added by `register`)."""
    assert isinstance(APPENDERS, Mapping)
    assert APPENDERS is memconfig.append.APPENDERS is memconfig.registry.APPENDERS
    assert "text" in APPENDERS
    assert isinstance(APPENDERS["text"], AppenderEntry)
    with pytest.raises(TypeError):
        APPENDERS["evil"] = AppenderEntry("os:system")  # type: ignore[index]


def test_text_entry_builds_a_configured_text_appender() -> None:
    """`appender_for("text", config)` gives a TextAppender with the config's separator and position."""
    config = Config.from_mapping({"version": 1, "appender": {"separator": " | ", "position": "prepend"}})
    appender = appender_for("text", config)
    assert isinstance(appender, TextAppender)
    assert (appender.separator, appender.position) == (" | ", "prepend")


def test_unknown_name_lists_the_choices() -> None:
    """An unknown appender name is a ConfigError that lists every name in the table."""
    with pytest.raises(
        ConfigError, match=r"'openai_messages'.*choose one of: anthropic, json, .*openai, text"
    ) as caught:
        appender_for("openai_messages", Config(version=1))
    assert caught.value.exit_code == 2


@pytest.mark.usefixtures("with_missing_extra")
def test_missing_dependency_names_the_extra_to_install() -> None:
    """An entry whose module cannot be imported raises a ConfigError naming the command that installs its extra."""
    with pytest.raises(ConfigError, match=re.escape(install_hint("openai"))) as caught:
        appender_for("fake", Config(version=1))
    assert "'fake'" in str(caught.value)


@pytest.mark.usefixtures("with_missing_extra")
def test_missing_dependency_fails_when_the_pipeline_is_built(project: Path) -> None:
    """A config asking for an entry whose package is missing fails at `from_config`, not mid-render."""
    with pytest.raises(ConfigError, match=re.escape(install_hint("openai"))):
        Pipeline.from_config(_config(project, appender={"format": "fake"}))


def test_unknown_format_in_config_is_a_config_error(project: Path) -> None:
    """`appender.format` is validated against the table; the error names the key path and the choices."""
    with pytest.raises(ConfigError, match=r"appender\.format: .*'nope'.*text"):
        Pipeline.from_config(_config(project, appender={"format": "nope"}))


def test_cli_validate_rejects_an_unknown_format(tmp_path: Path) -> None:
    """`memconfig validate -c FILE` exits 2 naming `appender.format` for an unknown format."""
    path = tmp_path / "memconfig.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "sources": [], "appender": {"format": "nope"}}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "validate", "-c", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "appender.format" in done.stderr and "nope" in done.stderr


def test_user_appender_gets_the_render(project: Path) -> None:
    """`render(format=obj)` hands obj the system and the Render of that very render, and returns its result."""
    recorder = Recorder()
    with capture_logs() as logs:
        result = Pipeline.from_config(_config(project)).render("SYS", {}, format=recorder)
    assert result == [{"role": "system", "content": "alpha"}]
    [(system, render)] = recorder.got
    assert system == "SYS"
    assert isinstance(render, Render) and render.text == "alpha"
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert built["render_id"] == render.render_id


def test_user_appender_under_arender(project: Path) -> None:
    """`arender(format=obj)` gives obj the Render too."""
    recorder = Recorder()
    result = asyncio.run(Pipeline.from_config(_config(project)).arender(None, {}, format=recorder))
    assert result == [{"role": "system", "content": "alpha"}]
    assert recorder.got[0][1].text == "alpha"


@pytest.mark.parametrize(
    "format",
    [pytest.param("nope", id="unknown"), pytest.param("TEXT", id="wrong-case")],
)
def test_render_with_an_unknown_format_name_fails(project: Path, format: str) -> None:
    """`render(format=NAME)` with a name not in the table raises ConfigError listing the choices."""
    with pytest.raises(ConfigError, match=r"choose one of: anthropic, json, .*openai, text"):
        Pipeline.from_config(_config(project)).render("SYS", {}, format=format)


def test_format_name_uses_the_configs_appender_settings(project: Path) -> None:
    """`render(format="text")` builds the text appender from the pipeline's config."""
    pipeline = Pipeline.from_config(_config(project, appender={"separator": " | ", "position": "prepend"}))
    assert pipeline.render("SYS", {}, format="text") == "alpha | SYS"
    assert pipeline.render("SYS", {}) == "alpha | SYS"


# -- the SDK shapes: openai, anthropic, json ----------------------------------------------------------------------

BLOCK = Block("MEMORY", "sha")
EMPTY = Block("", "sha")
OPENAI_MESSAGES = TypeAdapter(list[openai.types.chat.ChatCompletionMessageParam])
ANTHROPIC_SYSTEM = TypeAdapter(list[anthropic.types.TextBlockParam])
ANTHROPIC_MESSAGES = TypeAdapter(list[anthropic.types.MessageParam])
CHAT_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-test",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
}
MESSAGE_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def _plain(value: Any) -> Any:
    """What pydantic validated, its lazy iterables (the SDKs type content as ``Iterable``) made lists, so validated."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return [_plain(item) for item in value]


def assert_sdk_type(adapter: TypeAdapter[Any], value: Any) -> None:
    """*value* validates as the SDK's own type, and nothing in it is a key the type does not have."""
    assert _plain(adapter.validate_python(value)) == value


def sent_body(http: Any, call: Callable[[Any], object]) -> dict[str, Any]:
    """The JSON body an SDK client sends when *call* uses it: a real request, to a transport standing in for the API.

    *http* is the HTTP library the SDK is built on (``httpx`` for openai, ``httpx2`` for anthropic).
    """
    bodies: list[dict[str, Any]] = []

    def answer(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        reply = MESSAGE_REPLY if request.url.path.endswith("/messages") else CHAT_REPLY
        return http.Response(200, json=reply)

    with http.Client(transport=http.MockTransport(answer)) as client:
        call(client)
    [body] = bodies
    return body


def openai_sent(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The body ``client.chat.completions.create(**kwargs, model=...)`` sends."""

    def call(http: Any) -> object:
        client = openai.OpenAI(api_key="sk-test", base_url="http://api.invalid/v1", http_client=http, max_retries=0)
        return client.chat.completions.create(**kwargs, model="gpt-test")

    return sent_body(httpx, call)


def anthropic_sent(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The body ``client.messages.create(**kwargs, model=..., max_tokens=...)`` sends (with a user turn if none)."""

    def call(http: Any) -> object:
        client = anthropic.Anthropic(api_key="sk-test", base_url="http://api.invalid", http_client=http, max_retries=0)
        turns: dict[str, Any] = {} if "messages" in kwargs else {"messages": TURN}
        return client.messages.create(**kwargs, **turns, model="claude-test", max_tokens=16)

    return sent_body(httpx2, call)


TURN = [{"role": "user", "content": "hi"}]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "SYS"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "user", "content": "again"},
]


@pytest.mark.parametrize(
    ("messages", "options", "expected"),
    [
        pytest.param(None, {}, [{"role": "system", "content": "MEMORY"}], id="none"),
        pytest.param("", {}, [{"role": "system", "content": "MEMORY"}], id="empty-system"),
        pytest.param("SYS", {}, [{"role": "system", "content": "SYS\n\nMEMORY"}], id="str"),
        pytest.param(
            "SYS", {"role": "developer"}, [{"role": "developer", "content": "SYS\n\nMEMORY"}], id="str-developer"
        ),
        pytest.param(
            "SYS",
            {"position": "prepend", "separator": "\n---\n"},
            [{"role": "system", "content": "MEMORY\n---\nSYS"}],
            id="prepend-separator",
        ),
        pytest.param(
            CONVERSATION,
            {},
            [{"role": "system", "content": "SYS\n\nMEMORY"}, *CONVERSATION[1:]],
            id="extends-the-system-message",
        ),
        pytest.param(
            [{"role": "user", "content": "hi"}],
            {"role": "developer"},
            [{"role": "developer", "content": "MEMORY"}, {"role": "user", "content": "hi"}],
            id="inserts-one-at-the-front",
        ),
        pytest.param(
            [
                {"role": "user", "content": "hi"},
                {"role": "developer", "content": "DEV"},
                {"role": "system", "content": "S"},
            ],
            {},
            [
                {"role": "user", "content": "hi"},
                {"role": "developer", "content": "DEV\n\nMEMORY"},
                {"role": "system", "content": "S"},
            ],
            id="the-first-developer-or-system-message-only",
        ),
        pytest.param(
            [{"role": "system", "content": [{"type": "text", "text": "SYS"}]}],
            {"separator": " | "},
            [{"role": "system", "content": [{"type": "text", "text": "SYS"}, {"type": "text", "text": "MEMORY"}]}],
            id="parts-get-a-part-of-their-own",
        ),
        pytest.param(
            [{"role": "developer", "content": [{"type": "text", "text": "SYS"}]}],
            {"position": "prepend"},
            [{"role": "developer", "content": [{"type": "text", "text": "MEMORY"}, {"type": "text", "text": "SYS"}]}],
            id="parts-prepend",
        ),
        pytest.param(
            CONVERSATION,
            {"placement": "user"},
            [CONVERSATION[0], {"role": "user", "content": "MEMORY"}, *CONVERSATION[1:]],
            id="user-before-the-first-user-turn",
        ),
        pytest.param(
            "SYS",
            {"placement": "user", "role": "developer"},
            [{"role": "developer", "content": "SYS"}, {"role": "user", "content": "MEMORY"}],
            id="user-with-no-turn-yet",
        ),
    ],
)
def test_openai_messages(messages: Any, options: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    """The block joins the first system/developer message, or a new one, or a user message before the first turn."""
    before = copy.deepcopy(messages)
    got = OpenAIAppender(**options).append(messages, BLOCK)
    assert got == expected
    assert messages == before  # the caller's list and messages are as they were
    assert got is not messages
    assert_sdk_type(OPENAI_MESSAGES, got)
    assert openai_sent({"messages": got})["messages"] == expected


def test_openai_keeps_untouched_messages_and_copies_the_changed_one() -> None:
    """Messages the block does not go into are the caller's objects; the one it goes into is a new dict."""
    messages = copy.deepcopy(CONVERSATION)
    got = OpenAIAppender().append(messages, BLOCK)
    assert got[0] is not messages[0] and messages[0]["content"] == "SYS"
    assert all(a is b for a, b in zip(got[1:], messages[1:], strict=True))


@pytest.mark.parametrize(
    "messages",
    [pytest.param(None, id="none"), pytest.param("SYS", id="str"), pytest.param(CONVERSATION, id="list")],
)
@pytest.mark.parametrize("placement", ["system", "user"])
def test_openai_empty_block_changes_nothing(messages: Any, placement: str) -> None:
    """An empty block leaves the messages as they were (a str system prompt is still made a message)."""
    got = OpenAIAppender(placement=placement).append(messages, EMPTY)
    expected = [] if messages is None else [{"role": "system", "content": "SYS"}] if messages == "SYS" else CONVERSATION
    assert got == expected


def test_openai_rejects_content_that_is_neither_text_nor_parts() -> None:
    """A message whose content is not a string or a list of parts is a TypeError naming the type."""
    with pytest.raises(TypeError, match="string or a list of parts, not int"):
        OpenAIAppender().append([{"role": "system", "content": 3}], BLOCK)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"placement": "nowhere"}, "placement", id="placement"),
        pytest.param({"role": "assistant"}, "role", id="role"),
        pytest.param({"position": "middle"}, "position", id="position"),
    ],
)
def test_openai_bad_arguments(options: dict[str, Any], message: str) -> None:
    """The constructor says which argument is wrong."""
    with pytest.raises(ValueError, match=message):
        OpenAIAppender(**options)


CACHED = {"type": "text", "text": "MEMORY", "cache_control": {"type": "ephemeral"}}
CACHED_1H = {"type": "text", "text": "MEMORY", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
MEMORY = {"type": "text", "text": "MEMORY"}
SYS = {"type": "text", "text": "SYS"}


@pytest.mark.parametrize(
    ("system", "options", "expected"),
    [
        pytest.param(None, {}, [MEMORY], id="none"),
        pytest.param("", {}, [MEMORY], id="empty-str"),
        pytest.param("SYS", {}, [SYS, MEMORY], id="str"),
        pytest.param([SYS], {"position": "prepend"}, [MEMORY, SYS], id="blocks-prepend"),
        pytest.param("SYS", {"cache_control": {"type": "ephemeral"}}, [SYS, CACHED], id="cache-control"),
        pytest.param(
            [SYS], {"cache_control": {"type": "ephemeral", "ttl": "1h"}}, [SYS, CACHED_1H], id="cache-control-ttl"
        ),
    ],
)
def test_anthropic_system_blocks(system: Any, options: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    """`system` becomes a list of text blocks with the memory as its own block, cache_control on it alone."""
    before = copy.deepcopy(system)
    got = AnthropicAppender(**options).append(system, BLOCK)
    assert got == expected
    assert system == before
    assert got is not system
    assert_sdk_type(ANTHROPIC_SYSTEM, got)
    assert anthropic_sent({"system": got})["system"] == expected


def test_anthropic_cache_control_is_a_fresh_dict_each_time() -> None:
    """A caller changing one result's cache_control does not change the next."""
    appender = AnthropicAppender(cache_control={"type": "ephemeral"})
    first = appender.append(None, BLOCK)
    first[0]["cache_control"]["ttl"] = "1h"
    assert appender.append(None, BLOCK) == [CACHED]


@pytest.mark.parametrize(
    ("request_", "options", "expected"),
    [
        pytest.param({}, {}, {"system": [MEMORY]}, id="system-empty-request"),
        pytest.param(
            {"system": "SYS", "messages": [{"role": "user", "content": "hi"}], "stop_sequences": ["END"]},
            {"cache_control": {"type": "ephemeral"}},
            {"system": [SYS, CACHED], "messages": [{"role": "user", "content": "hi"}], "stop_sequences": ["END"]},
            id="system-keeps-the-rest",
        ),
        pytest.param(
            {"system": "SYS", "messages": [{"role": "user", "content": "hi"}]},
            {"placement": "user", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {
                "system": "SYS",
                "messages": [{"role": "user", "content": [CACHED_1H]}, {"role": "user", "content": "hi"}],
            },
            id="user-before-the-first-turn",
        ),
        pytest.param(
            {"system": [SYS]},
            {"placement": "user"},
            {"system": [SYS], "messages": [{"role": "user", "content": [MEMORY]}]},
            id="user-with-no-turn-yet",
        ),
    ],
)
def test_anthropic_request(request_: dict[str, Any], options: dict[str, Any], expected: dict[str, Any]) -> None:
    """Given the request's keyword arguments, the appender gives new ones: blocks in system, or a user turn."""
    before = copy.deepcopy(request_)
    got = AnthropicAppender(**options).append(request_, BLOCK)
    assert got == expected
    assert request_ == before
    if "messages" in got:
        assert_sdk_type(ANTHROPIC_MESSAGES, got["messages"])
    sent = anthropic_sent(got)
    assert sent == {"messages": TURN, **got, "model": "claude-test", "max_tokens": 16}


@pytest.mark.parametrize(
    "system",
    [pytest.param(None, id="none"), pytest.param("SYS", id="str"), pytest.param({"system": "SYS"}, id="request")],
)
def test_anthropic_empty_block_adds_nothing(system: Any) -> None:
    """An empty block adds no block: an empty text block is one the API refuses."""
    got = AnthropicAppender(cache_control={"type": "ephemeral"}).append(system, EMPTY)
    assert got == {None: [], "SYS": [SYS]}.get(system) if not isinstance(system, dict) else got == {"system": [SYS]}
    assert AnthropicAppender(placement="user").append({"system": "SYS"}, EMPTY) == {"system": "SYS"}


def test_anthropic_user_placement_needs_the_request() -> None:
    """Under placement user, a bare system prompt has no messages for the block: a ConfigError says what to pass."""
    with pytest.raises(ConfigError, match=r"placement: user .*'messages'") as caught:
        AnthropicAppender(placement="user").append("SYS", BLOCK)
    assert caught.value.exit_code == 2


def test_appenders_show_their_settings() -> None:
    """Each appender's repr names its settings."""
    assert repr(OpenAIAppender(role="developer")) == (
        "OpenAIAppender(separator='\\n\\n', position='append', placement='system', role='developer')"
    )
    assert repr(AnthropicAppender(cache_control={"type": "ephemeral"})) == (
        "AnthropicAppender(position='append', placement='system', cache_control={'type': 'ephemeral'})"
    )
    assert repr(JSONAppender()) == "JSONAppender()"


def test_json_is_the_render_as_data(project: Path) -> None:
    """The json appender gives the block, its sha256, the render id, the counts and every source's record."""
    (project / "b.md").write_text("beta", encoding="utf-8")
    config = _config(project, sources=["a.md", "b.md", "missing.md"])
    render = Pipeline.from_config(config).build({})
    data = JSONAppender().append("ignored", render)
    assert list(data) == ["text", "sha256", "render_id", "counts", "sources"]
    assert data["text"] == render.text == "alpha\n\nbeta"
    assert data["sha256"] == hashlib.sha256(render.text.encode()).hexdigest() == render.sha256
    assert data["render_id"] == render.render_id
    assert data["counts"] == dict(render.counts) and list(data["counts"]) == sorted(render.counts)
    assert [s["source"] for s in data["sources"]] == ["a.md", "b.md", "missing.md"]
    assert data["sources"][2] == {
        "name": "missing.md",
        "source": "missing.md",
        "url": str(project / "missing.md"),
        "status": "skipped",
        "reason": "not_found",
        "detail": "no such file",
        "chars": 0,
        "sha256": None,
        "parent": None,
        "via": None,
        "notes": [],
    }
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(
    ("format", "expected"),
    [
        pytest.param("openai", [{"role": "system", "content": "SYS\n\nalpha"}], id="openai"),
        pytest.param("anthropic", [SYS, {"type": "text", "text": "alpha"}], id="anthropic"),
    ],
)
def test_pipeline_renders_in_an_sdk_shape(project: Path, format: str, expected: list[dict[str, Any]]) -> None:
    """`Pipeline.render(system, format=NAME)` and `arender` give that SDK's shape."""
    pipeline = Pipeline.from_config(_config(project))
    assert pipeline.render("SYS", {}, format=format) == expected
    assert asyncio.run(pipeline.arender("SYS", {}, format=format)) == expected


def test_pipeline_uses_the_configs_format_and_settings(project: Path) -> None:
    """`appender.format: openai` with role and placement makes `render()` give those messages."""
    config = _config(project, appender={"format": "openai", "role": "developer", "placement": "user"})
    got = Pipeline.from_config(config).render([{"role": "user", "content": "hi"}], {})
    assert got == [{"role": "user", "content": "alpha"}, {"role": "user", "content": "hi"}]
    config = _config(project, appender={"format": "anthropic", "cache_control": {"ttl": "5m"}})
    got = Pipeline.from_config(config).render(None, {})
    assert got == [{"type": "text", "text": "alpha", "cache_control": {"type": "ephemeral", "ttl": "5m"}}]


def test_printable_entries_have_output() -> None:
    """Every entry the CLI can print builds an appender with `output`; the SDK shapes and json are printable."""
    printable = {name for name, entry in APPENDERS.items() if entry.printable}
    assert printable == {"text", "json", "openai", "anthropic"}
    for name in printable:
        assert callable(getattr(appender_for(name, Config(version=1)), "output", None)), name


# -- settings that make no sense with the configured format -------------------------------------------------------


@pytest.mark.parametrize(
    ("appender", "path", "applies_to"),
    [
        pytest.param(
            {"placement": "user"}, "appender.placement", "anthropic, langchain, openai", id="placement-user-text"
        ),
        pytest.param({"format": "json", "placement": "user"}, "appender.placement", "anthropic", id="placement-json"),
        pytest.param({"format": "anthropic", "role": "developer"}, "appender.role", "openai", id="role-anthropic"),
        pytest.param({"role": "developer"}, "appender.role", "openai", id="role-text"),
        pytest.param(
            {"format": "openai", "cache_control": {}}, "appender.cache_control", "anthropic", id="cache-openai"
        ),
        pytest.param({"cache_control": {"ttl": "1h"}}, "appender.cache_control", "anthropic", id="cache-text"),
        pytest.param(
            {"format": "anthropic", "separator": "--"}, "appender.separator", "openai, text", id="sep-anthropic"
        ),
        pytest.param({"format": "json", "position": "prepend"}, "appender.position", "anthropic", id="position-json"),
    ],
)
def test_a_setting_the_format_ignores_is_a_config_error(appender: dict[str, Any], path: str, applies_to: str) -> None:
    """A setting the configured format does not use, set to other than its default, fails at its key path."""
    with pytest.raises(ConfigError) as caught:
        Config.from_mapping({"version": 1, "appender": appender})
    [problem] = caught.value.problems
    assert problem.path == path
    assert problem.message.startswith(f"has no effect with format '{appender.get('format', 'text')}'")
    assert applies_to in problem.message


@pytest.mark.parametrize(
    "appender",
    [
        pytest.param({"placement": "system", "role": "system", "cache_control": None}, id="defaults-written-out"),
        pytest.param({"format": "openai", "role": "developer", "placement": "user", "separator": "|"}, id="openai"),
        pytest.param({"format": "anthropic", "placement": "user", "cache_control": {"ttl": "1h"}}, id="anthropic"),
    ],
)
def test_settings_the_format_uses_are_accepted(appender: dict[str, Any]) -> None:
    """Defaults written out, and the settings a format honours, are valid."""
    Config.from_mapping({"version": 1, "appender": appender})


# -- the CLI ------------------------------------------------------------------------------------------------------


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[int, str, str]]:
    """Run ``memconfig.cli.main`` in this process: (exit code, stdout, stderr); structlog reset after."""
    for name in list(os.environ):
        if name.upper().startswith("MEMCONFIG_"):
            monkeypatch.delenv(name)

    def invoke(*args: str) -> tuple[int, str, str]:
        try:
            code = main(["render", *args, "--log-level", "error"])
        except SystemExit as exc:
            code = exc.code  # type: ignore[assignment]
        finally:
            structlog.reset_defaults()
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return invoke


def _config_file(project: Path, **appender: Any) -> str:
    (project / "a.md").write_text("alpha · ü\n", encoding="utf-8")
    data = {"version": 1, "sources": ["a.md"], "formatter": {"preset": "plain"}}
    if appender:
        data["appender"] = appender
    path = project / "memconfig.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def test_cli_text_is_the_prompt_exactly(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """`--format text` prints what `render` printed before: the prompt, no newline added."""
    config = _config_file(project)
    assert cli("-c", config, "--system", "SYS", "--format", "text") == (0, "SYS\n\nalpha · ü", "")
    assert cli("-c", config, "--system", "SYS")[1] == "SYS\n\nalpha · ü"


def test_cli_openai_prints_the_keyword_arguments(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """`--format openai` prints `{"messages": [...]}` as UTF-8 JSON ending in a newline; the SDK sends it as it is."""
    system_file = project / "system.txt"
    system_file.write_text("SYS ✓", encoding="utf-8")
    for appender, role in (({}, "system"), ({"format": "openai", "role": "developer"}, "developer")):
        config = _config_file(project, **appender)
        code, out, _ = cli("-c", config, "--system-file", str(system_file), "--format", "openai")
        assert code == 0 and out.endswith("}\n") and "✓" in out and "ü" in out
        kwargs = json.loads(out)
        assert kwargs == {"messages": [{"role": role, "content": "SYS ✓\n\nalpha · ü"}]}
        assert_sdk_type(OPENAI_MESSAGES, kwargs["messages"])
        assert openai_sent(kwargs) == {**kwargs, "model": "gpt-test"}


def test_cli_anthropic_prints_the_keyword_arguments(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """`--format anthropic` prints `{"system": [...]}` (cache_control on the memory block) that the SDK sends."""
    config = _config_file(project, format="anthropic", cache_control={"ttl": "1h"})
    code, out, _ = cli("-c", config, "--system", "SYS")  # the config's format, printable
    assert code == 0 and out.endswith("\n")
    kwargs = json.loads(out)
    memory = {"type": "text", "text": "alpha · ü", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    assert kwargs == {"system": [SYS, memory]}
    assert_sdk_type(ANTHROPIC_SYSTEM, kwargs["system"])
    assert anthropic_sent(kwargs)["system"] == kwargs["system"]
    assert json.loads(cli("-c", config)[1]) == {"system": [memory]}


def test_cli_anthropic_user_placement_prints_messages(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """Under placement user, `--format anthropic` prints the system untouched and the block as the first user turn."""
    config = _config_file(project, format="anthropic", placement="user", cache_control={})
    code, out, _ = cli("-c", config, "--system", "SYS")
    memory = {"type": "text", "text": "alpha · ü", "cache_control": {"type": "ephemeral"}}
    assert (code, json.loads(out)) == (0, {"system": "SYS", "messages": [{"role": "user", "content": [memory]}]})
    assert_sdk_type(ANTHROPIC_MESSAGES, json.loads(out)["messages"])
    assert anthropic_sent(json.loads(out))["messages"] == [{"role": "user", "content": [memory]}]
    code, out, _ = cli("-c", config, "--format", "openai")
    assert json.loads(out) == {"messages": [{"role": "user", "content": "alpha · ü"}]}


def test_cli_json_prints_the_render(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """`--format json` prints the block, its sha256 and every source; `--system` with it is a usage error (exit 2)."""
    config = _config_file(project)
    code, out, _ = cli("-c", config, "--format", "json")
    data = json.loads(out)
    assert code == 0 and out.endswith("}\n")
    assert data["text"] == "alpha · ü"
    assert data["sha256"] == hashlib.sha256("alpha · ü".encode()).hexdigest()
    assert [s["status"] for s in data["sources"]] == ["loaded"]
    code, out, err = cli("-c", config, "--format", "json", "--system", "SYS")
    assert (code, out) == (2, "")
    assert "--format json" in err and "--system" in err


def test_cli_default_format_for_an_unprintable_one_is_text(
    project: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    """A config whose format cannot be printed (langchain) renders as text unless `--format` says otherwise."""
    config = _config_file(project, format="langchain")
    assert cli("-c", config, "--system", "SYS")[:2] == (0, "SYS\n\nalpha · ü")


def test_cli_bad_format_lists_the_choices(project: Path, cli: Callable[..., tuple[int, str, str]]) -> None:
    """An unknown `--format` exits 2 listing the printable ones."""
    code, out, err = cli("-c", _config_file(project), "--format", "yaml")
    assert (code, out) == (2, "")
    assert "invalid choice: 'yaml'" in err
    assert "'text', 'json', 'openai', 'anthropic'" in err


def test_cli_format_langchain_says_why_it_cannot_be_printed(project: Path) -> None:
    """`--format langchain` exits 2 saying LangChain messages are Python objects and what to use instead."""
    done = run_cli("render", "-c", _config_file(project), "--format", "langchain")

    assert (done.returncode, done.stdout) == (2, "")
    [line] = [line for line in done.stderr.splitlines() if line.startswith("memconfig render: error: ")]
    assert line.startswith("memconfig render: error: argument --format: 'langchain' cannot be printed: ")
    assert "LangChain messages are Python objects" in line and "--format openai" in line
    assert "memconfig.integrations.langchain" in line and "invalid choice" not in line


def test_cli_help_says_why_langchain_is_not_a_format() -> None:
    """`render --help` says, under --format, why langchain is not a choice and what prints the same messages."""
    done = run_cli("render", "--help")

    help_text = " ".join(done.stdout.split())
    assert done.returncode == 0
    assert "Not langchain: LangChain messages are Python objects, which a command line cannot print" in help_text
    assert "--format openai prints the same messages as JSON" in help_text


def test_cli_config_error_for_an_ignored_setting_exits_2(project: Path) -> None:
    """`render` with placement user and format text exits 2 naming `appender.placement`, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", _config_file(project, placement="user")],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert "appender.placement: has no effect with format 'text'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        pytest.param("openai", {"messages": [{"role": "user", "content": "alpha · ü"}]}, id="openai"),
        pytest.param("anthropic", {"messages": [{"role": "user", "content": [{"type": "text", "text": "alpha · ü"}]}]},
                     id="anthropic"),
    ],
)  # fmt: skip
def test_cli_format_that_uses_the_setting_is_checked_before_the_config(
    project: Path, printed: str, expected: dict[str, Any]
) -> None:
    """`render --format openai` with placement user in a config of format text: the block is the first user turn."""
    done = run_cli("render", "-c", _config_file(project, placement="user"), "--format", printed)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected


def test_cli_format_json_prints_the_render_whatever_the_appender_settings(project: Path) -> None:
    """`--format json` prints the render itself: placement user, for the config's other formats, is no mistake."""
    done = run_cli("render", "-c", _config_file(project, placement="user"), "--format", "json")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "alpha · ü"


def test_cli_format_keeps_the_settings_of_the_configs_own_format(project: Path) -> None:
    """A config of format openai with role developer prints as text: the setting is the config's own format's."""
    done = run_cli("render", "-c", _config_file(project, format="openai", role="developer"), "--format", "text")

    assert (done.returncode, done.stdout) == (0, "alpha · ü")


def test_cli_setting_no_format_in_play_uses_exits_2(project: Path) -> None:
    """role (openai's) in a config of format text, printed as anthropic: exit 2 naming both formats and the key."""
    done = run_cli("render", "-c", _config_file(project, role="developer"), "--format", "anthropic")

    assert (done.returncode, done.stdout) == (2, "")
    assert "appender.role: has no effect with format 'text' nor with --format 'anthropic' (it applies to: openai)" in (
        done.stderr
    )
