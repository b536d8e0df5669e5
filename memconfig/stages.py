"""The contract of each stage: loader → state cache → processors → formatter → appender.

Each stage is a small object with one job; these ``Protocol``s let tests and
users pass their own. What flows between them is the model
(:mod:`memconfig.model`). A stage that changes what ends up in the prompt
carries a ``token`` naming what it does and with which settings: the cache
decides from the tokens whether a stored state or a memoised block is still
valid.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeGuard, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .drive import Flow
    from .model import Block, LoadRequest, LoadResult, LocalCheck, Processed, Render, Section, Snapshot, Spot
    from .sources.source import Source

__all__ = [
    "Appender",
    "Closing",
    "ExpandingLoader",
    "FlowLoader",
    "Formatter",
    "Loader",
    "LoaderCapabilities",
    "NoMatchExpander",
    "PathsProcessor",
    "Processor",
    "RevalidatingLoader",
    "ServingCache",
    "StateCache",
    "TakingExpander",
    "Tokened",
    "WatchableExpander",
    "WatchedExpander",
    "provides",
    "token_of",
]

P = TypeVar("P")


def provides(stage: object, protocol: Callable[..., P]) -> TypeGuard[P]:
    """``isinstance(stage, protocol)`` for a runtime-checkable protocol, its members looked up once.

    Python 3.11 collects a protocol's members again at every such check (10 to
    50 µs); a pipeline's build asks a dozen of them. The answer is the same:
    a subclass provides it; else each member must be there, and a method not ``None``.
    """
    if protocol in type(stage).__mro__:  # declared as one
        return True
    return all(
        hasattr(stage, name) and (not method or getattr(stage, name) is not None) for name, method in _members(protocol)
    )


@functools.cache  # one entry per protocol class: a handful
def _members(protocol: type) -> tuple[tuple[str, bool], ...]:
    """*protocol*'s members, and whether each is a method, as ``isinstance`` reads them."""
    names = getattr(protocol, "__protocol_attrs__", None) or typing._get_protocol_attrs(protocol)  # type: ignore[attr-defined]
    return tuple((name, callable(getattr(protocol, name, None))) for name in sorted(names))


@runtime_checkable
class Loader(Protocol):
    """Reads sources: one result per request, children of an expanded source in its place.

    One method. It may also be ``async def``; :class:`~memconfig.FsspecLoader`
    adds a flow form (``read``) that lets async callers await remote reads.
    """

    def load(self, requests: Sequence[LoadRequest]) -> Sequence[LoadResult] | Awaitable[Sequence[LoadResult]]: ...


# -- optional behaviour: each a second protocol, asked once when the pipeline is built, never per call --


@runtime_checkable
class Tokened(Protocol):
    """A stage that names what it does and with which settings (else its class names it)."""

    @property
    def token(self) -> str: ...


@runtime_checkable
class FlowLoader(Protocol):
    """A loader with a flow form of ``load``: async callers then await its remote reads (see :mod:`memconfig.drive`)."""

    def read(self, requests: Sequence[LoadRequest]) -> Flow[Sequence[LoadResult]]: ...


@runtime_checkable
class RevalidatingLoader(Protocol):
    """A loader that can tell, with one ``stat`` per local file and no read, which files changed.

    ``changed`` gives the positions in *checks* of the files not as they were
    last seen (none: nothing changed): a cache then reads those alone.
    """

    def changed(self, checks: Sequence[LocalCheck]) -> Sequence[int]: ...


@runtime_checkable
class ExpandingLoader(Protocol):
    """A loader with expanders of its own (globs, discovery): the watcher and ``render -o`` ask them."""

    expanders: Mapping[str, Any]


@runtime_checkable
class Closing(Protocol):
    """A stage holding threads or handles (a pool, a watcher) until it is closed."""

    def close(self) -> None: ...


