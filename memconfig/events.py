"""The load log: one structured event per fact, and the CLI's log setup.

The library never configures logging. If the application has configured
structlog, events go through it; otherwise they go to the stdlib logger
``memconfig`` as JSON text (with the fields in ``record.memconfig``), which
prints nothing unless the application asked for it. Nothing is ever written
to stdout.

Every event is declared once, in :data:`EVENTS` (its name, level rule and
fields), which the emitters here and the log readers use alike; the schema
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
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from .failures import Failure
    from .model import Section, SourceRecord
    from .process import Note
    from .sources import Source
    from .stages import LoadResult

__all__ = [
    "EVENTS",
    "SCHEMA_VERSION",
    "EventSpec",
    "PromptBuilt",
    "bytes_replaced",
    "candidate_passed",
    "folder_searched",
    "output_failed",
    "output_file",
    "processor_note",
    "prompt_failed",
    "prompt_manifest",
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
_bound: tuple[tuple[int, ...], Any] | None = None


def _structlog_logger() -> Any:
    """structlog's logger for the current configuration, assembled once per configuration.

    A lazy proxy assembles a new logger on every call; memconfig logs on every
    render, so it keeps the assembled one until ``structlog.configure`` changes
    what it is made of. (Holding it keeps those objects alive, so their ids
    cannot be reused by a later configuration.)
    """
    global _bound
    token = _configuration()
    if _bound is None or _bound[0] != token:
        _bound = (token, structlog.get_logger(LOGGER_NAME).bind())
    return _bound[1]


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


_STRUCTLOG_CONFIG = getattr(getattr(structlog, "_config", None), "_CONFIG", None)
if not all(
    hasattr(_STRUCTLOG_CONFIG, name)
    for name in ("default_processors", "logger_factory", "default_wrapper_class", "default_context_class")
):
    _STRUCTLOG_CONFIG = None

_PASS_LOGGER: contextvars.ContextVar[Any] = contextvars.ContextVar("memconfig_pass_logger", default=None)


@contextlib.contextmanager
def one_pass() -> Iterator[None]:
    """Look up the logger once for a pass that logs a line per source (instead of once per line)."""
    token = _PASS_LOGGER.set(_structlog_logger() if structlog.is_configured() else False)
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
        logger = _structlog_logger() if structlog.is_configured() else False
    if logger is not False:
        getattr(logger, level)(event, **fields)
        return
    number = LEVELS[level]
    if _stdlib.isEnabledFor(number):
        record = {"event": event, **fields}
        _stdlib.log(number, json.dumps(record, default=str), extra={"memconfig": record})


#: The version of the event schema below; bumped when a field changes meaning or goes away.
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event of the load log: its name, its fields (besides ``render_id``) and its level rule."""

    name: str
    fields: tuple[str, ...]
    level: str
    """``info``, ``warning``, or ``by reason`` (``source_skipped``: see :func:`source_skipped`; ``debug`` for
    ``not_applicable``, see :func:`rule_not_applicable`)."""
    about: str


