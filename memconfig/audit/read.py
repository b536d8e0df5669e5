"""An audit of many logs: each opened in turn, streamed through one :class:`~memconfig.audit.aggregate.Aggregator`.

A log that cannot be read (or stops being readable half-way: a corrupt
archive, a server hanging up) keeps what was read from it, is reported with
the reason, and the others are read all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .aggregate import Aggregator, Filters
from .inputs import LogInput, line_pieces
from .mask import mask_audit
from .model import Audit, InputSummary

__all__ = ["read_audit"]


def read_audit(
    logs: Sequence[LogInput],
    filters: Filters | None = None,
    *,
    progress: Callable[[InputSummary], None] | None = None,
    secrets: Sequence[str] = (),
) -> Audit:
    """Read every log once, in order, and return what the audit found, credentials and *secrets* masked.

    *progress* is called after each log (a terminal's progress display).
    """
    aggregator = Aggregator(filters)
    for log in logs:
        summary = InputSummary(log.name)
        try:
            with log.open() as stream:
                aggregator.feed(line_pieces(stream), summary)
        except Exception as exc:  # any library's error while reading: reported, the other logs still read
            if summary not in aggregator.inputs:
                aggregator.inputs.append(summary)
            summary.error = log.redact(_reason(exc))
        if progress is not None:
            progress(summary)
    return mask_audit(aggregator.finish(), secrets)


def _reason(exc: BaseException) -> str:
    """An error as one line: the system's words for an OS error, else its type and message."""
    strerror = getattr(exc, "strerror", None)
    text = str(strerror) if strerror else f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())
