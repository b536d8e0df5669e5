"""memconfig's MemoryMiddleware side by side with deepagents' own, over the same files and backends.

Each test runs both middlewares on the same inputs and compares what a
deepagents user can observe: the state update, the system message's content
blocks, the errors, the backend calls. memconfig's adds load events; with
``config=`` it adds memconfig's cache policies.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deepagents import create_deep_agent
from deepagents.backends.composite import CompositeBackend
from deepagents.backends.filesystem import FilesystemBackend
from deepagents.backends.state import StateBackend
from deepagents.backends.store import StoreBackend
from deepagents.middleware.memory import MemoryMiddleware as DeepagentsMemory
from langchain.agents.middleware.types import ModelRequest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from structlog.testing import capture_logs
from support.models import RecordingModel

from memconfig.exceptions import ConfigError, SourceError
from memconfig.install import install_hint
from memconfig.integrations.deepagents import DEFAULT_TEMPLATE, MemoryMiddleware

FILES: dict[str, bytes] = {
    "AGENTS.md": b"# Rules\n\nUse {braces} and {agent_memory} literally.\n\n\n",
    "team.md": b"Team <!-- hidden\nnote --> conventions.\n<!-- trailing -->   \n",
    "comments.md": b"<!-- nothing for the model -->\n",
    "empty.md": b"",
    "bom.md": "\ufeffGr\u00fc\u00dfe \u2603\n".encode(),
}
SOURCES = ["/AGENTS.md", "/missing.md", "/team.md", "/comments.md", "/empty.md", "/bom.md"]


class CountingBackend(FilesystemBackend):
    """A user's backend that counts its batched downloads (the test double of a user's backend)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root_dir=root, virtual_mode=True)
        self.calls: list[list[str]] = []

    def download_files(self, paths: list[str]) -> list[Any]:
        self.calls.append(list(paths))
        return super().download_files(paths)

    async def adownload_files(self, paths: list[str]) -> list[Any]:
        self.calls.append(list(paths))
        return super().download_files(paths)


def _model() -> RecordingModel:
    return RecordingModel(messages=iter([AIMessage(content=f"ok {i}") for i in range(20)]))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "folder").mkdir()
    return tmp_path


def _request(state: dict[str, Any], system: str | None, model: Any = None) -> ModelRequest[Any]:
    return ModelRequest(
        model=model or _model(),
        messages=[HumanMessage(content="hi")],
        system_message=SystemMessage(content=system) if system is not None else None,
        state={"messages": [], **state},  # type: ignore[typeddict-item]
        runtime=None,
    )


def _both(**kwargs: Any) -> tuple[Any, MemoryMiddleware]:
    return DeepagentsMemory(**kwargs), MemoryMiddleware(**kwargs)


def _anthropic() -> ChatAnthropic:
    return ChatAnthropic(model_name="claude-sonnet-4-6", anthropic_api_key="fake")  # type: ignore[call-arg]


# -- the state and the system message ---------------------------------------------


@pytest.mark.parametrize("system", ["You are careful.", None], ids=["with-system", "no-system"])
def test_state_and_system_message_are_deepagents(root: Path, system: str | None) -> None:
    """Same state update, same system message blocks; every source has its event."""
    theirs, ours = _both(backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=SOURCES)
    with capture_logs() as logs:
        update = ours.before_agent({}, None, {})
        sent = ours.modify_request(_request(update, system)).system_message
    expected_update = theirs.before_agent({}, None, {})
    assert update == expected_update
    assert list(update) == ["memory_contents"]
    expected = theirs.modify_request(_request(expected_update, system)).system_message
    assert sent.content_blocks == expected.content_blocks
    assert sent.content == expected.content
    loads = {e["source"]: e for e in logs if e["event"] in ("source_loaded", "source_skipped")}
    assert set(loads) == set(SOURCES)
    assert loads["/missing.md"]["event"] == "source_skipped" and loads["/missing.md"]["reason"] == "not_found"
    assert loads["/AGENTS.md"]["event"] == "source_loaded" and loads["/AGENTS.md"]["bytes"] == len(FILES["AGENTS.md"])


