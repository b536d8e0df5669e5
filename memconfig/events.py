"""The load log: one structured event per fact, and the CLI's log setup.

The library never configures logging. If the application has configured
structlog, events go through it; otherwise they go to the stdlib logger
``memconfig`` as JSON text (with the fields in ``record.memconfig``), which
prints nothing unless the application asked for it. structlog's own
out-of-the-box set-up (its built-in processors printing to stdout, which
``structlog.testing.capture_logs()`` leaves behind) is not the application's:
nothing is ever written to stdout unless the application configured it so.

Every event is declared once, as a typed record (a named tuple whose fields
are the event's and whose docstring says what it means) listed in
:data:`EVENTS` with its name and level rule; the emitters here build the
records from the render's own (a load result, a section, a source record),
and the log readers take the fields from the same table; the schema
is versioned by :data:`SCHEMA_VERSION`, carried by ``prompt_built``. Every
event of one render carries that render's ``render_id``. Every URL in an event
is the redacted form (:attr:`Source.display_url`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import json
import logging
import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog

from .held import Held
from .log_schema import SCHEMA_VERSION  # the version of the records below (a leaf: the audit reads it alone)
from .model import SkipReason

if TYPE_CHECKING:
    from .model import Failure, LoadResult, Note, Section, SourceRecord
    from .sources import Source

__all__ = [
    "EVENTS",
    "FIELD_MEANINGS",
    "SCHEMA_VERSION",
    "BuiltLine",
    "BytesReplaced",
    "CandidatePassed",
    "ContentEscaped",
    "EventSpec",
    "FolderSearched",
    "FrontmatterInvalid",
    "Manifests",
    "OutputFailed",
    "OutputUnchanged",
    "OutputWritten",
    "PromptBuilt",
    "PromptFailed",
    "PromptManifest",
    "SearchLimited",
    "SourceDropped",
    "SourceExpanded",
    "SourceLoaded",
    "SourceRetried",
    "SourceSkipped",
    "SourceStale",
    "SourceTruncated",
    "SourceUnwatched",
    "bytes_replaced",
    "candidate_passed",
    "folder_searched",
    "manifest_entry",
    "output_failed",
    "output_file",
    "processor_note",
    "prompt_failed",
    "render_scope",
    "rule_not_applicable",
    "search_limited",
    "source_dropped",
    "source_expanded",
    "source_loaded",
    "source_retried",
    "source_skipped",
    "source_stale",
    "source_unwatched",
]

LOGGER_NAME = "memconfig"
LEVELS: Mapping[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_stdlib = logging.getLogger(LOGGER_NAME)
_stdlib.addHandler(logging.NullHandler())  # the library's own logger: silent unless the application says otherwise
#: structlog's configuration by identity, its logger assembled, and its processors when its loggers print to stdout
_bound: tuple[tuple[int, ...], Any, Any] | None = None


def _structlog_logger() -> Any:
    """structlog's logger when the application configured structlog, else ``False`` (events go to stdlib logging).

    structlog counts as the application's when ``structlog.configure`` was
    called and the result is not structlog's own out-of-the-box set-up (its
    built-in processors printing to stdout): ``structlog.testing.capture_logs()``
    calls ``configure`` and, on its way out, leaves exactly that set-up behind,
    which would print memconfig's events on stdout. Inside ``capture_logs`` the
    events go to it, as to any configuration the application made.

    A lazy proxy assembles a new logger on every call; memconfig logs on every
    render, so it keeps the assembled one until ``structlog.configure`` changes
    what it is made of. (Holding it keeps those objects alive, so their ids
    cannot be reused by a later configuration.)
    """
    global _bound
    if not structlog.is_configured():
        return False
    token = _configuration()
    bound = _bound
    if bound is None or bound[0] != token:
        found = structlog.get_config()
        printing = found["processors"] if _prints_to_stdout(found["logger_factory"]) else None
        bound = _bound = (token, structlog.get_logger(LOGGER_NAME).bind(), printing)
    # capture_logs changes the processors in place: only their content tells its inside from its aftermath
    if bound[2] is not None and _built_in(bound[2]):
        return False
    return bound[1]


def _configuration() -> tuple[int, ...]:
    """What structlog's current configuration is made of, by identity (``configure`` replaces them)."""
    config = _STRUCTLOG_CONFIG
    if config is not None:  # read in place: ``structlog.get_config()`` copies it into a new dict each call
        return (
            id(config.default_processors),
            id(config.logger_factory),
            id(config.default_wrapper_class),
            id(config.default_context_class),
        )
    found = structlog.get_config()
    return (
        id(found["processors"]),
        id(found["logger_factory"]),
        id(found["wrapper_class"]),
        id(found["context_class"]),
    )


