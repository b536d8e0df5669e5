"""One core, two thin drivers: how a flow's waits are run for sync and for async callers.

The loader and the cache are written once, as generators (*flows*) that yield
what they need and are sent the answer, as psycopg 3 runs its protocol
(``generators.py`` / ``waiting.py``). A flow yields one of:

- a :class:`concurrent.futures.Future`: a read already under way (on fsspec's I/O loop);
- an awaitable: a user's ``async def load``;
- :class:`Blocking`: calls that block (a local folder's walk);
- :class:`Either`: one call in a sync and an async form (a backend's ``download_files`` /
  ``adownload_files``);
- :class:`Shared`: a read another render owns.

The driver alone decides where each runs. :func:`run` blocks the caller's
thread: blocking calls inline, awaitables on fsspec's I/O loop. :func:`arun`
never blocks the caller's loop: blocking calls go to the pool the request
names, awaitables are awaited. A flow that needs no I/O never yields, and
neither driver then leaves the caller's thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

__all__ = ["Blocking", "Either", "Flow", "LoopBlocked", "Shared", "Wait", "arun", "io_loop", "run"]

T = TypeVar("T")


class Blocking:
    """Calls that block, answered with their results in order.

    :func:`run` makes them inline, one after the other; :func:`arun` makes them
    at once on *pool* (each in a copy of the caller's context, so their events
    carry the render's id), never on the caller's loop. *pool* is asked for
    only then: a sync caller never makes one.
    """

    __slots__ = ("calls", "pool")

    def __init__(self, calls: Sequence[Callable[[], Any]], pool: Callable[[], Executor]) -> None:
        self.calls, self.pool = calls, pool


class Either:
    """One call in two forms: :func:`run` makes the *blocking* one, :func:`arun` awaits the other."""

    __slots__ = ("awaitable", "blocking")

    def __init__(self, blocking: Callable[[], Any], awaitable: Callable[[], Awaitable[Any]]) -> None:
        self.blocking, self.awaitable = blocking, awaitable


class Shared:
    """A read another render owns, to be waited for.

    A sync driver on a thread that runs an event loop does not wait (that loop
    may be the one that must run the read): it throws :class:`LoopBlocked`
    into the flow, which then reads for itself.
    """

    __slots__ = ("future",)

    def __init__(self, future: Future[Any]) -> None:
        self.future = future


class LoopBlocked(Exception):
    """Waiting for a :class:`Shared` read would block the event loop of the caller's thread."""


Wait = Future[Any] | Awaitable[Any] | Blocking | Either | Shared
Flow = Generator[Wait, Any, T]


def run(flow: Flow[T]) -> T:
    """Run *flow* to its end in this thread, blocking on each wait."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            wait = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value, error = _block(wait), None
        except BaseException as exc:  # handed back to the flow, which decides
            value, error = None, exc


async def arun(flow: Flow[T]) -> T:
    """Run *flow* to its end on the running event loop, awaiting each wait."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            wait = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            value, error = await _await(wait), None
        except BaseException as exc:
            value, error = None, exc


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def io_loop() -> asyncio.AbstractEventLoop:
    """fsspec's I/O loop (its thread started on first use), where remote reads and a sync caller's awaitables run.

    ``fsspec.asyn`` is imported here, by the first render that has such a wait: a render of local files never does.
    """
    import fsspec.asyn

    loop: asyncio.AbstractEventLoop = fsspec.asyn.get_loop()
    return loop


def _block(wait: Wait) -> Any:
    if isinstance(wait, Future):
        return wait.result()
    if isinstance(wait, Blocking):
        return [call() for call in wait.calls]
    if isinstance(wait, Either):
        return wait.blocking()
    if isinstance(wait, Shared):
        if not wait.future.done() and _loop_running():  # a sync render called from async code
            raise LoopBlocked("a sync render on an event loop's thread does not wait for a read of that loop")
        return wait.future.result()
    if not inspect.isawaitable(wait):
        raise TypeError(f"a flow yielded {wait!r}, which is neither a Future nor awaitable, nor a request")
    # A user's async loader, from a sync caller: run on fsspec's I/O loop, as remote reads are.
    return asyncio.run_coroutine_threadsafe(_awaited(wait), io_loop()).result()


async def _await(wait: Wait) -> Any:
    if isinstance(wait, Shared):
        wait = wait.future
    if isinstance(wait, Future):
        # Shielded: cancelling this task must not cancel a read that others may share.
        return await asyncio.shield(asyncio.wrap_future(wait))
    if isinstance(wait, Blocking):
        return await _on_pool(wait)
    if isinstance(wait, Either):
        return await wait.awaitable()
    return await wait


async def _on_pool(wait: Blocking) -> list[Any]:
    loop = asyncio.get_running_loop()
    pool = wait.pool()
    running = [loop.run_in_executor(pool, contextvars.copy_context().run, call) for call in wait.calls]
    try:
        return list(await asyncio.gather(*running))
    except BaseException:
        for other in running:
            other.cancel()
        raise


async def _awaited(wait: Awaitable[Any]) -> Any:
    return await wait
