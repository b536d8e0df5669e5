"""The load log: one structured event per fact, and the CLI's log setup.

The library never configures logging. If the application has configured
structlog, events go through it; otherwise they go to the stdlib logger
``memconfig`` as JSON text (with the fields in ``record.memconfig``), which
prints nothing unless the application asked for it. Nothing is ever written
to stdout.

Events: ``source_loaded``, ``source_skipped``, ``source_stale``,
``source_expanded``, ``prompt_built``. Every URL in an event is the redacted
form (:attr:`Source.display_url`).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO, cast

import structlog

if TYPE_CHECKING:
    from .sources import Source
    from .stages import LoadResult

__all__ = [
    "configure_cli_logging",
    "prompt_built",
    "source_expanded",
    "source_loaded",
    "source_skipped",
    "source_stale",
]

LOGGER_NAME = "memconfig"
_LEVELS: Mapping[str, int] = {
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
    config = structlog.get_config()
    token = (
        id(config["processors"]),
        id(config["logger_factory"]),
        id(config["wrapper_class"]),
        id(config["context_class"]),
    )
    if _bound is None or _bound[0] != token:
        _bound = (token, structlog.get_logger(LOGGER_NAME).bind())
    return _bound[1]


_PASS_LOGGER: contextvars.ContextVar[Any] = contextvars.ContextVar("memconfig_pass_logger", default=None)


@contextlib.contextmanager
def one_pass() -> Iterator[None]:
    """Look up the logger once for a pass that logs a line per source (instead of once per line)."""
    token = _PASS_LOGGER.set(_structlog_logger() if structlog.is_configured() else False)
    try:
        yield
    finally:
        _PASS_LOGGER.reset(token)


def _emit(level: str, event: str, fields: dict[str, Any]) -> None:
    logger = _PASS_LOGGER.get()
    if logger is None:
        logger = _structlog_logger() if structlog.is_configured() else False
    if logger is not False:
        getattr(logger, level)(event, **fields)
        return
    number = _LEVELS[level]
    if _stdlib.isEnabledFor(number):
        record = {"event": event, **fields}
        _stdlib.log(number, json.dumps(record, default=str), extra={"memconfig": record})


def source_loaded(result: LoadResult, chars: int, cache: str) -> None:
    """A source was read and its content is in the prompt."""
    source = result.source
    _emit(
        "info",
        "source_loaded",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "bytes": result.bytes,
            "chars": chars,
            "sha256": result.sha256,
            "duration_ms": result.duration_ms,
            "cache": cache,
        },
    )


def source_skipped(source: Source, reason: str, detail: str, duration_ms: float = 0.0) -> None:
    """A source is not in the prompt, and why (a reason from ``SKIP_REASONS``)."""
    _emit(
        "warning" if source.required else "info",
        "source_skipped",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "reason": reason,
            "detail": detail,
            "required": source.required,
            "duration_ms": duration_ms,
        },
    )


def source_stale(source: Source, reason: str, detail: str, sha256: str | None) -> None:
    """A source failed to refresh; its last good content stays in the prompt."""
    _emit(
        "warning",
        "source_stale",
        {
            "source": source.key,
            "name": source.name,
            "url": source.display_url,
            "reason": reason,
            "detail": detail,
            "sha256": sha256,
        },
    )


def source_expanded(source: Source, matches: Iterable[str]) -> None:
    """A glob source was expanded into these matches, in this order."""
    found = list(matches)
    _emit(
        "info",
        "source_expanded",
        {"source": source.key, "url": source.display_url, "count": len(found), "matches": found},
    )


def prompt_built(**fields: Any) -> None:
    """One render finished: counts, the block's size and hash, and what the cache did."""
    _emit("info", "prompt_built", fields)


def configure_cli_logging(format: str = "json", level: str = "info", stream: IO[Any] | None = None) -> None:
    """Configure structlog globally for the command line: JSON lines or console text to *stream*.

    Given a binary stream, JSON lines are rendered by orjson and written as
    bytes: the configuration structlog's performance notes recommend, since a
    render logs a line per source. Console text needs a text stream.
    """
    import sys

    import orjson  # the CLI's dependency; the library itself renders nothing

    stream = stream if stream is not None else sys.stderr
    renderer: Any
    factory: Any
    if format == "json" and not isinstance(stream, io.TextIOBase):
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory(file=cast(BinaryIO, stream))
    else:
        renderer = (
            structlog.processors.JSONRenderer() if format == "json" else structlog.dev.ConsoleRenderer(colors=False)
        )
        factory = structlog.WriteLoggerFactory(file=cast(TextIO, stream))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