def _prints_to_stdout(factory: object) -> bool:
    """Whether structlog's *factory* makes loggers that write to stdout (its default does)."""
    printers = (structlog.PrintLoggerFactory, structlog.WriteLoggerFactory, structlog.BytesLoggerFactory)
    if not isinstance(factory, printers):
        return False
    file = getattr(factory, "_file", None)  # None: the logger's default, stdout
    return file is None or file in (sys.stdout, sys.__stdout__, getattr(sys.stdout, "buffer", None))


def _built_in(processors: Any) -> bool:
    """Whether *processors* are structlog's built-in defaults, the very objects (as ``reset_defaults`` sets them)."""
    default = _BUILT_IN_PROCESSORS
    return (
        isinstance(processors, (list, tuple))
        and len(processors) == len(default)
        and all(mine is theirs for mine, theirs in zip(processors, default, strict=True))
    )


_STRUCTLOG_CONFIG = getattr(getattr(structlog, "_config", None), "_CONFIG", None)
if not all(
    hasattr(_STRUCTLOG_CONFIG, name)
    for name in ("default_processors", "logger_factory", "default_wrapper_class", "default_context_class")
):
    _STRUCTLOG_CONFIG = None
#: structlog's own default processors (a private name: when it is gone, every configuration counts as the application's)
_BUILT_IN_PROCESSORS: Sequence[Any] = getattr(getattr(structlog, "_config", None), "_BUILTIN_DEFAULT_PROCESSORS", ())
if not isinstance(_BUILT_IN_PROCESSORS, (list, tuple)) or not _BUILT_IN_PROCESSORS:
    _BUILT_IN_PROCESSORS = (object(),)  # matches no configuration

_PASS_LOGGER: contextvars.ContextVar[Any] = contextvars.ContextVar("memconfig_pass_logger", default=None)


@contextlib.contextmanager
def one_pass() -> Iterator[None]:
    """Look up the logger once for a pass that logs a line per source (instead of once per line)."""
    token = _PASS_LOGGER.set(_structlog_logger())
    try:
        yield
    finally:
        _PASS_LOGGER.reset(token)


_RENDER_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("memconfig_render_id", default=None)
_PROCESS_PREFIX = uuid.uuid4().hex[:12]
_renders = itertools.count(1)


class render_scope:
    """A new render id, carried by every event logged in this context (threads and tasks alike).

    Ids are this process's random prefix and a counter: distinct across
    threads, tasks and processes, and cheap enough for every turn.
    """

    __slots__ = ("_token", "render_id")

    def __init__(self) -> None:
        self.render_id = f"{_PROCESS_PREFIX}-{next(_renders)}"

    def __enter__(self) -> str:
        self._token = _RENDER_ID.set(self.render_id)
        return self.render_id

    def __exit__(self, *exc: object) -> None:
        _RENDER_ID.reset(self._token)


def _emit(level: str, event: str, fields: dict[str, Any]) -> None:
    fields["render_id"] = _RENDER_ID.get()
    logger = _PASS_LOGGER.get()
    if logger is None:
        logger = _structlog_logger()
    if logger is not False:
        getattr(logger, level)(event, **fields)
        return
    number = LEVELS[level]
    if _stdlib.isEnabledFor(number):
        record = {"event": event, **fields}
        _stdlib.log(number, json.dumps(record, default=str), extra={"memconfig": record})


