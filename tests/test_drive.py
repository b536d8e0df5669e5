"""One flow core, two drivers: custom loaders (sync and async) under render and arender, and what stays inline."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.pipelines import plain_pipeline as _pipeline

from memconfig import Loader, LoadRequest, LoadResult, Pipeline, SkipReason
from memconfig.drive import Blocking, Either, LoopBlocked, Shared, arun, run

TEXTS = {"a.md": "alpha", "b.md": "beta"}


def _results(texts: dict[str, str], requests: Sequence[LoadRequest]) -> list[LoadResult]:
    out = []
    for request in requests:
        text = texts.get(request.source.key)
        if text is None:
            out.append(LoadResult(request.source, "skipped", reason=SkipReason.NOT_FOUND, detail="not in the dict"))
        else:
            data = text.encode()
            out.append(
                LoadResult(request.source, "loaded", text, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
            )
    return out


class SyncDictLoader:
    """A one-method sync loader over a dict; records the thread and the keys of each call."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.calls: list[tuple[int, list[str]]] = []

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        self.calls.append((threading.get_ident(), [r.source.key for r in requests]))
        return _results(self.texts, requests)


class AsyncDictLoader(SyncDictLoader):
    """The same loader with an ``async def load``."""

    async def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:  # type: ignore[override]
        await asyncio.sleep(0.01)
        self.calls.append((threading.get_ident(), [r.source.key for r in requests]))
        return _results(self.texts, requests)


LOADERS = [pytest.param(SyncDictLoader, id="sync-loader"), pytest.param(AsyncDictLoader, id="async-loader")]


def _render_sync(pipeline: Pipeline, state: dict[str, Any]) -> str:
    return str(pipeline.render("SYS", state))


def _render_async(pipeline: Pipeline, state: dict[str, Any]) -> str:
    return str(asyncio.run(pipeline.arender("SYS", state)))


ENTRIES = [pytest.param(_render_sync, id="render"), pytest.param(_render_async, id="arender")]


# -- custom loaders ------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("loader_class", LOADERS)
def test_one_method_loader_works_under_both_drivers(
    tmp_path: Path, loader_class: type[SyncDictLoader], entry: Callable[[Pipeline, dict[str, Any]], str]
) -> None:
    """A custom loader with one `load` method, sync or async, serves render() and arender() alike."""
    pipeline = _pipeline(tmp_path, ["a.md", "missing.md", "b.md"])
    loader = loader_class(TEXTS)
    assert isinstance(loader, Loader)
    pipeline.loader = loader
    state: dict[str, Any] = {}
    assert entry(pipeline, state) == "SYS\n\nalpha\n\nbeta"
    assert [keys for _, keys in loader.calls] == [["a.md", "missing.md", "b.md"]]
    assert state["memory_contents"] == TEXTS
    record = pipeline.build(state).sources[1]
    assert (record.source, record.status, record.reason, record.detail) == (
        "missing.md",
        "skipped",
        SkipReason.NOT_FOUND,
        "not in the dict",
    )


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("loader_class", LOADERS)
def test_render_that_reads_nothing_calls_no_loader(
    tmp_path: Path, loader_class: type[SyncDictLoader], entry: Callable[[Pipeline, dict[str, Any]], str]
) -> None:
    """Under `once`, the second render of a state calls the loader not at all."""
    pipeline = _pipeline(tmp_path, ["a.md", "b.md"])
    loader = loader_class(TEXTS)
    pipeline.loader = loader
    state: dict[str, Any] = {}
    first = entry(pipeline, state)
    assert len(loader.calls) == 1
    assert entry(pipeline, state) == first
    assert len(loader.calls) == 1


@pytest.mark.parametrize("entry", ENTRIES)
def test_sync_loader_runs_in_the_callers_thread(
    tmp_path: Path, entry: Callable[[Pipeline, dict[str, Any]], str]
) -> None:
    """A sync loader is called inline: in the thread that called render(), or that runs arender()'s loop."""
    pipeline = _pipeline(tmp_path, ["a.md"])
    loader = SyncDictLoader(TEXTS)
    pipeline.loader = loader
    entry(pipeline, {})
    assert [thread for thread, _ in loader.calls] == [threading.get_ident()]