@pytest.mark.parametrize(
    "template",
    ["<m>{agent_memory}</m> {{literal}}", "{agent_memory}|{agent_memory!s}", "{agent_memory}|{agent_memory:>5}"],
    ids=["braces", "conversion", "spec"],
)
def test_custom_template_is_filled_as_deepagents_fills_it(root: Path, template: str) -> None:
    theirs, ours = _both(
        backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=SOURCES, system_prompt=template
    )
    state = theirs.before_agent({}, None, {})
    assert ours.modify_request(_request(state, "S")).system_message.content_blocks == (
        theirs.modify_request(_request(state, "S")).system_message.content_blocks
    )


@pytest.mark.parametrize("system", ["base prompt", None], ids=["with-system", "no-system"])
@pytest.mark.parametrize("template", ["default", None], ids=["template", "system_prompt-None"])
@pytest.mark.parametrize("model", [_anthropic, _model], ids=["anthropic", "other"])
def test_cache_control_tagging_is_deepagents(
    root: Path, system: str | None, template: str | None, model: Callable[[], Any]
) -> None:
    """add_cache_control tags the last block on ChatAnthropic only, whatever system_prompt is."""
    kwargs: dict[str, Any] = {"backend": FilesystemBackend(root_dir=root, virtual_mode=True), "sources": SOURCES}
    if template is None:
        kwargs["system_prompt"] = None
    theirs, ours = _both(add_cache_control=True, **kwargs)
    state = theirs.before_agent({}, None, {})
    mine = ours.modify_request(_request(state, system, model()))
    expected = theirs.modify_request(_request(state, system, model()))
    if expected.system_message is None:
        assert mine.system_message is None
    else:
        assert mine.system_message.content_blocks == expected.system_message.content_blocks
    tagged = model is _anthropic and expected.system_message is not None
    assert tagged == any("cache_control" in b for b in (expected.system_message or SystemMessage("")).content_blocks)


def test_format_agent_memory_is_deepagents(root: Path) -> None:
    """The helper deepagents' docs and tests call gives the same text, for any template."""
    theirs, ours = _both(backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=SOURCES)
    contents = theirs.before_agent({}, None, {})["memory_contents"]
    for given in ({}, contents, {"/team.md": "only <!-- x --> one"}, {"/comments.md": "<!-- -->"}):
        assert ours._format_agent_memory(given) == theirs._format_agent_memory(given)
        assert ours._format_agent_memory(given, "[{agent_memory}]") == theirs._format_agent_memory(
            given, "[{agent_memory}]"
        )


# -- construction, loading once, errors ----------------------------------------------


@pytest.mark.parametrize(("system_prompt", "error"), [(0, TypeError), ("no slot here", ValueError), (["x"], TypeError)])
def test_construction_errors_are_deepagents(system_prompt: Any, error: type[Exception]) -> None:
    with pytest.raises(error) as theirs:
        DeepagentsMemory(backend=StateBackend(), sources=[], system_prompt=system_prompt)
    with pytest.raises(error) as ours:
        MemoryMiddleware(backend=StateBackend(), sources=[], system_prompt=system_prompt)
    assert str(ours.value) == str(theirs.value)


def test_constructor_is_keyword_only_with_deepagents_defaults() -> None:
    import inspect

    theirs = inspect.signature(DeepagentsMemory.__init__).parameters
    ours = inspect.signature(MemoryMiddleware.__init__).parameters
    for name, parameter in theirs.items():
        assert ours[name].kind == parameter.kind and ours[name].default is parameter.default
    with pytest.raises(TypeError):
        MemoryMiddleware(StateBackend(), [])  # type: ignore[misc]


def test_one_download_per_load_and_none_once_loaded(root: Path) -> None:
    theirs_backend, our_backend = CountingBackend(root), CountingBackend(root)
    theirs = DeepagentsMemory(backend=theirs_backend, sources=SOURCES)
    ours = MemoryMiddleware(backend=our_backend, sources=SOURCES)
    state = ours.before_agent({}, None, {})
    assert our_backend.calls == [SOURCES]
    assert ours.before_agent(state, None, {}) is None  # key present: no reload, like deepagents
    assert asyncio.run(ours.abefore_agent(state, None, {})) is None
    assert asyncio.run(ours.abefore_agent({}, None, {})) == state
    assert our_backend.calls == [SOURCES, SOURCES]
    theirs.before_agent({}, None, {})
    assert our_backend.calls[0] == theirs_backend.calls[0]