#: What the fields several events share mean; a record's own docstring under a field says more where it must
#: (the documentation's event reference is made from these and the records).
FIELD_MEANINGS: Mapping[str, str] = MappingProxyType(
    {
        "source": "The source's key: its location as written (credentials masked); an expansion child's is derived "
        "from its parent's (``a.md (via *.md)`` for a repeat).",
        "name": "The name the config gave the source (default: its key).",
        "url": "Where it is read from, resolved, credentials masked.",
        "parent": "The key of the source it was expanded from (a glob, a discovery, an importing file), or null.",
        "via": "The expander that made it (``glob``, ``discover``, ``import``, a plugin's); null for a declared one.",
        "reason": "Why, in one word: a skip reason (below), or the event's own list.",
        "detail": "The specifics, in words (a file's error, an HTTP status, a budget's sizes).",
        "duration_ms": "Milliseconds it took.",
        "sha256": "The SHA-256 of the source's content.",
        "bytes": "Its size in bytes.",
        "chars": "Its size in characters (in the block, where it is in one).",
        "processor": "The processor that did it (a built-in rule's name, or yours).",
        "schema": "The event schema's version (``SCHEMA_VERSION``).",
        "path": "The output file (a secret ``${VAR}``'s value in it masked).",
        "format": "The ``--format`` written.",
    }
)


class SourceLoaded(NamedTuple):
    """a source was read and its content is in the prompt"""

    source: str
    name: str
    url: str
    parent: str | None
    via: str | None
    bytes: int
    chars: int
    sha256: str | None
    """The SHA-256 of the content as read."""
    duration_ms: float
    cache: str
    """``miss`` (new to this state), ``refreshed`` (changed, or back after failing), ``hit`` (read again, the same
    bytes: a forced ``load()`` or a new configuration)."""


class SourceSkipped(NamedTuple):
    """a source is not in the prompt, and why"""

    source: str
    name: str
    url: str
    parent: str | None
    via: str | None
    reason: str
    detail: str
    required: bool
    """Whether the config marked the source ``required`` (a required source's skip is a failed render, unless a
    good copy is kept)."""
    duration_ms: float


class SourceStale(NamedTuple):
    """a refresh failed; the last good content stays in the prompt"""

    source: str
    name: str
    url: str
    reason: str
    detail: str
    sha256: str | None
    """The SHA-256 of the last good content, which stays in the prompt."""


class SourceRetried(NamedTuple):
    """a remote read failed in a way that may pass, and is tried again after a delay"""

    source: str
    name: str
    url: str
    attempt: int
    """The attempt that failed (1: the first)."""
    reason: str
    detail: str
    delay: float
    """Seconds until the next attempt (a server's ``Retry-After``, capped at the source's timeout)."""


class SourceExpanded(NamedTuple):
    """an expander turned a source into these children (logged when they change)"""

    source: str
    url: str
    via: str
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, by design
    """How many children."""
    matches: list[str]
    """The children's keys, in prompt order."""


class BytesReplaced(NamedTuple):
    """a source is not valid text in loader.encoding; under on_decode_error: replace, its invalid bytes
    were replaced by U+FFFD (detail: where the first one is)"""

    source: str
    name: str
    url: str
    encoding: str
    """The encoding the source was read in (``loader.encoding``)."""
    detail: str


class FolderSearched(NamedTuple):
    """a discovery looked in this folder (root: the project root found, or null); taken: the files it took"""

    source: str
    via: str
    folder: str
    """The folder looked in."""
    root: str | None
    """The project root found (the nearest folder holding a root marker), or null."""
    taken: list[str]
    """The files taken in that folder."""