def test_async_loader_is_awaited_on_the_callers_loop(tmp_path: Path) -> None:
    """Under arender() an async loader runs on the caller's own event loop."""
    pipeline = _pipeline(tmp_path, ["a.md"])
    loader = AsyncDictLoader(TEXTS)
    pipeline.loader = loader

    async def main() -> tuple[str, int]:
        return await pipeline.arender(None, {}), threading.get_ident()

    text, loop_thread = asyncio.run(main())
    assert text == "alpha"
    assert [thread for thread, _ in loader.calls] == [loop_thread]


def test_sync_render_with_an_async_loader_inside_a_running_loop(tmp_path: Path) -> None:
    """A sync render() called from async code, with an async loader, finishes (it does not wait on that loop)."""
    pipeline = _pipeline(tmp_path, ["a.md", "b.md"])
    loader = AsyncDictLoader(TEXTS)
    pipeline.loader = loader

    async def main() -> str:
        return str(pipeline.render(None, {}))

    assert asyncio.run(asyncio.wait_for(main(), 10)) == "alpha\n\nbeta"
    assert len(loader.calls) == 1


# -- local files stay in the caller's thread --------------------------------------------------

_watched: list[tuple[str, list[tuple[int, str]]]] = []  # (folder, opens of files under it)
_hook_lock = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _watched or not isinstance(args[0], str):
        return
    for folder, opens in _watched:
        if args[0].startswith(folder):
            opens.append((threading.get_ident(), args[0]))


@pytest.fixture
def opens(tmp_path: Path) -> Iterator[list[tuple[int, str]]]:
    """Every file opened under tmp_path during the test, with the thread that opened it (an audit hook)."""
    with _hook_lock:
        if not getattr(sys, "_memconfig_test_audit", False):
            sys.addaudithook(_audit)  # hooks cannot be removed; this one does nothing unless a test watches
            sys._memconfig_test_audit = True  # type: ignore[attr-defined]
    found: list[tuple[int, str]] = []
    watch = (str(tmp_path), found)
    _watched.append(watch)
    yield found
    _watched.remove(watch)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in TEXTS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("entry", ENTRIES)
def test_local_reads_happen_in_the_callers_thread(
    files: Path, opens: list[tuple[int, str]], entry: Callable[[Pipeline, dict[str, Any]], str]
) -> None:
    """The built-in loader reads local files in the calling thread, for render() and arender()."""
    assert entry(_pipeline(files, ["a.md", "b.md"]), {}) == "SYS\n\nalpha\n\nbeta"
    assert sorted(os.path.basename(path) for _, path in opens) == ["a.md", "b.md"]
    assert {thread for thread, _ in opens} == {threading.get_ident()}


@pytest.mark.parametrize("policy", ["once", "revalidate"])
def test_unchanged_turn_opens_no_file(files: Path, opens: list[tuple[int, str]], policy: str) -> None:
    """A second render of a state opens nothing: `once` reads nothing, `revalidate` only stats."""
    pipeline = _pipeline(files, ["a.md", "b.md"], policy=policy)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    opens.clear()
    assert pipeline.render(state=state) == "alpha\n\nbeta"
    assert asyncio.run(pipeline.arender(None, state)) == "alpha\n\nbeta"
    assert opens == []


# -- the drivers themselves ---------------------------------------------------------------------


def _resolved_later(value: Any = None, error: BaseException | None = None) -> Future[Any]:
    """A future completed from another thread shortly after."""
    future: Future[Any] = Future()

    def finish() -> None:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    threading.Timer(0.02, finish).start()
    return future


def _flow() -> Generator[Any, Any, list[Any]]:
    """Waits on a future, an awaitable and a failing future, and returns what it was sent."""
    got = [(yield _resolved_later("from a future"))]

    async def coroutine() -> str:
        await asyncio.sleep(0)
        return "from a coroutine"

    got.append((yield coroutine()))
    try:
        yield _resolved_later(error=OSError("read failed"))
    except OSError as exc:
        got.append(f"caught {exc}")
    return got


