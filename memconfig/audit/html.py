"""``memconfig audit --html``: an :class:`~memconfig.audit.model.Audit` as one self-contained page.

The page is read by people deciding whether to trust a prompt, from logs that
anyone who could write a source, a URL or a log line had a hand in: so every
logged value is escaped (:func:`html.escape`, control characters replaced), the
page has no script at all, and a Content-Security-Policy forbids scripts,
network and files anyway. Charts are SVG made here, styles are inline: the page
works offline, with scripts off, attached to a ticket. Nothing in it depends on
when or where it was made, so the same logs give the same bytes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..words import counted
from .model import IN_PROMPT, Audit, RenderSummary, SourceState, SourceSummary, VersionChange

__all__ = ["MAX_BARS", "MAX_COLUMNS", "html_pieces", "render_html", "write_html"]

#: Sources drawn in the share chart; the rest are one "others" bar.
MAX_BARS = 40
#: Columns in the timeline; more renders than this are grouped, each column showing its group's largest counts.
MAX_COLUMNS = 240
#: Renders listed in the table of renders (the latest).
MAX_RENDER_ROWS = 50
#: The longest logged value shown whole; longer ones end in "…" (a log line may be megabytes).
MAX_TEXT = 400
_LABEL = 36  # characters of a source's name beside its bar; the full name is in the bar's tooltip

#: Control characters, surrogates and bidirectional overrides (which could make a name read as another).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
#: Shown beside the sources' states: a source cut by a budget; a render built, failed or never finished.
_TRUNCATED = "truncated"
_BUILT, _FAILED, _UNFINISHED = "built", "failed", "unfinished"
#: Sources out of the prompt, or there only as a last good copy: the attention list.
_NOT_LOADED = frozenset(SourceState) - {SourceState.LOADED}
_COLOURS: dict[str, str] = {
    SourceState.LOADED: "#2e7d32",
    SourceState.SKIPPED: "#b26a00",
    SourceState.STALE: "#6a1b9a",
    _TRUNCATED: "#1565c0",
    SourceState.DROPPED: "#8d6e63",
    SourceState.REMOVED: "#757575",
    _FAILED: "#c62828",
    _UNFINISHED: "#9e9e9e",
}
#: The timeline's lanes: a render's counts, by :class:`_Column` field.
_LANES = ("loaded", "skipped", "stale", "truncated")
_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px auto;
max-width:1100px;padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 4px}
table{border-collapse:collapse;width:100%;margin:6px 0 10px}th,td{text-align:left;padding:3px 8px;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f6f6f6;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere}
.meta{color:#555}.none{color:#2e7d32}.badge{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;
font-size:12px;white-space:nowrap}.loaded{background:#2e7d32}.skipped{background:#b26a00}.stale{background:#6a1b9a}
.dropped{background:#8d6e63}.failed{background:#c62828}.unfinished{background:#9e9e9e}
td.nw,td.mono{white-space:nowrap}.attention{border-left:4px solid #c62828;padding:2px 12px;background:#fff7f7}
.legend span{margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
svg{display:block;max-width:100%;height:auto}svg text{font:12px "DejaVu Sans",sans-serif;fill:#1d1d1f}
"""


def write_html(audit: Audit, path: str | Path, *, title: str = "memconfig audit") -> None:
    """Write :func:`render_html`'s page to *path* (UTF-8), a section at a time: a large audit's page is never whole.

    *path* is opened as given; ``memconfig audit --html`` writes :func:`html_pieces` through the CLI's
    output writer instead (never through a link, never into a FIFO, the file replaced whole).
    """
    with open(path, "w", encoding="utf-8", newline="\n") as page:
        page.writelines(html_pieces(audit, title=title))


def render_html(audit: Audit, *, title: str = "memconfig audit") -> str:
    """The whole page: what needs attention first, then the charts, the versions, the renders and the inputs."""
    return "".join(html_pieces(audit, title=title))