class CandidatePassed(NamedTuple):
    """a discovery passed over a candidate file: missing, not_regular_file (a directory, FIFO, symlink
    loop …), blank, or too_many (a pattern matched more than loader.max_matches files in one folder)"""

    source: str
    via: str
    folder: str
    """The folder looked in."""
    candidate: str
    """The candidate's path."""
    reason: str
    detail: str


class SearchLimited(NamedTuple):
    """a discovery's downward search stopped at discover.down.max_dirs: folders (the count searched below
    folder, its start) is the limit, and deeper or later folders, with any file in them, were not seen"""

    source: str
    via: str
    folder: str
    """The folder the downward search started from."""
    max_dirs: int
    """The limit (``discover.down.max_dirs``)."""
    folders: int
    """The folders searched below it."""


class SourceUnwatched(NamedTuple):
    """under cache policy watch, a source that is not watched (remote, or the watcher could not start):
    it is revalidated on every render instead"""

    source: str
    name: str
    url: str
    reason: str
    detail: str


class SourceDropped(NamedTuple):
    """a processor took a loaded source out of the prompt"""

    source: str
    name: str
    url: str
    reason: str
    processor: str
    chars: int
    """Its characters before it was taken out."""
    detail: str


class SourceTruncated(NamedTuple):
    """a budget (the source's own, or the block's) cut a source on a line boundary (max_bytes: on a byte
    boundary); the rest is shown"""

    source: str
    name: str
    url: str
    processor: str
    budget: str | None
    """``source`` (its own limit) or ``total`` (``formatter.budget``)."""
    setting: str | None
    """The key that cut it (``formatter.budget.max_chars``, ``sources[1].max_tokens`` …)."""
    unit: str | None
    """``chars``, ``tokens`` or ``bytes``."""
    limit: int | None
    """The limit, in that unit."""
    chars_before: int | None
    """Its characters before the cut."""
    chars_after: int | None
    """Its characters after the cut, the marker included."""
    tokens_before: int | None
    """Its tokens before the cut (a ``max_tokens`` limit), else null."""
    tokens_after: int | None
    """Its tokens after the cut (a ``max_tokens`` limit), else null."""
    bytes_before: int | None
    """Its UTF-8 bytes before the cut (``max_bytes``), else null."""
    bytes_after: int | None
    """Its UTF-8 bytes after the cut (``max_bytes``), else null."""
    marker: bool | None
    """Whether a marker was left where it was cut (false: the marker is ``""``)."""


class ContentEscaped(NamedTuple):
    """a source held its wrapper's closing tag, neutralised so that it cannot end the block"""

    source: str
    name: str
    url: str
    processor: str
    tags: list[str] | None
    """The closing tags neutralised."""
    count: int | None  # type: ignore[assignment]  # as SourceExpanded.count
    """How many were."""


class FrontmatterInvalid(NamedTuple):
    """a rule file's frontmatter could not be read (file and line in detail); the file is applied,
    as if it said alwaysApply: true"""

    source: str
    name: str
    url: str
    processor: str
    line: int | None
    """The line of the problem in the file."""
    detail: str | None


class PromptManifest(NamedTuple):
    """a render made a new block: what it holds, source by source in prompt order; logged once per block made,
    before the prompt_built that names the same sha256"""

    config: str
    """Which config's renders it is of, the same across processes: a hash of the config file's path, or of the
    declared sources' keys."""
    sha256: str
    """The block's SHA-256, as in the ``prompt_built`` that follows."""
    chars: int
    """The block's characters."""
    sources: list[dict[str, Any]]
    """One entry per declared source and expansion child, in prompt order, in the prompt or not: ``source``,
    ``name``, ``url``, ``status`` (``loaded``, ``stale``, ``skipped``), ``chars`` (in the block), ``sha256`` (of its
    content), and where they apply ``reason``, ``detail``, ``parent``, ``via``, ``cut`` (a budget cut it),
    ``escaped`` (its closing tags were), ``dropped`` (a processor took it out), ``expanded`` (a source whose
    children follow it, with no text of its own)."""


