"""One core, two thin drivers: how a flow's waits are run for sync and for async callers.

The loader and the cache are written once, as generators (*flows*) that yield
what they must wait for and are sent the answer, as psycopg 3 runs its
protocol. A flow yields either a :class:`concurrent.futures.Future` (a read on
fsspec's I/O loop, or a read another render owns) or an awaitable (a user's
``async def load``). :func:`run` waits in the caller's thread; :func:`arun`
awaits, so an asyncio caller's loop is never blocked. A flow that needs no
I/O never yields, and neither driver then leaves the caller's thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Generator
from concurrent.futures import Future
from typing import Any, TypeVar

import fsspec.asyn

__all__ = ["Flow", "Wait", "arun", "awaited", "blocks_a_loop", "run"]

T = TypeVar("T")
Wait = Future[Any] | Awaitable[Any]
Flow = Generator[Wait, Any, T]


_AWAITED: contextvars.ContextVar[bool] = contextvars.ContextVar("memconfig_awaited", default=False)


def awaited() -> bool:
    """Whether the running flow is driven by :func:`arun`: a wait it yields is awaited on the caller's loop.

    A loader with a sync and an async form of one call (a deepagents backend's
    ``download_files`` / ``adownload_files``) asks this to pick the form.
    """
    return _AWAITED.get()


def blocks_a_loop() -> bool:
    """Whether the running flow blocks a thread that runs an event loop (a sync render called from async code).

    Such a flow must not wait for a read owned by a task of that loop: the loop
    cannot run the task while the flow blocks it.
    """
    if _AWAITED.get():
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run(flow: Flow[T]) -> T:
    """Run *flow* to its end in this thread, blocking on each wait."""
    if not _AWAITED.get():
        return _run(flow)
    token = _AWAITED.set(False)  # a sync render called from inside an async one
    try:
        return _run(flow)
    finally:
        _AWAITED.reset(token)


def _run(flow: Flow[T]) -> T:
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
    token = _AWAITED.set(True)
    try:
        return await _arun(flow)
    finally:
        _AWAITED.reset(token)


async def _arun(flow: Flow[T]) -> T:
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            wait = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        try:
            # Shielded: cancelling this task must not cancel a read that others may share.
            value, error = await (asyncio.shield(asyncio.wrap_future(wait)) if isinstance(wait, Future) else wait), None
        except BaseException as exc:
            value, error = None, exc


def _block(wait: Wait) -> Any:
    if isinstance(wait, Future):
        return wait.result()
    if not inspect.isawaitable(wait):
        raise TypeError(f"a flow yielded {wait!r}, which is neither a Future nor awaitable")
    # A user's async loader, from a sync caller: run on fsspec's I/O loop, as remote reads are.
    return asyncio.run_coroutine_threadsafe(_awaited(wait), fsspec.asyn.get_loop()).result()


async def _awaited(wait: Awaitable[Any]) -> Any:
    return await wait