def html_pieces(audit: Audit, *, title: str = "memconfig audit") -> Iterator[str]:
    """The page as :func:`render_html` gives it, a section at a time."""
    yield (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
        f"<h1>{_text(title)}</h1>"
    )
    sections: tuple[Callable[[Audit], str | Iterator[str]], ...] = (
        _overview, _attention, _prompt_at, _share, _timeline, _versions, _renders, _inputs
    )  # fmt: skip
    for section in sections:
        part = section(audit)
        for piece in (part,) if isinstance(part, str) else part:
            if piece:
                yield "\n" + piece
    yield "\n</body></html>\n"


# -- sections ---------------------------------------------------------------------------------------------------


def _overview(audit: Audit) -> str:
    span = f"{_when(audit.first_time)} to {_when(audit.last_time)}" if audit.first_time else "no timed event"
    facts = [
        f"{counted(audit.renders_total, 'render')} ({audit.renders_failed} failed)",
        counted(len(audit.sources), "source"),
        span,
        f"{counted(audit.lines.events, 'event')} in {counted(audit.lines.lines, 'line')}",
    ]
    if audit.filters:
        shown = ", ".join(f"{key}={value}" for key, value in sorted(audit.filters.items()) if value not in (None, []))
        if shown:
            facts.append(f"filters: {shown}")
    return f'<p class="meta" id="overview">{" · ".join(_text(fact) for fact in facts)}</p>'


def _attention(audit: Audit) -> str:
    """The sources not (fully) in the prompt, or ever out of it, and the failed renders: what the page is opened for.

    A source in the prompt now that was skipped or dropped before is listed
    too, after those out of it: its reasons are part of its history.
    """
    now_out = [
        source
        for source in audit.sources
        if source.last_status in _NOT_LOADED or (source.skips and source.last_status is None)
    ]
    recovered = [s for s in audit.sources if s.last_status == SourceState.LOADED and (s.skips or s.drops)]
    failed = [render for render in audit.renders if render.failed]
    parts = ['<h2 id="attention">Skipped and failing sources</h2>']
    if not now_out and not recovered and not failed:
        parts.append('<p class="none">Every source was in the prompt at its last render.</p>')
        return "\n".join(parts)
    if now_out or recovered:
        rows = [
            [
                _source_cell(source),
                _badge(source.last_status or SourceState.SKIPPED, failing=bool(source.required)),
                f"<td class=nw><code>{_text(source.last_reason or '')}</code></td>",
                _text(_clip(source.last_detail)),
                _time_cell(source.status_since),
                _text(_skips(source)),
            ]
            for source in [*sorted(now_out, key=_attention_order), *sorted(recovered, key=_attention_order)]
        ]
        parts.append(
            '<div class="attention">'
            + _table(["source", "status", "reason", "detail", "since", "skips by reason"], rows)
            + "</div>"
        )
    if failed:
        parts.append(f"<h3>Failed renders ({audit.renders_failed})</h3>")
        rows = [
            [
                _time_cell(render.time),
                f"<code>{_text(render.render_id)}</code>",
                "<br>".join(
                    f"{_text(failure.label)}: <code>{_text(failure.reason)}</code> {_text(failure.detail)}"
                    for failure in render.failures
                )
                or "—",
            ]
            for render in failed[-MAX_RENDER_ROWS:]
        ]
        parts.append('<div class="attention">' + _table(["when", "render", "what it needed and did not get"], rows))
        parts.append("</div>")
    return "\n".join(parts)


def _prompt_at(audit: Audit) -> str:
    if audit.at is None:
        return ""
    at = audit.at
    parts = [f'<h2 id="at">The prompt at {_text(_when(at.at))}</h2>']
    if at.render is None:
        parts.append("<p>No render had finished by then.</p>")
        return "\n".join(parts)
    parts.append(
        f'<p class="meta">render <code>{_text(at.render.render_id)}</code> at {_text(_when(at.render.time))}, '
        f"block sha256 <code>{_text(_short(at.render.sha256))}</code>, {_text(_number(at.render.chars))} chars</p>"
    )
    rows = [
        [
            f"{_text(_clip(item.name or item.source))}<br><code>{_text(_clip(item.url))}</code>",
            _badge(item.status),
            f"<code>{_text(item.reason or '')}</code>",
            f"<code>{_text(_short(item.sha256))}</code>",
            _num_cell(item.chars),
            _time_cell(item.since),
        ]
        for item in at.sources
    ]
    parts.append(_table(["source", "status", "reason", "sha256", "chars", "since"], rows, numeric={4}))
    return "\n".join(parts)