class PromptBuilt(NamedTuple):
    """one render finished: counts, the block's size and hash, what the cache did"""

    schema: int
    sources_loaded: int
    """Sections in the block (an importing file and its imports are one)."""
    sources_skipped: int
    """Sources not in the block."""
    chars: int
    """The block's characters."""
    sha256: str
    """The block's SHA-256: the same inputs give the same hash, a prompt-cache key."""
    duration_ms: float
    memo: bool
    """The block was served again from the memo (nothing changed since the last render of this state)."""
    cache_hits: int
    """Files whose kept copy was used. ``cache_hits``, ``loaded``, ``refreshed`` and ``stale`` count files, an
    imported file included: they add up to the files in the block."""
    revalidated: int
    """Files checked for a change (``revalidate``, ``ttl``, ``watch``)."""
    refreshed: int
    """Files read again because they changed (or came back after failing)."""
    stale: int
    """Files whose refresh failed, their last good copy kept."""
    loaded: int
    """Files read for the first time in this state."""
    skipped: int
    """Sources skipped in this render."""
    dropped: int
    """Sources a processor (or a budget) took out."""
    truncated: int
    """Sources a budget cut."""
    escaped: int
    """Sources whose closing tags were neutralised."""


class OutputWritten(NamedTuple):
    """render -o wrote the output file (atomically: a reader sees the old file or the new one)"""

    path: str
    format: str
    bytes: int
    sha256: str
    """The SHA-256 of the file's bytes."""


class OutputUnchanged(NamedTuple):
    """render -o found the output file already holding this content, and left it untouched"""

    path: str
    format: str
    bytes: int
    sha256: str
    """The SHA-256 of the file's bytes."""


class OutputFailed(NamedTuple):
    """render -o could not write the output file (detail: why); the file is as it was. Without --watch
    the run exits 74; under --watch the write is tried again until one passes"""

    path: str
    format: str
    bytes: int
    sha256: str
    """The SHA-256 of the output it tried to write."""
    detail: str


class PromptFailed(NamedTuple):
    """a render failed: every source it needed and did not get (or, over a budget with policy fail,
    the largest sources, reason over_budget)"""

    schema: int
    failures: list[dict[str, Any]]
    """Every source the render needed and did not get: each ``source``, ``name``, ``url``, ``reason``, ``detail``."""
    sources_loaded: int
    """Sections it had."""
    sources_skipped: int
    """Sources it skipped."""
    duration_ms: float


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event of the load log: its name, its record (whose fields it has, besides ``render_id``), its level rule.

    The record's docstring says what the event means: every part that writes
    or reads the event (the emitters, ``audit``, the docs' table) takes its
    fields from the record, so a field is named in one place.
    """

    name: str
    record: type[tuple[Any, ...]]
    level: str
    """``info``, ``warning``, ``error``, ``debug``, or ``by reason`` (``source_skipped``: see
    :func:`source_skipped`; ``debug`` for ``not_applicable``, see :func:`rule_not_applicable`)."""

    @property
    def fields(self) -> tuple[str, ...]:
        """The event's fields, in order: the record's."""
        return self.record._fields  # type: ignore[attr-defined,no-any-return]

    @property
    def about(self) -> str:
        """What the event means, in one line: the record's docstring."""
        return " ".join((self.record.__doc__ or "").split())


EVENTS: Mapping[str, EventSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            EventSpec("source_loaded", SourceLoaded, "info"),
            EventSpec("source_skipped", SourceSkipped, "by reason"),
            EventSpec("source_stale", SourceStale, "warning"),
            EventSpec("source_retried", SourceRetried, "warning"),
            EventSpec("source_expanded", SourceExpanded, "info"),
            EventSpec("bytes_replaced", BytesReplaced, "warning"),
            EventSpec("folder_searched", FolderSearched, "debug"),
            EventSpec("candidate_passed", CandidatePassed, "debug"),
            EventSpec("search_limited", SearchLimited, "info"),
            EventSpec("source_unwatched", SourceUnwatched, "warning"),
            EventSpec("source_dropped", SourceDropped, "warning"),
            EventSpec("source_truncated", SourceTruncated, "warning"),
            EventSpec("content_escaped", ContentEscaped, "warning"),
            EventSpec("frontmatter_invalid", FrontmatterInvalid, "warning"),
            EventSpec("prompt_manifest", PromptManifest, "info"),
            EventSpec("prompt_built", PromptBuilt, "info"),
            EventSpec("output_written", OutputWritten, "info"),
            EventSpec("output_unchanged", OutputUnchanged, "info"),
            EventSpec("output_failed", OutputFailed, "error"),
            EventSpec("prompt_failed", PromptFailed, "error"),
        )
    }
)
#: Each record's event: its name, level and fields, looked up once per line.
_SPECS: Mapping[type, tuple[str, str, tuple[str, ...]]] = MappingProxyType(
    {spec.record: (spec.name, spec.level, spec.fields) for spec in EVENTS.values()}
)