_SOURCE = ("source", "name", "url")
EVENTS: Mapping[str, EventSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            EventSpec(
                "source_loaded",
                (*_SOURCE, "parent", "via", "bytes", "chars", "sha256", "duration_ms", "cache"),
                "info",
                "a source was read and its content is in the prompt",
            ),
            EventSpec(
                "source_skipped",
                (*_SOURCE, "parent", "via", "reason", "detail", "required", "duration_ms"),
                "by reason",
                "a source is not in the prompt, and why",
            ),
            EventSpec(
                "source_stale",
                (*_SOURCE, "reason", "detail", "sha256"),
                "warning",
                "a refresh failed; the last good content stays in the prompt",
            ),
            EventSpec(
                "source_retried",
                (*_SOURCE, "attempt", "reason", "detail", "delay"),
                "warning",
                "a remote read failed in a way that may pass, and is tried again after a delay",
            ),
            EventSpec(
                "source_expanded",
                ("source", "url", "via", "count", "matches"),
                "info",
                "an expander turned a source into these children (logged when they change)",
            ),
            EventSpec(
                "bytes_replaced",
                (*_SOURCE, "encoding", "detail"),
                "warning",
                "a source is not valid text in loader.encoding; under on_decode_error: replace, its invalid bytes "
                "were replaced by U+FFFD (detail: where the first one is)",
            ),
            EventSpec(
                "folder_searched",
                ("source", "via", "folder", "root", "taken"),
                "debug",
                "a discovery looked in this folder (root: the project root found, or null); taken: the files it took",
            ),
            EventSpec(
                "candidate_passed",
                ("source", "via", "folder", "candidate", "reason", "detail"),
                "debug",
                "a discovery passed over a candidate file: missing, not_regular_file (a directory, FIFO, symlink "
                "loop …), blank, or too_many (a pattern matched more than loader.max_matches files in one folder)",
            ),
            EventSpec(
                "search_limited",
                ("source", "via", "folder", "max_dirs", "folders"),
                "info",
                "a discovery's downward search stopped at discover.down.max_dirs: folders (the count searched below "
                "folder, its start) is the limit, and deeper or later folders, with any file in them, were not seen",
            ),
            EventSpec(
                "source_unwatched",
                (*_SOURCE, "reason", "detail"),
                "warning",
                "under cache policy watch, a source that is not watched (remote, or the watcher could not start): "
                "it is revalidated on every render instead",
            ),
            EventSpec(
                "source_dropped",
                (*_SOURCE, "reason", "processor", "chars", "detail"),
                "warning",
                "a processor took a loaded source out of the prompt",
            ),
            EventSpec(
                "source_truncated",
                (
                    *_SOURCE,
                    "processor",
                    "budget",
                    "setting",
                    "unit",
                    "limit",
                    "chars_before",
                    "chars_after",
                    "tokens_before",
                    "tokens_after",
                    "bytes_before",
                    "bytes_after",
                    "marker",
                ),
                "warning",
                "a budget (the source's own, or the block's) cut a source on a line boundary (max_bytes: on a byte "
                "boundary); the rest is shown",
            ),
            EventSpec(
                "content_escaped",
                (*_SOURCE, "processor", "tags", "count"),
                "warning",
                "a source held its wrapper's closing tag, neutralised so that it cannot end the block",
            ),
            EventSpec(
                "frontmatter_invalid",
                (*_SOURCE, "processor", "line", "detail"),
                "warning",
                "a rule file's frontmatter could not be read (file and line in detail); the file is applied, "
                "as if it said alwaysApply: true",
            ),
            EventSpec(
                "prompt_manifest",
                ("config", "sha256", "chars", "sources"),
                "info",
                "a render made a new block: what it holds (config: which config's renders it is of, the same across "
                "processes — a hash of the config file's path, or of the declared sources' keys), source "
                "by source in prompt order (sources: one entry per declared source and expansion child, in the "
                "prompt or not: source, name, url, status, chars, sha256, and where set reason, detail, parent, via, "
                "cut, escaped, dropped, expanded — a source whose children follow it, with no text of its own); "
                "logged once per block made, before the prompt_built that names the same sha256",
            ),
            EventSpec(
                "prompt_built",
                (
                    "schema",
                    "sources_loaded",
                    "sources_skipped",
                    "chars",
                    "sha256",
                    "duration_ms",
                    "memo",
                    "cache_hits",
                    "revalidated",
                    "refreshed",
                    "stale",
                    "loaded",
                    "skipped",
                    "dropped",
                    "truncated",
                    "escaped",
                ),
                "info",
                "one render finished: counts, the block's size and hash, what the cache did",
            ),
            EventSpec(
                "output_written",
                ("path", "format", "bytes", "sha256"),
                "info",
                "render -o wrote the output file (atomically: a reader sees the old file or the new one)",
            ),
            EventSpec(
                "output_unchanged",
                ("path", "format", "bytes", "sha256"),
                "info",
                "render -o found the output file already holding this content, and left it untouched",
            ),
            EventSpec(
                "output_failed",
                ("path", "format", "bytes", "sha256", "detail"),
                "error",
                "render -o could not write the output file (detail: why); the file is as it was. Without --watch "
                "the run exits 74; under --watch the write is tried again until one passes",
            ),
            EventSpec(
                "prompt_failed",
                ("schema", "failures", "sources_loaded", "sources_skipped", "duration_ms"),
                "error",
                "a render failed: every source it needed and did not get (or, over a budget with policy fail, "
                "the largest sources, reason over_budget)",
            ),
        )
    }
)