def _share(audit: Audit) -> str:
    """A bar per source in the prompt: the characters it takes there (after any cut), and its share of them all."""
    present = [s for s in audit.sources if s.last_status in IN_PROMPT and _in_prompt(s) is not None]
    present.sort(key=lambda s: (-(_in_prompt(s) or 0), s.source))
    parts = ['<h2 id="share">How much of the prompt each source takes</h2>']
    if not present:
        parts.append("<p>No source is in the prompt.</p>")
        return "\n".join(parts)
    bars = [_Bar(s.name or s.source, s.source, _in_prompt(s) or 0, _bar_kind(s)) for s in present[:MAX_BARS]]
    if len(present) > MAX_BARS:
        rest = present[MAX_BARS:]
        bars.append(
            _Bar(counted(len(rest), "other source"), "", sum(_in_prompt(s) or 0 for s in rest), SourceState.LOADED)
        )
    last = _last_finished(audit.renders)
    block = f"; the last block was {counted(last.chars, 'character')}" if last is not None and last.chars else ""
    parts.append(
        f'<p class="meta">characters each source takes in the prompt (after processing, as of its last load), '
        f"and its share of them all{_text(block)}. A source cut by a limit or a budget is blue.</p>"
    )
    parts.append(_legend([SourceState.LOADED, _TRUNCATED, SourceState.STALE]))
    parts.append(_bar_chart(bars))
    return "\n".join(parts)