@pytest.mark.parametrize("bad", ["/folder", "/../outside.md"], ids=["directory", "invalid-path"])
def test_backend_errors_raise_what_deepagents_raises(root: Path, bad: str) -> None:
    theirs, ours = _both(backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=["/AGENTS.md", bad])
    with pytest.raises(ValueError) as expected:
        theirs.before_agent({}, None, {})
    with capture_logs() as logs, pytest.raises(ValueError) as got:
        ours.before_agent({}, None, {})
    assert str(got.value) == str(expected.value)
    skipped = [e for e in logs if e["event"] == "source_skipped"]
    assert [e["source"] for e in skipped] == [bad]  # logged before the run stops


def test_undecodable_file_raises_unicode_error_like_deepagents(root: Path) -> None:
    (root / "latin1.md").write_bytes(b"caf\xe9\n")
    theirs, ours = _both(backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=["/latin1.md"])
    with pytest.raises(UnicodeDecodeError) as expected:
        theirs.before_agent({}, None, {})
    with pytest.raises(UnicodeDecodeError) as got:
        ours.before_agent({}, None, {})
    assert str(got.value) == str(expected.value)


def test_import_without_deepagents_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['deepagents'] = None\n"
        "try:\n import memconfig.integrations.deepagents\n"
        "except ImportError as e: print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert install_hint("deepagents") in done.stdout


# -- inside create_deep_agent, for each backend kind --------------------------------


def _files_input() -> dict[str, Any]:
    from deepagents.backends.utils import create_file_data

    return {
        name: create_file_data(data.decode("utf-8"))
        for name, data in (("/AGENTS.md", FILES["AGENTS.md"]), ("/team.md", FILES["team.md"]))
    }


def _store() -> InMemoryStore:
    from deepagents.backends.utils import create_file_data

    store = InMemoryStore()
    for name in ("AGENTS.md", "team.md"):
        store.put(("filesystem",), f"/{name}", create_file_data(FILES[name].decode("utf-8")))
    return store


def _backends(root: Path) -> dict[str, Callable[[], tuple[Any, dict[str, Any]]]]:
    """Each backend kind, and what the agent needs for it (input files, a store)."""
    return {
        "filesystem": lambda: (FilesystemBackend(root_dir=root, virtual_mode=True), {}),
        "state": lambda: (StateBackend(), {"files": _files_input()}),
        "store": lambda: (StoreBackend(namespace=lambda _rt: ("filesystem",)), {"store": _store()}),
        "composite": lambda: (
            CompositeBackend(
                default=StateBackend(), routes={"/mem/": FilesystemBackend(root_dir=root, virtual_mode=True)}
            ),
            {"files": _files_input()},
        ),
    }


def _run_agent(middleware: Any, backend: Any, extra: dict[str, Any], *, use_async: bool) -> tuple[RecordingModel, Any]:
    model = _model()
    store = extra.get("store")
    agent = create_deep_agent(model=model, backend=backend, middleware=[middleware], store=store)
    state: dict[str, Any] = {"messages": [HumanMessage(content="hello")]}
    if "files" in extra:
        state["files"] = extra["files"]
    result = asyncio.run(agent.ainvoke(state)) if use_async else agent.invoke(state)
    return model, result


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", ["filesystem", "state", "store", "composite"])
def test_inside_create_deep_agent_for_each_backend(root: Path, kind: str, use_async: bool) -> None:
    make = _backends(root)[kind]
    sources = ["/AGENTS.md", "/missing.md", "/team.md"] + (["/mem/bom.md"] if kind == "composite" else [])
    backend, extra = make()
    theirs_model, theirs_result = _run_agent(
        DeepagentsMemory(backend=backend, sources=sources), backend, extra, use_async=use_async
    )
    backend, extra = make()
    with capture_logs() as logs:
        our_model, our_result = _run_agent(
            MemoryMiddleware(backend=backend, sources=sources), backend, extra, use_async=use_async
        )
    assert our_model.sent[0][0].content_blocks == theirs_model.sent[0][0].content_blocks
    assert "Use {braces}" in our_model.sent[0][0].text
    assert "memory_contents" not in our_result and "memory_contents_meta" not in our_result
    assert set(our_result) == set(theirs_result)
    events = {e["source"]: (e["event"], e.get("reason")) for e in logs if e["event"].startswith("source_")}
    assert events["/missing.md"] == ("source_skipped", "not_found")
    assert events["/AGENTS.md"] == ("source_loaded", None)


