"""The data that flows between the stages, and the contract of each stage.

loader → state cache → processors → formatter → appender. Each stage is a
small object with one job; these ``Protocol``s let tests and users pass their
own. A stage that changes what ends up in the prompt carries a ``token``
naming what it does and with which settings: the cache decides from the
tokens whether a stored state or a memoised block is still valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, runtime_checkable

from .failures import Failure, SkipReason
from .render import Lazy, Render, Section, SourceRecord

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .drive import Flow
    from .process.records import Processed
    from .sources.source import Source

__all__ = [
    "Appender",
    "Block",
    "Closing",
    "ExpandingLoader",
    "FlowLoader",
    "Formatter",
    "LoadRequest",
    "LoadResult",
    "Loader",
    "LoaderCapabilities",
    "LocalCheck",
    "PathsProcessor",
    "Processor",
    "RevalidatingLoader",
    "Snapshot",
    "Spot",
    "StateCache",
    "Tokened",
    "WatchedExpander",
    "token_of",
]

Status = Literal["loaded", "unchanged", "skipped", "stale"]


_NONE_KNOWN: Mapping[str, tuple[str | None, str | None]] = MappingProxyType({})


class LoadRequest(NamedTuple):
    """Read *source*; if its fingerprint or hash still equals what is known, say so instead.

    For an expandable source (a glob), *children* holds what is known of each child, by key.
    A named tuple: a render asks one per source.
    """

    source: Source
    fingerprint: str | None = None
    sha256: str | None = None
    children: Mapping[str, tuple[str | None, str | None]] = _NONE_KNOWN


@dataclass(slots=True)
class LoadResult:
    """What one load pass found for one source (or one child of an expanded source)."""

    source: Source
    status: Status
    content: str | None = None
    reason: SkipReason | None = None
    detail: str = ""
    bytes: int = 0
    sha256: str | None = None
    fingerprint: str | None = None
    duration_ms: float = 0.0
    fatal: bool = False  # a decode error under ``on_decode_error: fail``
    read_at: float | None = None
    """``time.perf_counter()`` when the read began (its successful attempt's). Of two reads of one
    source in one process, the one begun later holds the newer version, whichever pass asked;
    ``None``: the time the pass began."""
    place: str | None = None
    """Which file was read, in a form equal for every path to it (a local file's device and inode), set
    by a loader that knows it: two sources whose results share a place are one file, the later a repeat.
    ``None``: the source's URL, normalised, says where it was read."""

    @property
    def ok(self) -> bool:
        """Whether the source's content is in the prompt after this pass."""
        return self.status != "skipped"


class LocalCheck(NamedTuple):
    """What a revalidation expects of one local file, to be checked with one ``stat``."""

    path: str
    fingerprint: str | None
    """The fingerprint of the version in the prompt, if it is in."""
    out: SkipReason | None = None
    """Why it is out of the prompt, if it is."""
    out_fingerprint: str | None = None
    """The fingerprint it had when it went out for its content."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One consistent set of contents, in prompt order, plus what the pass did.

    Attributes:
        sections: the contents in the prompt, one section per source.
        digest: the identity of what the snapshot shows: sections and records.
        records: every source, loaded or not, as the cache sees it (``chars`` not yet known);
            made on first use.
        results: what this pass read (empty when nothing was read).
        stats: what the cache did, for ``prompt_built``.
        failures: sources the render needed and did not get.
        taken: the sources this pass put into the state (each logged as ``source_loaded``).
    """

    sections: tuple[Section, ...]
    digest: str
    records: Lazy[tuple[SourceRecord, ...]] = field(default_factory=lambda: Lazy(tuple))
    results: tuple[LoadResult, ...] = ()
    stats: Mapping[str, int] = field(default_factory=dict)
    failures: tuple[Failure, ...] = ()
    taken: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Block:
    """The formatted memory block.

    ``chars``: each section's characters in the block, by key, as laid out (a
    formatter that leaves it empty has them counted from the sections' text).
    """

    text: str
    sha256: str
    chars: Mapping[str, int] = field(default_factory=dict)


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

        read = loader.read if isinstance(loader, FlowLoader) and inspect.isgeneratorfunction(loader.read) else None
        changed = loader.changed if isinstance(loader, RevalidatingLoader) else None
        expanders = loader.expanders if isinstance(loader, ExpandingLoader) and loader.expanders else None
        return cls(read, changed, expanders, token_of(loader))


def token_of(stage: object) -> str:
    """A stage's token, or its class's name for a stage that declares none."""
    if isinstance(stage, Tokened) and isinstance(stage.token, str):
        return stage.token
    return f"{type(stage).__module__}.{type(stage).__qualname__}"


@runtime_checkable
class StateCache(Protocol):
    """Keeps contents in the caller's state and decides what must be (re)loaded."""

    def resolve(self, state: MutableMapping[str, Any], loader: Loader, *, force: bool = False) -> Flow[Snapshot]: ...


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


class Spot(NamedTuple):
    """A place whose change makes a declared source due: a file, a folder's entries, a whole tree, or the cwd.

    A ``"cwd"`` spot is not watched on disk: the source is due when
    ``os.getcwd()`` is no longer *path* (a discovery from the working
    directory), asked once per render.

    *accepts*, for a folder or a tree, tells which of the changed paths in it
    count (``None``: every one). Without it, anything written there — the
    ``--log-file``, the output of ``render -o``, an editor's swap file — would
    make the source due, and a render that writes there would render again
    without end. It is called on the watcher's thread with a changed path
    (normalised, absolute), never on a render, and may ``stat`` it: a removed
    path is gone. Give a value with equality (a frozen dataclass), not a fresh
    ``lambda``: spots are compared to tell whether the watching changed.
    """

    path: str
    kind: str  # "file", "folder" (its direct entries), "tree" (everything below it) or "cwd" (see above)
    accepts: Callable[[str], bool] | None = None


@runtime_checkable
class WatchedExpander(Protocol):
    """What an expander may answer besides expanding (each method optional: looked up by name).

    ``watched`` tells the ``watch`` cache policy where *source*'s children
    can change or appear (``None``: it cannot say; *source* is then revalidated
    on every render). ``would_take`` tells ``render -o`` whether a file at
    *path*, there or not yet, would be one of *source*'s children, so that the
    output is refused before it is written rather than read by the next render.
    Both make no more than local ``stat``/listing calls.
    """

    def watched(self, source: Source) -> Sequence[Spot] | None: ...

    def would_take(self, source: Source, path: str) -> bool: ...