def _log(record: tuple[Any, ...], level: str | None = None) -> None:
    """Log *record* as its event (at its declared level, or *level* for one whose level goes by reason)."""
    name, declared, fields = _SPECS[type(record)]
    _emit(level or declared, name, dict(zip(fields, record, strict=True)))


def source_loaded(result: LoadResult, chars: int, cache: str) -> None:
    """A source was read and its content is in the prompt (*cache*: ``miss``, ``refreshed`` or ``hit``)."""
    s = result.source
    _log(
        SourceLoaded(
            s.key, s.name, s.display_url, s.parent, s.via, result.bytes, chars, result.sha256, result.duration_ms, cache
        )
    )


def source_skipped(source: Source, reason: str, detail: str, duration_ms: float = 0.0) -> None:
    """A source is not in the prompt, and why.

    ``info`` for an optional source that is simply not there, and for a file
    found (imported, matched or discovered) that is already in the prompt (a
    diamond of imports, two discoveries of one folder: nothing is missing);
    ``warning`` for any other reason, for any required source, for a declared
    source that repeats another, for a missing import not marked optional (``@path?``),
    and for a missing ``url:`` that looks like a glob (:attr:`Source.glob_like`: its detail says to write ``glob:``).
    """
    ref = source.import_of
    quiet = not source.required and (
        (reason == SkipReason.NOT_FOUND and (ref is None or ref.optional) and not source.glob_like)
        or (reason == SkipReason.DUPLICATE and source.via is not None)
    )
    record = SourceSkipped(
        source.key,
        source.name,
        source.display_url,
        source.parent,
        source.via,
        str(reason),
        detail,
        source.required,
        duration_ms,
    )
    _log(record, "info" if quiet else "warning")


def rule_not_applicable(section: Section, detail: str) -> None:
    """A rule file does not apply to this render's paths: ``source_skipped``, reason ``not_applicable``, at ``debug``.

    By design, not a problem: ``required`` is false, since no such skip ever fails a render.
    """
    s = section
    _log(
        SourceSkipped(s.source, s.name, s.url, s.parent, s.via, str(SkipReason.NOT_APPLICABLE), detail, False, 0.0),
        "debug",
    )


def bytes_replaced(source: Source, encoding: str, detail: str) -> None:
    """*source* was read with its invalid bytes replaced (``on_decode_error: replace``)."""
    _log(BytesReplaced(source.key, source.name, source.display_url, encoding, detail))


def folder_searched(source: Source, folder: str, root: str | None, taken: Sequence[str]) -> None:
    """A discovery of *source* looked in *folder* and took *taken* (paths) from it."""
    _log(FolderSearched(source.key, "discover", folder, root, list(taken)))


def candidate_passed(source: Source, folder: str, candidate: str, reason: str, detail: str) -> None:
    """A discovery of *source* passed over *candidate* in *folder*, for *reason*."""
    _log(CandidatePassed(source.key, "discover", folder, candidate, reason, detail))