def test_in_place_of_memory_argument_the_same_prompt(root: Path) -> None:
    """create_deep_agent(memory=[...]) and middleware=[MemoryMiddleware(...)] send the same system message."""
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    model = _model()
    create_deep_agent(model=model, backend=backend, memory=SOURCES).invoke({"messages": [HumanMessage(content="hi")]})
    ours = _model()
    middleware = MemoryMiddleware(backend=backend, sources=SOURCES, add_cache_control=True)
    create_deep_agent(model=ours, backend=backend, middleware=[middleware]).invoke(
        {"messages": [HumanMessage(content="hi")]}
    )
    theirs_text = model.sent[0][0].text
    assert ours.sent[0][0].text.endswith(theirs_text[theirs_text.index("<agent_memory>") :])


# -- with config=: memconfig's policies --------------------------------------------


def _two_turns(root: Path, middleware: Any) -> tuple[str, str]:
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    model = _model()
    agent = create_deep_agent(model=model, backend=backend, middleware=[middleware], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="one")]}, thread)
    (root / "AGENTS.md").write_text("Edited between the turns.\n", encoding="utf-8")
    agent.invoke({"messages": [HumanMessage(content="two")]}, thread)
    return model.sent[0][0].text, model.sent[-1][0].text


def test_config_revalidate_brings_an_edit_into_turn_two(root: Path) -> None:
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    config = {"version": 1, "cache": {"policy": "revalidate"}}
    first, second = _two_turns(root, MemoryMiddleware(backend=backend, sources=SOURCES, config=config))
    assert "Use {braces}" in first and "Edited between the turns." in second


def test_without_config_a_thread_keeps_its_first_load_as_deepagents_does(root: Path) -> None:
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    _, second = _two_turns(root, MemoryMiddleware(backend=backend, sources=SOURCES))
    assert "Use {braces}" in second and "Edited" not in second


def test_config_from_yaml_sets_per_source_settings(root: Path) -> None:
    """A required source that is missing fails the load, naming it (memconfig's policy, opt-in)."""
    (root / "memconfig.yaml").write_text(
        "version: 1\nsources:\n  - url: /missing.md\n    required: true\n", encoding="utf-8"
    )
    ours = MemoryMiddleware(
        backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=SOURCES, config=root / "memconfig.yaml"
    )
    with pytest.raises(SourceError, match=r"/missing\.md"):
        ours.before_agent({}, None, {})


# -- paths deepagents keeps apart, and paths as given ---------------------------------


def _everything(middleware: Any, backend: CountingBackend) -> tuple[Any, Any, list[list[str]]]:
    """What a deepagents user observes of one load: the state update, the system message blocks, the downloads."""
    update = middleware.before_agent({}, None, {})
    blocks = middleware.modify_request(_request(update, "S")).system_message.content_blocks
    return update, blocks, backend.calls


def _side_by_side(root: Path, sources: list[str], **kwargs: Any) -> tuple[Any, Any, list[dict[str, Any]]]:
    theirs = _everything(DeepagentsMemory(backend=(b := CountingBackend(root)), sources=sources, **kwargs), b)
    with capture_logs() as logs:
        ours = _everything(MemoryMiddleware(backend=(b := CountingBackend(root)), sources=sources, **kwargs), b)
    return theirs, ours, logs


@pytest.mark.parametrize(
    "sources",
    [["/one.md", "/two.md"], ["/sub/b.md", "/sub/./b.md"], ["/sub/b.md", "/link.md"], ["/AGENTS.md", "/AGENTS.md"]],
    ids=["same-content", "dot-segment", "symlink", "listed-twice"],
)
def test_paths_deepagents_keeps_apart_are_kept_apart(root: Path, sources: list[str]) -> None:
    """No repeat marking without config=: each path is what the backend makes of it, as in deepagents."""
    (root / "one.md").write_text("Same rules.\n")
    (root / "two.md").write_text("Same rules.\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.md").write_text("bee\n")
    (root / "link.md").symlink_to(root / "sub" / "b.md")
    theirs, ours, logs = _side_by_side(root, sources)
    assert ours == theirs  # state, prompt (a path listed twice is shown twice), and the one download list
    assert theirs[2] == [sources]
    assert not [e for e in logs if e.get("reason") == "duplicate"]