def source_loaded(result: LoadResult, chars: int, cache: str) -> None:
    """A source was read and its content is in the prompt (*cache*: ``miss``, ``refreshed`` or ``hit``)."""
    source = result.source
    _emit(
        "info",
        "source_loaded",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "parent": source.parent,
            "via": source.via,
            "bytes": result.bytes,
            "chars": chars,
            "sha256": result.sha256,
            "duration_ms": result.duration_ms,
            "cache": cache,
        },
    )


def source_skipped(source: Source, reason: str, detail: str, duration_ms: float = 0.0) -> None:
    """A source is not in the prompt, and why.

    ``info`` for an optional source that is simply not there, and for an import
    of a file already in the prompt (a diamond of imports: nothing is missing);
    ``warning`` for any other reason, for any required source, and for a missing
    import not marked optional (``@path?``).
    """
    ref = source.import_of
    quiet = not source.required and (
        (reason == "not_found" and (ref is None or ref.optional)) or (reason == "duplicate" and ref is not None)
    )
    _emit(
        "info" if quiet else "warning",
        "source_skipped",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "parent": source.parent,
            "via": source.via,
            "reason": str(reason),
            "detail": detail,
            "required": source.required,
            "duration_ms": duration_ms,
        },
    )


def rule_not_applicable(section: Section, detail: str) -> None:
    """A rule file does not apply to this render's paths: ``source_skipped``, reason ``not_applicable``, at ``debug``.

    By design, not a problem: ``required`` is false, since no such skip ever fails a render.
    """
    _emit(
        "debug",
        "source_skipped",
        {
            "source": section.source,
            "name": section.name,
            "url": section.url,
            "parent": section.parent,
            "via": section.via,
            "reason": "not_applicable",
            "detail": detail,
            "required": False,
            "duration_ms": 0.0,
        },
    )


def bytes_replaced(source: Source, encoding: str, detail: str) -> None:
    """*source* was read with its invalid bytes replaced (``on_decode_error: replace``)."""
    fields = {"source": source.key, "name": source.name, "url": source.display_url}
    _emit("warning", "bytes_replaced", {**fields, "encoding": encoding, "detail": detail})


def folder_searched(source: Source, folder: str, root: str | None, taken: Sequence[str]) -> None:
    """A discovery of *source* looked in *folder* and took *taken* (paths) from it."""
    fields = {"source": source.key, "via": "discover", "folder": folder, "root": root, "taken": list(taken)}
    _emit("debug", "folder_searched", fields)


def candidate_passed(source: Source, folder: str, candidate: str, reason: str, detail: str) -> None:
    """A discovery of *source* passed over *candidate* in *folder*, for *reason*."""
    fields = {"source": source.key, "via": "discover", "folder": folder, "candidate": candidate}
    _emit("debug", "candidate_passed", {**fields, "reason": reason, "detail": detail})


def search_limited(source: Source, folder: str, max_dirs: int, folders: int) -> None:
    """A discovery of *source* searched *folders* folders below *folder* and stopped there, at *max_dirs*."""
    fields = {"source": source.key, "via": "discover", "folder": folder, "max_dirs": max_dirs, "folders": folders}
    _emit("info", "search_limited", fields)


def source_stale(source: Source, reason: str, detail: str, sha256: str | None) -> None:
    """A source failed to refresh; its last good content stays in the prompt."""
    _emit(
        "warning",
        "source_stale",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "reason": str(reason),
            "detail": detail,
            "sha256": sha256,
        },
    )


def source_retried(source: Source, attempt: int, reason: str, detail: str, delay: float) -> None:
    """Attempt *attempt* of a remote read failed transiently; the next starts in *delay* seconds."""
    _emit(
        "warning",
        "source_retried",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "attempt": attempt,
            "reason": str(reason),
            "detail": detail,
            "delay": round(delay, 3),
        },
    )


def source_expanded(source: Source, via: str, matches: Iterable[str]) -> None:
    """Expander *via* turned *source* into these children, in this order."""
    found = list(matches)
    _emit(
        "info",
        "source_expanded",
        {"source": source.key, "url": source.display_url, "via": via, "count": len(found), "matches": found},
    )