def search_limited(source: Source, folder: str, max_dirs: int, folders: int) -> None:
    """A discovery of *source* searched *folders* folders below *folder* and stopped there, at *max_dirs*."""
    _log(SearchLimited(source.key, "discover", folder, max_dirs, folders))


def source_stale(source: Source, reason: str, detail: str, sha256: str | None) -> None:
    """A source failed to refresh; its last good content stays in the prompt."""
    _log(SourceStale(source.key, source.name, source.display_url, str(reason), detail, sha256))


def source_retried(source: Source, attempt: int, reason: str, detail: str, delay: float) -> None:
    """Attempt *attempt* of a remote read failed transiently; the next starts in *delay* seconds."""
    _log(SourceRetried(source.key, source.name, source.display_url, attempt, str(reason), detail, round(delay, 3)))


def source_expanded(source: Source, via: str, matches: Iterable[str]) -> None:
    """Expander *via* turned *source* into these children, in this order."""
    found = list(matches)
    _log(SourceExpanded(source.key, source.display_url, via, len(found), found))


def source_dropped(section: Section, reason: str, processor: str, detail: str = "") -> None:
    """Processor *processor* took the loaded source of *section* out of the prompt."""
    s = section
    _log(SourceDropped(s.source, s.name, s.url, str(reason), processor, len(s.text), detail))


def source_unwatched(source: Source, reason: str, detail: str) -> None:
    """Under cache policy ``watch``, *source* is not watched (and so is revalidated on every render)."""
    _log(SourceUnwatched(source.key, source.name, source.display_url, reason, detail))


def output_file(written: bool, path: str, format: str, size: int, sha256: str, render_id: str) -> None:
    """``render -o`` wrote *path* (or, *written* false, found it holding this content already)."""
    record = (OutputWritten if written else OutputUnchanged)(path, format, size, sha256)
    _log_for(render_id, record)


def output_failed(path: str, format: str, size: int, sha256: str, detail: str, render_id: str) -> None:
    """``render -o`` could not write *path* (*detail*: the reason); the file is as it was."""
    _log_for(render_id, OutputFailed(path, format, size, sha256, detail))


def _log_for(render_id: str, record: tuple[Any, ...]) -> None:
    """An event of the render *render_id*, logged after its scope closed (``render -o`` writes once it is built)."""
    token = _RENDER_ID.set(render_id)
    try:
        _log(record)
    finally:
        _RENDER_ID.reset(token)


#: The events a processor's :class:`~memconfig.process.Note` may be, and the count each adds to in ``prompt_built``.
NOTE_COUNTS: Mapping[str, str] = MappingProxyType({"source_truncated": "truncated", "content_escaped": "escaped"})


def processor_note(note: Note) -> None:
    """What a processor did to a section it kept: the note's event, with the note's fields (those its record has).

    A field the note does not give is logged as null; one the event does not declare is not logged.
    """
    spec = EVENTS[note.event]
    section = note.section
    fields = dict.fromkeys(spec.fields)
    fields.update((key, value) for key, value in note.fields.items() if key in fields)
    fields.update(source=section.source, name=section.name, url=section.url, processor=note.processor)
    _log(spec.record(**fields))


class BuiltLine:
    """``prompt_built`` for renders that differ only in their duration: the fields bound once.

    An unchanged turn logs the same counts, size and hash as the turn before;
    binding them to the logger once leaves a turn two fields to pass, not
    fifteen (the line is the larger part of an unchanged turn's cost).
    """

    __slots__ = ("_bound", "_fields")

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = PromptBuilt(schema=SCHEMA_VERSION, duration_ms=0.0, **fields)._asdict()
        del self._fields["duration_ms"]  # the one field that differs from turn to turn
        self._bound: tuple[Any, Any] | None = None  # (the logger it was bound to, the bound logger)

    def __call__(self, duration_ms: float) -> None:
        if _PASS_LOGGER.get() is None and (logger := _structlog_logger()) is not False:
            bound = self._bound
            if bound is None or bound[0] is not logger:
                bound = self._bound = (logger, logger.bind(**self._fields))
            bound[1].info("prompt_built", duration_ms=duration_ms, render_id=_RENDER_ID.get())
            return
        _emit("info", "prompt_built", {**self._fields, "duration_ms": duration_ms})


