"""An audit as tables (rows of text: any renderer, plain or rich, lays them out) and as JSON data.

Foreign lines are shown as counts only: they are another program's, and may
hold anything, a token included. Events are shown as masked after the pass
(:mod:`memconfig.audit.mask`): memconfig masks credentials before it logs,
but a log may be another program's, or an older memconfig's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..columns import Column
from ..words import counted
from .model import Audit, LineCounts, RenderSummary, SourceAt, SourceSummary

__all__ = ["TABLE_RENDERS", "Column", "Table", "audit_data", "audit_tables", "headline"]

#: Renders listed in the table by default (the latest); JSON lists every render kept.
TABLE_RENDERS = 20


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table of text cells: what a plain or a rich renderer lays out."""

    title: str
    columns: tuple[Column, ...]
    rows: Sequence[tuple[str, ...]] = ()
    note: str = ""
    """A line under the title (how many rows were left out, say)."""


def _short_time(time: str | None) -> str:
    """``2026-12-01T08:11:45.123456Z`` as ``2026-12-01 08:11:45Z``: to the second, still UTC."""
    return f"{time[:10]} {time[11:19]}Z" if time else "-"


def _count(counter: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def _chars(value: int | None) -> str:
    return "- chars" if value is None else counted(value, "char")


def _number(value: int | float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _trend(summary: SourceSummary) -> str:
    trend = summary.trend
    if trend is None:
        return "-"
    return f"{trend:+,}" if trend else "0"


def _counts(counts: LineCounts) -> str:
    parts = [counted(counts.lines, "line"), counted(counts.events, "event")]
    if counts.filtered:
        parts.append(f"{counts.filtered:,} outside the time window")
    foreign = sum(counts.foreign.values())
    if foreign:
        parts.append(f"{foreign:,} foreign ({_count(counts.foreign)})")
    malformed = sum(counts.malformed.values())
    if malformed:
        parts.append(f"{malformed:,} malformed ({_count(counts.malformed)})")
    if counts.newer_schema:
        parts.append(f"{counts.newer_schema:,} from a newer schema (read for the fields known)")
    unknown = sum(counts.unknown_events.values())
    if unknown:
        parts.append(f"{counted(unknown, 'unknown event')} ({_count(counts.unknown_events)})")
    if counts.repeated:
        parts.append(f"{counts.repeated:,} repeated (renders already read: a log given twice, or a copy)")
    for bound, n in sorted(counts.not_itemised.items()):
        parts.append(f"{counted(n, 'event')} of {bound} past the audit's bounds (counted in their renders, not listed)")
    return ", ".join(parts)


def headline(audit: Audit) -> list[str]:
    """The lines above the tables: what was read, when it spans, and every line not read as an event."""
    logs = len(audit.inputs)
    failed = f" ({audit.renders_failed:,} failed)" if audit.renders_failed else ""
    span = f", {_short_time(audit.first_time)} to {_short_time(audit.last_time)}" if audit.first_time else ""
    found = [
        f"{counted(logs, 'log')}, {counted(audit.renders_total, 'render')}{failed}, "
        f"{counted(len(audit.sources), 'source')}{span}",
        _counts(audit.lines),
    ]
    found += [f"unreadable: {log.name}: {log.error}" for log in audit.inputs if log.error]
    if audit.filters:
        shown = "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in audit.filters.items())
        found.append(f"filters: {shown}")
    return found


def _sources_table(sources: Sequence[SourceSummary]) -> Table:
    # on a narrow terminal: the source, its status and reason stay; the rest give way from the last below
    columns = (
        Column("SOURCE", kind="path"),
        Column("STATUS"),
        Column("REASON"),
        Column("SINCE", kind="time", drop=1),
        Column("RENDERS", True, drop=3),
        Column("LOADS", True, drop=4),
        Column("SKIPS", drop=8),
        Column("VERSIONS", True, drop=7),
        Column("CHANGED", kind="time", drop=5),
        Column("CHARS", True, drop=2),
        Column("TREND", True, drop=6),
        Column("CACHE", drop=9),
        Column("TRUNC", True, drop=11),
        Column("DROPS", True, drop=10),
        Column("ESC", True, drop=12),
    )
    rows = [
        (
            s.label,
            s.last_status or "-",
            s.last_reason or "",
            _short_time(s.status_since),
            _number(s.renders),
            _number(s.loads),
            _count(s.skips),
            _number(s.versions),
            _short_time(s.sha256_changed),
            _number(s.chars),
            _trend(s),
            _count(s.cache),
            _number(s.truncations),
            _number(sum(s.drops.values())),
            _number(s.escapes),
        )
        for s in sources
    ]
    return Table("Sources", columns, rows)


def _render_row(r: RenderSummary) -> tuple[str, ...]:
    status = "failed" if r.failed else "built" if r.finished else "unfinished"
    return (
        _short_time(r.time or r.started),
        r.host or "-",
        str(r.pid) if isinstance(r.pid, int) else "-",  # an id: no thousands separator
        r.render_id,
        status,
        _number(r.sources_loaded),
        _number(r.sources_skipped),
        _number(r.chars),
        _number(r.duration_ms),
        (r.sha256 or "-")[:12],
    )


def _renders_table(audit: Audit, limit: int) -> Table:
    columns = (  # on a narrow terminal: the time and the status stay; the rest give way from the last below
        Column("TIME", kind="time"),
        Column("HOST", drop=7),
        Column("PID", True, drop=9),
        Column("RENDER", kind="id", drop=6),
        Column("STATUS"),
        Column("LOADED", True, drop=2),
        Column("SKIPPED", True, drop=1),
        Column("CHARS", True, drop=3),
        Column("MS", True, drop=8),
        Column("SHA256", kind="id", drop=5),
    )
    shown = audit.renders[-limit:] if limit > 0 else []
    note = f"the last {len(shown):,} of {audit.renders_total:,}" if len(shown) < audit.renders_total else ""
    return Table("Renders", columns, [_render_row(r) for r in shown], note)


def _at_table(audit: Audit) -> Table | None:
    at = audit.at
    if at is None:
        return None
    columns = (
        Column("SOURCE", kind="path"),
        Column("IN PROMPT"),
        Column("STATUS"),
        Column("REASON"),
        Column("SHA256", kind="id", drop=3),
        Column("CHARS", True, drop=2),
        Column("SINCE", kind="time", drop=1),
    )
    title = f"Prompt at {_short_time(at.at)}"
    if at.render is None:
        return Table(title, columns, [], "no render finished at or before that time")
    r = at.render
    where = f" on {r.host}" if r.host else ""
    pid = f" (pid {r.pid})" if r.pid is not None else ""
    note = f"render {r.render_id}{where}{pid} at {_short_time(r.time)}: {_chars(r.chars)}, sha256 {r.sha256 or '-'}"
    rows = [
        (
            s.label,
            "yes" if s.in_prompt else "no",
            s.status,
            s.reason or "",
            (s.sha256 or "-")[:12],
            _number(s.chars),
            _short_time(s.since),
        )
        for s in at.sources
    ]
    return Table(title, columns, rows, note)


def audit_tables(audit: Audit, renders: int = TABLE_RENDERS) -> list[Table]:
    """The tables of an audit: the prompt at ``--at`` (if asked), the sources, the latest *renders* renders."""
    found = [_at_table(audit), _sources_table(audit.sources), _renders_table(audit, renders)]
    return [t for t in found if t is not None]


def _plain(value: Any) -> Any:
    """Dataclasses, counters and deques as JSON's dicts and lists."""
    if hasattr(value, "__dataclass_fields__"):
        found = {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
        if isinstance(value, SourceSummary):
            found["trend"] = value.trend
        elif isinstance(value, SourceAt):
            found["in_prompt"] = value.in_prompt
        return found
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "deque":
        return [_plain(v) for v in value]
    return value


def audit_data(audit: Audit) -> dict[str, Any]:
    """The audit as JSON data: every field of the model (see :mod:`memconfig.audit.model`), plus each source's trend."""
    data: dict[str, Any] = _plain(audit)
    return data