@pytest.mark.parametrize(
    "name", ["n?token=abc.md", "s?sig=zz.md", "p?X-Amz-Signature=q.md", "${MEMCONFIG_TEST_UNSET}.md", "${HOME}.md"]
)
def test_paths_go_to_the_backend_as_given_and_logs_mask_them(root: Path, name: str) -> None:
    """The backend gets the path itself (no ``${VAR}`` expanded, nothing masked); logs and repr mask credentials."""
    (root / name).write_text(f"content of {name}\n")
    theirs, ours, logs = _side_by_side(root, [f"/{name}"])
    assert ours == theirs
    assert theirs[0]["memory_contents"] == {f"/{name}": f"content of {name}\n"}
    secret = name.partition("=")[2].removesuffix(".md")
    (loaded,) = [e for e in logs if e["event"] == "source_loaded"]
    shown = repr(MemoryMiddleware(backend=StateBackend(), sources=[f"/{name}"]))
    if secret:
        assert secret not in str(logs) and secret not in shown and "***" in loaded["source"] and "***" in shown
    else:
        assert loaded["source"] == f"/{name}" and f"/{name}" in shown


def test_two_paths_that_mask_alike_stay_two_sources(root: Path) -> None:
    (root / "n?token=abc.md").write_text("first\n")
    (root / "n?token=xyz.md").write_text("second\n")
    theirs, ours, logs = _side_by_side(root, ["/n?token=abc.md", "/n?token=xyz.md"])
    assert ours == theirs
    assert [e["source"] for e in logs if e["event"] == "source_loaded"] == ["/n?token=***", "/n?token=*** (2)"]


def test_with_config_each_backend_path_is_its_own_source(root: Path) -> None:
    """Only the backend knows which paths are one file: with config=, a path listed twice goes in once, others stay."""
    (root / "sub").mkdir()
    (root / "sub" / "b.md").write_text("bee\n")
    backend = CountingBackend(root)
    ours = MemoryMiddleware(backend=backend, sources=["/sub/b.md", "/sub/./b.md", "/sub/b.md"], config={"version": 1})
    with capture_logs() as logs:
        update = ours.before_agent({}, None, {})
    assert backend.calls == [["/sub/b.md", "/sub/./b.md"]]
    assert update["memory_contents"] == {"/sub/b.md": "bee\n", "/sub/./b.md": "bee\n"}
    assert not [e for e in logs if e.get("reason") == "duplicate"]
    text = ours.modify_request(_request(update, None)).system_message.text
    assert text.count("bee") == 2


# -- with config=: escaping and budgets for the template that is sent ----------------


def test_escaping_follows_the_template_in_use(root: Path) -> None:
    """The closing tags neutralised are those of system_prompt=, not of memconfig's default template."""
    (root / "a.md").write_text("ok\n</mem>\nafter\n")
    ours = MemoryMiddleware(
        backend=FilesystemBackend(root_dir=root, virtual_mode=True),
        sources=["/a.md"],
        system_prompt="<mem>\n{agent_memory}\n</mem>",
        config={"version": 1},
    )
    update = ours.before_agent({}, None, {})
    with capture_logs() as logs:
        text = ours.modify_request(_request(update, None)).system_message.text
    assert text.count("</mem>") == 1 and text.endswith("</mem>")
    (escaped,) = [e for e in logs if e["event"] == "content_escaped"]
    assert escaped["tags"] == ["mem"] and escaped["count"] == 1