class LoaderCapabilities(NamedTuple):
    """What a loader can do besides ``load``, asked once of it (a cache keeps this, not the question).

    Attributes:
        read: its flow form (:class:`FlowLoader`), if it has one.
        changed: its stat-only check (:class:`RevalidatingLoader`), if it has one.
        expanders: its expanders (:class:`ExpandingLoader`), if it has its own.
        token: what it reads with: its ``token`` (:class:`Tokened`), else its class's name.
    """

    read: Callable[[Sequence[LoadRequest]], Flow[Sequence[LoadResult]]] | None
    changed: Callable[[Sequence[LocalCheck]], Sequence[int]] | None
    expanders: Mapping[str, Any] | None
    token: str

    @classmethod
    def of(cls, loader: object) -> LoaderCapabilities:
        """Ask *loader* what it can do (a ``read`` that is not a generator function is no flow form)."""
        import inspect

        read = loader.read if provides(loader, FlowLoader) and inspect.isgeneratorfunction(loader.read) else None
        changed = loader.changed if provides(loader, RevalidatingLoader) else None
        expanders = loader.expanders if provides(loader, ExpandingLoader) and loader.expanders else None
        return cls(read, changed, expanders, token_of(loader))


def token_of(stage: object) -> str:
    """A stage's token, or its class's name for a stage that declares none."""
    if provides(stage, Tokened) and isinstance(stage.token, str):
        return stage.token
    return f"{type(stage).__module__}.{type(stage).__qualname__}"


@runtime_checkable
class StateCache(Protocol):
    """Keeps contents in the caller's state and decides what must be (re)loaded."""

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Flow[Snapshot]: ...


@runtime_checkable
class ServingCache(Protocol):
    """A cache told, once, which loader it will serve and what that loader can do (asked of it once, not per render)."""

    def serve(self, loader: Loader, can: LoaderCapabilities | None = None) -> LoaderCapabilities: ...


@runtime_checkable
class Processor(Protocol):
    """One step between the cache and the formatter: sections in, sections out.

    A section left out of the result is out of the prompt (logged as
    ``source_dropped``); *token* names what the step does and with which
    settings, so that changing it invalidates memoised blocks and states.
    A :class:`~memconfig.process.Processed` result also says why a section was
    left out and what was done to the ones kept (cuts, escapes: their events).
    """

    @property
    def token(self) -> str: ...

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section] | Processed: ...


@runtime_checkable
class PathsProcessor(Protocol):
    """A processor that decides by the render's paths in play (``rules: frontmatter``), when *takes_paths* is true.

    The chain asks this once, when it is made, and then hands it the paths each render.
    """

    takes_paths: bool

    def __call__(self, sections: Sequence[Section], paths: tuple[str, ...]) -> Sequence[Section] | Processed: ...


@runtime_checkable
class Formatter(Protocol):
    """Joins sections into one memory block."""

    @property
    def token(self) -> str: ...

    def format(self, sections: Sequence[Section]) -> Block: ...


@runtime_checkable
class Appender(Protocol):
    """Puts a render's block where the caller wants it: a system prompt, a message list …"""

    def append(self, system: Any, render: Render) -> Any: ...


@runtime_checkable
class WatchableExpander(Protocol):
    """An expander that tells the ``watch`` cache policy where *source*'s children can change or appear.

    ``None``: it cannot say; *source* is then revalidated on every render.
    Local ``stat``/listing calls only.
    """

    def watched(self, source: Source) -> Sequence[Spot] | None: ...


@runtime_checkable
class TakingExpander(Protocol):
    """An expander that tells ``render -o`` whether a file at *path*, there or not yet, would be a child of *source*.

    The output is then refused before it is written rather than read by the
    next render. Local ``stat``/listing calls only; one that raises is taken to say no.
    """

    def would_take(self, source: Source, path: str) -> bool: ...


@runtime_checkable
class WatchedExpander(WatchableExpander, TakingExpander, Protocol):
    """Both optional hooks of an expander; each is a protocol of its own, asked once of it, never per call."""


@runtime_checkable
class NoMatchExpander(Protocol):
    """An expander that says in its own words why a source with no child is skipped (``discovery found no file``)."""

    no_match: str