def _timeline(audit: Audit) -> str:
    """One column per render (or group of renders), one lane per count: loaded, skipped, stale, truncated."""
    renders = audit.renders
    parts = ['<h2 id="timeline">Loaded, skipped, stale and truncated per render</h2>']
    if not renders:
        parts.append("<p>No render in these logs.</p>")
        return "\n".join(parts)
    columns = _columns(renders)
    per = -(-len(renders) // len(columns))
    note = f"each column is {per} renders (its largest counts); " if per > 1 else "each column is a render; "
    hidden = audit.renders_total - len(renders)
    parts.append(
        f'<p class="meta">{_text(note)}{_text(_when(renders[0].time or renders[0].started))} to '
        f"{_text(_when(renders[-1].time or renders[-1].started))}"
        + (f"; {_text(counted(hidden, 'earlier render'))} not drawn" if hidden > 0 else "")
        + "</p>"
    )
    parts.append(_legend([*_LANES, _FAILED, _UNFINISHED]))
    parts.append(_lanes(columns))
    return "\n".join(parts)


def _versions(audit: Audit) -> Iterator[str]:
    """A section per source, made as the page is written (the longest part of a large audit's page)."""
    yield '<h2 id="versions">Version changes per source</h2>'
    if not audit.sources:
        yield "<p>No source in these logs.</p>"
        return
    for source in audit.sources:
        summary = _version_summary(source)
        extras = _extras(source)
        yield (
            f'<section class="source"><h3>{_text(_clip(source.name or source.source))} {_badge(source.last_status)}'
            f'</h3><p class="meta">key <code>{_text(_clip(source.source))}</code> · <code>{_text(_clip(source.url))}'
            f"</code><br>{_text(summary)}{'<br>' + _text(extras) if extras else ''}</p>"
        )
        if source.changes:
            yield _changes_table(list(source.changes), source.versions)
        yield "</section>"


def _renders(audit: Audit) -> str:
    shown = audit.renders[-MAX_RENDER_ROWS:]
    parts = [f'<h2 id="renders">Renders (the latest {len(shown)} of {audit.renders_total})</h2>']
    if not shown:
        parts.append("<p>No render in these logs.</p>")
        return "\n".join(parts)
    rows = [
        [
            _time_cell(render.time or render.started),
            f"<code>{_text(render.render_id)}</code>",
            _text(" ".join(str(part) for part in (render.host, render.pid) if part is not None)),
            _badge(_render_state(render)),
            f"<code>{_text(_short(render.sha256))}</code>",
            _num_cell(render.sources_loaded),
            _num_cell(render.sources_skipped),
            _num_cell(render.stale),
            _num_cell(render.truncated),
            _num_cell(render.chars),
            _num_cell(render.duration_ms),
        ]
        for render in reversed(shown)
    ]
    headers = ["when", "render", "host / pid", "state", "sha256", "in", "out", "stale", "cut", "chars", "ms"]
    parts.append(_table(headers, rows, numeric={5, 6, 7, 8, 9, 10}))
    return "\n".join(parts)


def _inputs(audit: Audit) -> str:
    """What was read: the logs, and how many lines were not memconfig's (counted, their contents never shown)."""
    lines = audit.lines
    rows = [
        [f"<code>{_text(_clip(item.name))}</code>", _num_cell(item.lines), _num_cell(item.events), _text(item.error)]
        for item in audit.inputs
    ]
    parts = ['<h2 id="inputs">Logs read</h2>', _table(["log", "lines", "events", "error"], rows, numeric={1, 2})]
    counts = [
        ("memconfig events", lines.events),
        ("outside --since/--until", lines.filtered),
        ("blank", lines.blank),
        *((f"not memconfig's ({kind})", n) for kind, n in sorted(lines.foreign.items())),
        *((f"malformed ({kind})", n) for kind, n in sorted(lines.malformed.items())),
        (f"newer schema than {audit.schema}", lines.newer_schema),
        *((f"unknown event {name}", n) for name, n in sorted(lines.unknown_events.items())),
    ]
    rows = [[_text(_clip(what)), _num_cell(n)] for what, n in counts if n]
    parts.append(_table(["lines", "count"], rows, numeric={1}))
    return "\n".join(parts)


# -- charts -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bar:
    name: str
    key: str
    chars: int
    kind: str


def _in_prompt(source: SourceSummary) -> int | None:
    """Its characters in the prompt: what processing kept (a log from before ``prompt_chars``: its size)."""
    return source.prompt_chars if source.prompt_chars is not None else source.chars


def _bar_kind(source: SourceSummary) -> str:
    if source.last_status == SourceState.STALE:
        return SourceState.STALE
    kept = _in_prompt(source)
    cut = source.chars is not None and kept is not None and kept < source.chars
    return _TRUNCATED if cut else SourceState.LOADED


def _bar_chart(bars: Sequence[_Bar]) -> str:
    label_w, bar_w, value_w, row_h = 270, 560, 230, 22
    largest = max(bar.chars for bar in bars) or 1
    total = sum(bar.chars for bar in bars) or 1
    width, height = label_w + bar_w + value_w, row_h * len(bars) + 8
    out = [_svg_open(width, height, "characters per source")]
    for i, bar in enumerate(bars):
        y = 4 + i * row_h
        length = max(1.0, bar_w * bar.chars / largest)
        value = f"{bar.chars:,} · {100 * bar.chars / total:.1f}%" + (" · cut" if bar.kind == _TRUNCATED else "")
        named = f"{bar.name} ({bar.key})" if bar.key and bar.key != bar.name else bar.name
        out.append(
            f"<g><title>{_text(named)}: {_text(value)}</title>"
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_text(_clip(bar.name, _LABEL))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{length:.1f}" height="{row_h - 6}" fill="{_COLOURS[bar.kind]}"/>'
            f'<text x="{label_w + length + 6:.1f}" y="{y + 15}">{_text(value)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Column:
    """A timeline column: one render, or the largest counts of a group of consecutive renders."""

    first: RenderSummary
    last: RenderSummary
    loaded: int
    skipped: int
    stale: int
    truncated: int
    failed: bool
    unfinished: bool


def _columns(renders: Sequence[RenderSummary]) -> list[_Column]:
    per = -(-len(renders) // MAX_COLUMNS)
    columns = []
    for start in range(0, len(renders), per):
        group = renders[start : start + per]
        columns.append(
            _Column(
                first=group[0],
                last=group[-1],
                loaded=max(r.sources_loaded for r in group),
                skipped=max(r.sources_skipped for r in group),
                stale=max(r.stale for r in group),
                truncated=max(r.truncated for r in group),
                failed=any(r.failed for r in group),
                unfinished=any(not r.finished for r in group),
            )
        )
    return columns


def _lanes(columns: Sequence[_Column]) -> str:
    label_w, lane_h, gap, plot_w = 90, 44, 10, 900
    step = plot_w / len(columns)
    bar_w = max(1.0, min(28.0, step * 0.8))
    state_h = 12
    height = len(_LANES) * (lane_h + gap) + state_h + 28
    out = [_svg_open(label_w + plot_w + 10, height, "loaded, skipped, stale and truncated per render")]
    for lane_index, lane in enumerate(_LANES):
        top = lane_index * (lane_h + gap)
        values = [getattr(column, lane) for column in columns]
        most = max(values)
        out.append(f'<text x="{label_w - 8}" y="{top + lane_h / 2 + 4:.0f}" text-anchor="end">{lane}</text>')
        out.append(f'<text x="{label_w - 8}" y="{top + 10}" text-anchor="end" class="meta">{most}</text>')
        out.append(
            f'<line x1="{label_w}" y1="{top + lane_h}" x2="{label_w + plot_w}" y2="{top + lane_h}" stroke="#ccc"/>'
        )
        for i, (column, value) in enumerate(zip(columns, values, strict=True)):
            if not value:
                continue
            h = max(1.0, lane_h * value / most)
            x = label_w + i * step + (step - bar_w) / 2
            out.append(
                f'<rect x="{x:.1f}" y="{top + lane_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{_COLOURS[lane]}"><title>{_text(_column_tip(column))}: {value} {lane}</title></rect>'
            )
    state_top = len(_LANES) * (lane_h + gap)
    out.append(f'<text x="{label_w - 8}" y="{state_top + 10}" text-anchor="end">state</text>')
    for i, column in enumerate(columns):
        state = _FAILED if column.failed else _UNFINISHED if column.unfinished else _BUILT
        colour = _COLOURS[SourceState.LOADED if state == _BUILT else state]  # a built render: a loaded source's green
        x = label_w + i * step + (step - bar_w) / 2
        out.append(
            f'<rect x="{x:.1f}" y="{state_top}" width="{bar_w:.1f}" height="{state_h}" fill="{colour}">'
            f"<title>{_text(_column_tip(column))}: {state}</title></rect>"
        )
    axis = state_top + state_h + 18
    out.append(
        f'<text x="{label_w}" y="{axis}">{_text(_when(columns[0].first.time or columns[0].first.started))}</text>'
    )
    out.append(
        f'<text x="{label_w + plot_w}" y="{axis}" text-anchor="end">'
        f"{_text(_when(columns[-1].last.time or columns[-1].last.started))}</text>"
    )
    out.append("</svg>")
    return "".join(out)


def _column_tip(column: _Column) -> str:
    if column.first is column.last:
        return f"{_when(column.first.time or column.first.started)} {column.first.render_id}"
    return f"{_when(column.first.time)} to {_when(column.last.time)}"


def _sparkline(values: Sequence[int], width: int = 160, height: int = 28) -> str:
    most, least = max(values), min(values)
    spread = (most - least) or 1
    step = width / max(1, len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (height - 4) * (v - least) / spread:.1f}" for i, v in enumerate(values)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="size over its versions"><title>chars over its versions: {least:,} to {most:,}</title>'
        f'<polyline points="{points}" fill="none" stroke="{_COLOURS[_TRUNCATED]}" stroke-width="1.5"/></svg>'
    )


def _legend(names: Iterable[str]) -> str:
    items = "".join(f'<span><i style="background:{_COLOURS[name]}"></i>{name}</span>' for name in names)
    return f'<p class="legend meta">{items}</p>'


def _svg_open(width: float, height: float, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_text(label)}">'
    )


# -- pieces -----------------------------------------------------------------------------------------------------


def _version_summary(source: SourceSummary) -> str:
    if not source.versions:
        seen = "never loaded in these logs"
    else:
        seen = (
            f"{counted(source.versions, 'version')}, last changed {_when(source.sha256_changed)}; "
            f"{_number(source.chars)} chars now" + (f" ({source.trend:+,} since first seen)" if source.trend else "")
        )
    return f"{seen}; {counted(source.loads, 'load')}, in the prompt of {counted(source.renders, 'render')}"


def _changes_table(changes: Sequence[VersionChange], versions: int) -> str:
    rows = []
    previous: int | None = None
    for change in changes:
        delta = "" if previous is None or change.chars is None else f"{change.chars - previous:+,}"
        rows.append(
            [
                _time_cell(change.time),
                f'<code title="{_text(change.sha256)}">{_text(_short(change.sha256))}</code>',
                _num_cell(change.chars),
                f'<td class="n">{_text(delta)}</td>',
                f"<code>{_text(change.render_id or '')}</code>",
            ]
        )
        previous = change.chars if change.chars is not None else previous
    sizes = [change.chars for change in changes if change.chars is not None]
    spark = _sparkline(sizes) if len(sizes) > 1 else ""
    shown = f'<p class="meta">the latest {len(changes)} of {versions}</p>' if versions > len(changes) else ""
    return spark + shown + _table(["when", "sha256", "chars", "change", "render"], rows, numeric={2, 3})


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int] | frozenset[int] = frozenset()
) -> str:
    """A table of cells already escaped; a cell that is already a ``<td …>`` is kept as it is."""
    head = "".join(f"<th{' class=n' if i in numeric else ''}>{_text(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell if cell.startswith("<td") else f"<td>{cell}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _source_cell(source: SourceSummary) -> str:
    shown = _text(_clip(source.name or source.source))
    key = f"<br><code>{_text(_clip(source.source))}</code>" if source.name and source.name != source.source else ""
    url = f"<br><code>{_text(_clip(source.url))}</code>" if source.url else ""
    return f"{shown}{key}{url}"


def _badge(status: str | None, *, failing: bool = False) -> str:
    if status is None:
        return ""
    kind = status if status in _COLOURS else _UNFINISHED
    extra = ' <span class="badge failed">required</span>' if failing else ""
    return f'<span class="badge {kind}">{_text(status)}</span>{extra}'


def _time_cell(time: str | None) -> str:
    return f'<td class="mono" title="{_text(time or "")}">{_text(_when(time))}</td>'


def _num_cell(value: float | None) -> str:
    return f'<td class="n">{_text(_number(value))}</td>'


def _attention_order(source: SourceSummary) -> tuple[int, str, str]:
    """Required first, then the longest out (oldest ``since``), then by key."""
    return (0 if source.required else 1, source.status_since or "", source.source)


def _skips(source: SourceSummary) -> str:
    counts = source.skips + source.drops
    return ", ".join(f"{reason}: {n}" for reason, n in sorted(counts.items()))


def _extras(source: SourceSummary) -> str:
    facts = [
        *(f"cache {outcome}: {n}" for outcome, n in sorted(source.cache.items())),
        *((f"stale: {source.stale}",) if source.stale else ()),
        *((f"retried: {source.retries}",) if source.retries else ()),
        *((f"truncated: {source.truncations}",) if source.truncations else ()),
        *(f"dropped {reason}: {n}" for reason, n in sorted(source.drops.items())),
        *((f"escaped: {source.escapes}",) if source.escapes else ()),
    ]
    return ", ".join(facts)


def _render_state(render: RenderSummary) -> str:
    return _FAILED if render.failed else _BUILT if render.finished else _UNFINISHED


def _last_finished(renders: Sequence[RenderSummary]) -> RenderSummary | None:
    return next((render for render in reversed(renders) if render.finished and not render.failed), None)


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _short(sha256: str | None) -> str:
    return sha256[:12] if sha256 else "—"


def _when(time: str | None) -> str:
    """An event's ISO time to the second, as people read it (``2026-12-01 13:18:45Z``)."""
    if not time:
        return "—"
    shown = time.replace("T", " ", 1)
    head, dot, rest = shown.partition(".")
    if dot:
        zone = rest.lstrip("0123456789")
        shown = head + zone
    return shown


def _clip(text: str | None, limit: int = MAX_TEXT) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object) -> str:
    """Any value as HTML text: escaped (quotes too, so it is safe in attributes), control characters replaced."""
    if value is None:
        return ""
    return html.escape(_CONTROL.sub("\ufffd", str(value)), quote=True)
