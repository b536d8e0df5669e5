"""An audit of many logs, oldest first, streamed through one :class:`~memconfig.audit.aggregate.Aggregator`.

Logs are read in the order of their first event's time, whatever order
they were named in: a glob over rotated logs (``memconfig.jsonl`` newest,
``memconfig.jsonl.1`` older) lists the newest first, and a process's renders
must be read in the order they happened for its unchanged sources (which log
nothing) to be known. A log with no time found in its first lines comes
first, in the order given (standard input and ``<(cmd)`` pipes are ordered as
files are: :mod:`memconfig.audit.inputs` keeps a copy to read twice).

A log that cannot be read (or stops being readable half-way: a corrupt
archive, a server hanging up) keeps what was read from it, is reported with
the reason, and the others are read all the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import orjson

from .aggregate import Aggregator, Filters
from .inputs import LogInput, error_text, line_pieces
from .mask import mask_audit
from .model import Audit, InputSummary
from .times import canonical_time

__all__ = ["HEAD_LINES", "first_time", "in_time_order", "read_audit"]

#: Lines of a log looked at for its first event's time.
HEAD_LINES = 1_000
#: Logs whose first lines are read at once (remote stores answer slowly, one at a time).
_HEAD_READERS = 8


def read_audit(
    logs: Sequence[LogInput],
    filters: Filters | None = None,
    *,
    progress: Callable[[InputSummary], None] | None = None,
    tick: Callable[[InputSummary], None] | None = None,
    secrets: Sequence[str] = (),
) -> Audit:
    """Read every log once, oldest first, and return what the audit found, credentials and *secrets* masked.

    *progress* is called after each log, *tick* every 65,536 lines of one
    (with its lines so far): a terminal's progress display.
    """
    aggregator = Aggregator(filters)
    for log in in_time_order(logs):
        summary = InputSummary(log.name)
        try:
            with log.open() as stream:
                aggregator.feed(line_pieces(stream), summary, tick=tick)
        except Exception as exc:  # any library's error while reading: reported, the other logs still read
            if summary not in aggregator.inputs:
                aggregator.inputs.append(summary)
            summary.error = log.redact(error_text(exc))
        if progress is not None:
            progress(summary)
    return mask_audit(aggregator.finish(), secrets)


def in_time_order(logs: Sequence[LogInput]) -> list[LogInput]:
    """*logs* sorted by their first event's time (stable: those without one first, as given)."""
    if len(logs) < 2:
        return list(logs)
    with ThreadPoolExecutor(min(_HEAD_READERS, len(logs))) as pool:
        firsts = list(pool.map(first_time, logs))
    order = sorted(range(len(logs)), key=lambda i: firsts[i] or "")
    return [logs[i] for i in order]


def first_time(log: LogInput) -> str | None:
    """The time of *log*'s first timed event within its first :data:`HEAD_LINES` lines; None if none, or unreadable."""
    if log.head is None:
        return None
    try:
        with log.head() as stream:
            for line in itertools.islice(line_pieces(stream), HEAD_LINES):
                try:
                    found = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if type(found) is dict and "render_id" in found:
                    time = canonical_time(found.get("timestamp"))
                    if time is not None:
                        return time
    except Exception:  # unreadable: the read proper reports why
        return None
    return None