def source_dropped(source: str, name: str, url: str, reason: str, processor: str, chars: int, detail: str = "") -> None:
    """Processor *processor* took a loaded source (of *chars* characters) out of the prompt."""
    _emit(
        "warning",
        "source_dropped",
        {
            "source": source,
            "name": name,
            "url": url,
            "reason": str(reason),
            "processor": processor,
            "chars": chars,
            "detail": detail,
        },
    )


def source_unwatched(source: Source, reason: str, detail: str) -> None:
    """Under cache policy ``watch``, *source* is not watched (and so is revalidated on every render)."""
    _emit(
        "warning",
        "source_unwatched",
        {"source": source.key, "name": source.name, "url": source.display_url, "reason": reason, "detail": detail},
    )


def output_file(written: bool, path: str, format: str, size: int, sha256: str, render_id: str) -> None:
    """``render -o`` wrote *path* (or, *written* false, found it holding this content already)."""
    fields = {"path": path, "format": format, "bytes": size, "sha256": sha256}
    _emit_for(render_id, "info", "output_written" if written else "output_unchanged", fields)


def output_failed(path: str, format: str, size: int, sha256: str, detail: str, render_id: str) -> None:
    """``render -o`` could not write *path* (*detail*: the reason); the file is as it was."""
    fields = {"path": path, "format": format, "bytes": size, "sha256": sha256, "detail": detail}
    _emit_for(render_id, "error", "output_failed", fields)


def _emit_for(render_id: str, level: str, event: str, fields: dict[str, Any]) -> None:
    """An event of the render *render_id*, logged after its scope closed (``render -o`` writes once it is built)."""
    token = _RENDER_ID.set(render_id)
    try:
        _emit(level, event, fields)
    finally:
        _RENDER_ID.reset(token)


#: The events a processor's :class:`~memconfig.process.Note` may be, and the count each adds to in ``prompt_built``.
NOTE_COUNTS: Mapping[str, str] = MappingProxyType({"source_truncated": "truncated", "content_escaped": "escaped"})


def processor_note(note: Note) -> None:
    """What a processor did to a section it kept: the note's event, with the note's fields."""
    section = note.section
    fields = {"source": section.source, "name": section.name, "url": section.url, "processor": note.processor}
    _emit(EVENTS[note.event].level, note.event, {**fields, **note.fields})


class PromptBuilt:
    """``prompt_built`` for renders that differ only in their duration: the fields bound once.

    An unchanged turn logs the same counts, size and hash as the turn before;
    binding them to the logger once leaves a turn two fields to pass, not
    fifteen (the line is the larger part of an unchanged turn's cost).
    """

    __slots__ = ("_bound", "_fields")

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = {"schema": SCHEMA_VERSION, **fields}
        self._bound: tuple[Any, Any] | None = None  # (the logger it was bound to, the bound logger)

    def __call__(self, duration_ms: float) -> None:
        if _PASS_LOGGER.get() is None and structlog.is_configured():
            logger = _structlog_logger()
            bound = self._bound
            if bound is None or bound[0] is not logger:
                bound = self._bound = (logger, logger.bind(**self._fields))
            bound[1].info("prompt_built", duration_ms=duration_ms, render_id=_RENDER_ID.get())
            return
        _emit("info", "prompt_built", {**self._fields, "duration_ms": duration_ms})


def prompt_manifest(file: str | None, sha256: str, chars: int, records: Sequence[SourceRecord]) -> None:
    """A render of the config read from *file* made a new block: its manifest (see :func:`manifest_entry`).

    The manifest names its config by a hash (of *file*, or without one of the
    declared sources' keys): what a later block of the same config no longer
    lists is no longer one of its sources, whichever process renders it.
    """
    expanded = {r.parent for r in records if r.parent is not None and r.via != "import"}
    listed = [manifest_entry(record, record.source in expanded) for record in records]
    named = file if file is not None else "\n".join(r.source for r in records if r.parent is None)
    config = hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    _emit("info", "prompt_manifest", {"config": config, "sha256": sha256, "chars": chars, "sources": listed})


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
    _emit("error", "prompt_failed", {"schema": SCHEMA_VERSION, "failures": listed, **fields})