EXPECTED = ["from a future", "from a coroutine", "caught read failed"]


def test_run_drives_a_flow_in_this_thread() -> None:
    """`run` sends each wait's answer back and throws its failure in; the flow's return value comes out."""
    assert run(_flow()) == EXPECTED


def test_arun_drives_the_same_flow() -> None:
    """`arun` gives the same answers, awaiting each wait on the running loop."""
    assert asyncio.run(arun(_flow())) == EXPECTED


def test_flow_that_never_waits_needs_no_loop() -> None:
    """A flow that yields nothing returns at once under `run`, from a thread with no event loop."""

    def flow() -> Generator[Any, Any, str]:
        return "done"
        yield  # a generator that never yields

    assert run(flow()) == "done"


def test_yielding_something_else_is_a_type_error() -> None:
    """A flow that yields neither a Future nor an awaitable fails with TypeError."""

    def flow() -> Generator[Any, Any, None]:
        yield "not a wait"

    with pytest.raises(TypeError, match="neither a Future nor awaitable"):
        run(flow())


def test_cancelled_arun_leaves_the_shared_read_running() -> None:
    """Cancelling the task that awaits a read's Future does not cancel that Future (others may share it)."""
    shared: Future[str] = Future()
    waiting = threading.Event()

    def flow() -> Generator[Any, Any, str]:
        waiting.set()
        return str((yield shared))

    async def main() -> None:
        task = asyncio.create_task(arun(flow()))
        while not waiting.is_set():  # the task runs until it awaits the Future
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert not shared.cancelled()
    shared.set_result("still wanted")


def _asks(wait: Any) -> Generator[Any, Any, Any]:
    """A flow that yields *wait* once and returns its answer."""
    return (yield wait)


def test_blocking_calls_run_inline_for_a_sync_caller_and_on_the_pool_for_an_async_one() -> None:
    """The flow yields what blocks; the sync driver makes the calls in its thread, the async one off its loop."""
    made: list[str] = []

    def pool() -> ThreadPoolExecutor:
        made.append("pool")
        return executor

    with ThreadPoolExecutor(2, thread_name_prefix="test-pool") as executor:
        request = Blocking([threading.current_thread, lambda: "second"], pool)
        assert run(_asks(request)) == [threading.current_thread(), "second"]
        assert made == []  # a sync caller never asks for the pool

        async def awaited() -> list[Any]:
            return await arun(_asks(request))  # type: ignore[no-any-return]

        thread, second = asyncio.run(awaited())
    assert thread.name.startswith("test-pool") and second == "second" and made == ["pool"]


def test_either_gives_the_sync_driver_the_blocking_form_and_the_async_one_the_awaitable() -> None:
    """A call with both forms: the driver alone picks (the awaitable is not even made for a sync caller)."""
    forms: list[str] = []

    async def awaitable() -> str:
        forms.append("async")
        return "awaited"

    def blocking() -> str:
        forms.append("sync")
        return "blocked"

    assert run(_asks(Either(blocking, awaitable))) == "blocked"
    assert asyncio.run(arun(_asks(Either(blocking, awaitable)))) == "awaited"
    assert forms == ["sync", "async"]


def test_a_sync_driver_on_a_loops_thread_does_not_wait_for_a_shared_read() -> None:
    """Waiting there could block the loop that runs the read: the flow is told, and decides (it reads alone)."""
    owned: Future[str] = Future()

    def flow() -> Generator[Any, Any, str]:
        try:
            return str((yield Shared(owned)))
        except LoopBlocked:
            return "read alone"

    async def sync_render_from_async_code() -> str:
        return run(flow())

    assert asyncio.run(sync_render_from_async_code()) == "read alone"
    owned.set_result("shared")
    assert run(flow()) == "shared"  # off a loop, or done: waited for