class Manifests:
    """``prompt_manifest`` for one pipeline's new blocks (see :func:`manifest_entry`).

    The manifest names its config by a hash (of *file*, or without one of the
    declared sources' keys): what a later block of the same config no longer
    lists is no longer one of its sources, whichever process renders it. The
    hash is made once; an entry is made again only for a record that changed
    (the record of a source that did not change is the same object from block
    to block, and so is its entry).
    """

    __slots__ = ("_config", "_file", "_held")

    def __init__(self, file: str | None = None) -> None:
        self._file = file
        self._config: str | None = None
        self._held: Held[tuple[SourceRecord, bool, dict[str, Any]]] = Held()

    def log(self, sha256: str, chars: int, records: Sequence[SourceRecord]) -> None:
        """A render made a new block, *sha256*, of *chars* characters, holding *records*: its manifest."""
        if self._config is None:
            named = self._file if self._file is not None else "\n".join([r.source for r in records if r.parent is None])
            self._config = hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        _log(PromptManifest(self._config, sha256, chars, self.entries(records)))

    def entries(self, records: Sequence[SourceRecord]) -> list[dict[str, Any]]:
        """The manifest's entries for *records*, in order."""
        expanded = {r.parent for r in records if r.parent is not None and r.via != "import"}
        last, made = self._held.last, self._held.start()
        listed = []
        for record in records:
            key, parent = record.source, record.source in expanded
            found = last.get(key)
            if found is not None and found[0] is record and found[1] is parent:
                listed.append(found[2])
                if made is not None:
                    made[key] = found
                continue
            entry = manifest_entry(record, parent)
            if made is not None:  # kept from the second block on
                made[key] = (record, parent, entry)
            listed.append(entry)
        self._held.finish(made)
        return listed


#: What a source's notes say was done to it, as a manifest entry's flags.
_NOTE_FLAGS: Mapping[str, str] = MappingProxyType(
    {"source_truncated": "cut", "content_escaped": "escaped", "source_dropped": "dropped"}
)


def manifest_entry(record: SourceRecord, expanded: bool = False) -> dict[str, Any]:
    """One source of a block's manifest: its record, with the fields that hold nothing left out.

    ``source``, ``name``, ``url``, ``status``, ``chars`` and ``sha256`` always;
    ``reason`` and ``detail`` for a source out of the prompt (or stale),
    ``parent`` and ``via`` for an expansion child, ``cut`` / ``escaped`` (true)
    for one a budget cut or whose closing tags were escaped, ``dropped`` (true) for
    one a processor took out (its ``reason`` says why), ``expanded`` (true)
    for one whose children follow it (a glob: its ``chars`` are theirs).
    """
    entry: dict[str, Any] = {
        "source": record.source,
        "name": record.name,
        "url": record.url,
        "status": str(record.status),
        "chars": record.chars,
        "sha256": record.sha256,
    }
    if record.reason is not None:
        entry["reason"] = str(record.reason)
        if record.detail:
            entry["detail"] = record.detail
    if record.parent is not None:
        entry["parent"] = record.parent
        entry["via"] = record.via
    if expanded:
        entry["expanded"] = True
    for note in record.notes:
        flag = _NOTE_FLAGS.get(note)
        if flag is not None:
            entry[flag] = True
    return entry


def prompt_failed(failures: Sequence[Failure], fields: dict[str, Any]) -> None:
    """A render failed: every source it needed and did not get (each by its key and its name)."""
    listed = [
        {"source": f.source, "name": f.name or f.source, "url": f.url, "reason": str(f.reason), "detail": f.detail}
        for f in failures
    ]
    _log(PromptFailed(SCHEMA_VERSION, listed, **fields))