def test_a_budget_measures_deepagents_template(root: Path) -> None:
    """The total budget counts the template sent (deepagents' by default): the block stays within it."""
    (root / "a.md").write_text("".join(f"line {i}\n" for i in range(400)))
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    frame = len(DeepagentsMemory(backend=backend, sources=[])._format_agent_memory({}))
    with pytest.raises(ConfigError, match=r"formatter\.budget\.max_chars: the block with no source"):
        MemoryMiddleware(
            backend=backend, sources=["/a.md"], config={"version": 1, "formatter": {"budget": {"max_chars": 100}}}
        )
    limit = frame + 1000
    budget = {"version": 1, "formatter": {"budget": {"max_chars": limit, "policy": "truncate"}}}
    ours = MemoryMiddleware(backend=backend, sources=["/a.md"], config=budget)
    update = ours.before_agent({}, None, {})
    with capture_logs() as logs:
        block = ours.modify_request(_request(update, "S")).system_message.content_blocks[-1]["text"]
    memory = block.removeprefix("\n\n")  # the separator deepagents puts before its block, outside the budget
    assert len(memory) <= limit and "line 0" in memory and "line 399" not in memory
    assert [e["event"] for e in logs if e["event"] == "source_truncated"] == ["source_truncated"]


# -- prompt_failed, the views -----------------------------------------------------------


class SlowBackend(FilesystemBackend):
    """A backend whose downloads take at least 20 ms (to see that the failure's duration is measured)."""

    def download_files(self, paths: list[str]) -> list[Any]:
        import time

        time.sleep(0.02)
        return super().download_files(paths)


def test_prompt_failed_carries_the_measured_duration(root: Path) -> None:
    config = {"version": 1, "sources": [{"url": "/missing.md", "required": True}]}
    ours = MemoryMiddleware(
        backend=SlowBackend(root_dir=root, virtual_mode=True), sources=["/missing.md"], config=config
    )
    with capture_logs() as logs, pytest.raises(SourceError):
        ours.before_agent({}, None, {})
    (failed,) = [e for e in logs if e["event"] == "prompt_failed"]
    assert failed["duration_ms"] >= 20
    assert (failed["sources_loaded"], failed["sources_skipped"]) == (0, 1)


def test_equal_contents_in_a_new_dict_are_served_from_the_memo(root: Path) -> None:
    """A state read back from a checkpoint (new objects, same contents) renders nothing again."""
    import pickle

    ours = MemoryMiddleware(backend=FilesystemBackend(root_dir=root, virtual_mode=True), sources=SOURCES)
    update = ours.before_agent({}, None, {})
    pipeline = ours._pipeline(DEFAULT_TEMPLATE)
    first = pipeline.build({"memory_contents": update["memory_contents"]})
    again = pipeline.build({"memory_contents": pickle.loads(pickle.dumps(update["memory_contents"]))})
    assert again.memo and again.text == first.text
    edited = {**update["memory_contents"], "/AGENTS.md": "changed\n"}
    assert "changed" in pipeline.build({"memory_contents": edited}).text


def test_concurrent_model_calls_each_get_their_own_state(root: Path) -> None:
    """Threads rendering different contents at once never get each other's block."""
    from concurrent.futures import ThreadPoolExecutor

    ours = MemoryMiddleware(backend=StateBackend(), sources=["/a.md"])
    states = [{"memory_contents": {"/a.md": f"thread {i} memory"}} for i in range(4)]

    def call(i: int) -> bool:
        text = ours.modify_request(_request(states[i % 4], None)).system_message.text
        return f"thread {i % 4} memory" in text and text.count("thread ") == 1

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(call, range(400)))


def test_backend_error_codes_are_read_only() -> None:
    from memconfig.load.backend import BACKEND_ERRORS

    with pytest.raises(TypeError):
        BACKEND_ERRORS["file_not_found"] = BACKEND_ERRORS["is_directory"]  # type: ignore[index]


def test_the_drop_in_is_closed_as_a_pipeline_is_and_runs_again_after(root: Path) -> None:
    """``close`` (or leaving ``with``) stops what its stages hold; closing twice is harmless; a turn after it loads."""
    backend = FilesystemBackend(root_dir=root, virtual_mode=True)
    config = {"version": 1, "cache": {"policy": "watch"}}
    with MemoryMiddleware(backend=backend, sources=SOURCES, config=config) as middleware:
        first = middleware.before_agent({}, None, {})  # type: ignore[arg-type]
    middleware.close()
    again = middleware.before_agent({}, None, {})  # type: ignore[arg-type]
    assert first is not None and again is not None
    assert again["memory_contents"] == first["memory_contents"]
