"""Budgets: a source's own limit, and the whole block's, kept by cutting on line boundaries, visibly.

Two processors, run after every other one:

- :class:`SourceLimits` cuts a source to its own ``max_chars`` / ``max_tokens``
  (a glob's matches each get their glob's limits);
- :class:`TotalBudget` keeps the block, as the formatter lays it out (template,
  separators, names and all), within ``formatter.budget``: ``truncate`` cuts the
  lowest-priority source first (on equal priority, the later one) just enough,
  ``drop`` leaves out whole sources in that order, ``fail`` raises
  :class:`~memconfig.exceptions.BudgetExceeded`.

A cut keeps whole lines (only a first line longer than the whole limit is cut
inside, at a character) and puts the marker on its own line after them; the
marker counts toward the limit. Sizes are of the text as it stands in the block
(trailing whitespace, which the layout drops, is not counted). Every cut is a
``source_truncated`` event; a source that would be cut to nothing is left out as
``over_budget`` (``source_dropped``), with the sizes in its detail.

A third kind of block budget, :class:`ByteBudget` (``formatter.budget.max_bytes``),
is Codex's ``project_doc_max_bytes``: a running budget of UTF-8 bytes of content
alone (no template, separators or names), spent from the first source down;
each source takes what is left, cut on a byte boundary (a character split by the
cut is decoded as U+FFFD, as Codex decodes it), and once it is spent the sources
after are left out as ``over_budget``. A file holding bytes the loader replaced
(invalid UTF-8) spends its size as read, as Codex spends raw bytes
(``Section.read_bytes``); only a cut inside such a file is made on its decoded
text (docs/budgets.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..closing import ClosingTags
from ..exceptions import BudgetExceeded, ConfigError, Problem
from ..model import Block, Note, Processed, Section, SkipReason
from ..stages import Processor
from ..templates import MARKER_SLOTS, Template, TemplateError
from .tokens import CHARACTERS, Counter, token_counter

if TYPE_CHECKING:
    from ..config import Config
    from ..format.formatter import BlockSizes
    from ..format.presets import Preset
    from ..sources import Source

__all__ = [
    "BYTES",
    "DEFAULT_MARKER",
    "Budgets",
    "ByteBudget",
    "LaidOut",
    "Limit",
    "Marker",
    "SourceLimits",
    "TotalBudget",
    "budget_processors",
    "cut_lines",
]

DEFAULT_MARKER = "[… {name} cut here: {cut} more {unit} not shown]"
_NEWLINE = re.compile("\n")


class Measure(Protocol):
    """What a total budget needs of the formatter: the block, its size in parts, the tags content sits in."""

    @property
    def wrappers(self) -> Sequence[str]: ...

    def format(self, sections: Sequence[Section]) -> Block: ...

    def sizes(self, sections: Sequence[Section], count: Callable[[str], int] = len) -> BlockSizes: ...


@runtime_checkable
class LaidOut(Protocol):
    """A formatter that lays sections out with a preset: a byte budget asks its ``trim`` once, when it is built.

    A formatter that has none is taken to right-strip each section, as the presets do.
    """

    @property
    def layout(self) -> Preset: ...


@dataclass(frozen=True, slots=True)
class Limit:
    """A limit in one unit, and the key that set it (``sources[0].max_chars``, ``formatter.budget.max_tokens``)."""

    count: Counter
    limit: int
    setting: str

    @property
    def token(self) -> str:
        return f"{self.setting}<={self.limit} {self.count.token}"


class Marker:
    """The text left where a source was cut: a template over :data:`~memconfig.templates.MARKER_SLOTS`; ``""``: none."""

    def __init__(self, text: str | None = None, neutralise: Callable[[str], str] | None = None) -> None:
        self.template = Template(DEFAULT_MARKER if text is None else text, MARKER_SLOTS)
        self.text = self.template.text
        self._neutralise = neutralise
        """What makes a name or path safe inside the block's content: the marker stands in the content."""

    def __repr__(self) -> str:
        return f"Marker({self.text!r})"

    def __call__(self, section: Section, count: Counter, before: int, kept: str) -> str:
        """The marker for *section* once cut to *kept*, from *before* (in *count*'s unit)."""
        if not self.text:
            return ""
        size = count(kept.rstrip())
        name, path = section.name, section.source
        if self._neutralise is not None:  # a name can hold the closing tag of the content's wrapper too
            name, path = self._neutralise(name), self._neutralise(path)
        values = {
            "name": name,
            "path": path,
            "cut": str(before - size),
            "kept": str(size),
            "unit": count.word,
        }
        return self.template.render(values)


def cut_lines(text: str, fits: Callable[[str], bool], marker: Callable[[str], str]) -> str | None:
    """The longest cut of *text* that *fits*: whole lines, then the marker on a line of its own.

    When no whole line with content fits, the next line is cut at a character
    instead (a file may be one long line). ``marker(kept)`` gives the marker for
    a kept prefix. ``None`` when nothing of *text* but whitespace would be kept.
    A CRLF text's marker line ends its last kept line with CRLF.
    """
    newline = "\r\n" if "\r\n" in text else "\n"

    def cut(end: int) -> str:
        kept = text[:end]
        mark = marker(kept)
        if not mark:
            return kept
        return kept + mark if kept.endswith("\n") else kept.removesuffix("\r") + newline + mark

    ends = [m.end() for m in _NEWLINE.finditer(text)]
    best, start = _last_fitting(ends, cut, fits)
    if best is not None and text[:start].strip():
        return best
    # No whole line with content fits beside the marker: cut the next line at a character.
    stop = text.find("\n", start)
    line_end = (len(text) if stop < 0 else stop) - (1 if stop > 0 and text[stop - 1] == "\r" else 0)
    chars = range(start + 1, line_end + 1)
    cut_inside, end = _last_fitting(chars, cut, fits)
    if cut_inside is not None and text[:end].strip():
        return cut_inside
    return None


def _last_fitting(
    ends: Sequence[int], cut: Callable[[int], str], fits: Callable[[str], bool]
) -> tuple[str | None, int]:
    """The cut at the last of *ends* that fits (assuming that a shorter cut fits when a longer one does), and its end.

    Only a cut that was tested is returned: with a count that is not quite
    monotonic (tokens), the result still fits.
    """
    lo, hi, best, at = 0, len(ends), None, 0
    while lo < hi:
        mid = (lo + hi) // 2
        candidate = cut(ends[mid])
        if fits(candidate):
            best, at, lo = candidate, ends[mid], mid + 1
        else:
            hi = mid
    return best, at


class Bytes:
    """UTF-8 bytes, as Codex counts ``project_doc_max_bytes``."""

    unit = "bytes"
    word = "bytes"
    token = "bytes"

    def __call__(self, text: str) -> int:
        return len(text.encode("utf-8", "surrogatepass"))

    def __repr__(self) -> str:
        return "Bytes()"


BYTES = Bytes()


def _priority(priorities: Mapping[str, int], section: Section) -> int:
    """*section*'s ``priority``: its source's, else (a glob's match, a discovered or imported file) its parent's."""
    found = priorities.get(section.source)
    if found is None and section.parent is not None:
        found = priorities.get(section.parent)
    return found or 0


def _truncated(
    section: Section, new: str, limit: Limit, budget: Literal["source", "total"], marked: bool, trim: bool = True
) -> Note:
    """The ``source_truncated`` note for *section* cut to *new* under *limit*."""
    before, after = (section.text.rstrip(), new.rstrip()) if trim else (section.text, new)
    tokens = limit.count.unit == "tokens"
    in_bytes = limit.count.unit == "bytes"
    fields: dict[str, Any] = {
        "budget": budget,
        "setting": limit.setting,
        "unit": limit.count.unit,
        "limit": limit.limit,
        "chars_before": len(before),
        "chars_after": len(after),
        "tokens_before": limit.count(before) if tokens else None,
        "tokens_after": limit.count(after) if tokens else None,
        "bytes_before": limit.count(before) if in_bytes else None,
        "bytes_after": limit.count(after) if in_bytes else None,
        "marker": marked,
    }
    return Note(section, "source_truncated", fields)


class SourceLimits:
    """Cuts each source to its own ``max_chars`` / ``max_tokens``; a glob's matches get their glob's.

    Args:
        limits: by source key, the limits that source declares (both apply when it has two).
        marker: what is left where a source is cut.
    """

    def __init__(self, limits: Mapping[str, Sequence[Limit]], marker: Marker) -> None:
        self.limits = {key: tuple(found) for key, found in limits.items()}
        self.marker = marker
        made_of = repr((marker.text, sorted((k, [limit.token for limit in v]) for k, v in self.limits.items())))
        self.token = f"source_limits:{len(self.limits)}:{hashlib.sha256(made_of.encode()).hexdigest()[:16]}"

    def __repr__(self) -> str:
        return f"SourceLimits({len(self.limits)} sources, {self.marker!r})"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section] | Processed:
        limits = self.limits
        out: list[Section] = []
        notes: list[Note] = []
        reasons: dict[str, tuple[SkipReason, str]] = {}
        for section in sections:
            found = limits.get(section.source) or (limits.get(section.parent, ()) if section.parent is not None else ())
            content = section.text.rstrip() if found else ""
            over = [limit for limit in found if limit.count(content) > limit.limit]
            if not over:
                out.append(section)
                continue
            main = over[0]
            size = main.count(content)
            new = self._cut(section, found, main, size)
            if new is None:
                reasons[section.source] = (
                    SkipReason.OVER_BUDGET,
                    f"{main.setting} is {main.limit} {main.count.word}: not even the start of its first line "
                    f"fits beside the marker (it is {size} {main.count.word})",
                )
                continue
            out.append(section.with_text(new))
            notes.append(_truncated(section, new, main, "source", bool(self.marker.text)))
        if not notes and not reasons:
            return sections
        return Processed(out, notes, reasons)

    def _cut(self, section: Section, limits: Sequence[Limit], main: Limit, size: int) -> str | None:
        """*section* cut to fit every one of *limits*; the marker counts in *main*'s unit (from *size*)."""

        def fits(text: str) -> bool:
            content = text.rstrip()
            return all(limit.count(content) <= limit.limit for limit in limits)

        return cut_lines(section.text, fits, lambda kept: self.marker(section, main.count, size, kept))


class TotalBudget:
    """Keeps the whole block, as formatted, within ``formatter.budget``.

    Args:
        limit: the block's limit.
        policy: ``truncate``, ``drop`` or ``fail``.
        marker: what is left where a source is cut.
        formatter: lays out the block (its text is what is measured).
        priorities: each declared source's ``priority`` by key (a glob's
            matches: their glob's); a source not listed has 0.
    """

    def __init__(
        self,
        limit: Limit,
        policy: Literal["truncate", "drop", "fail"],
        marker: Marker,
        formatter: Measure,
        priorities: Mapping[str, int] | None = None,
    ) -> None:
        self.limit, self.policy, self.marker, self.formatter = limit, policy, marker, formatter
        self.priorities = dict(priorities or {})
        made_of = repr((marker.text, sorted(self.priorities.items())))
        digest = hashlib.sha256(made_of.encode()).hexdigest()[:16]
        self.token = f"budget:{limit.token}:{policy}:{digest}"

    def __repr__(self) -> str:
        return f"TotalBudget({self.limit.setting}={self.limit.limit}, policy={self.policy!r}, {self.marker!r})"

    def _measure(self, sections: Sequence[Section]) -> int:
        return self.limit.count(self.formatter.format(sections).text)

    def __call__(
        self, sections: Sequence[Section], came_in: Mapping[str, tuple[Section, Sequence[Limit]]] | None = None
    ) -> Sequence[Section] | Processed:
        """The sections within the budget.

        Args:
            came_in: for sections already cut to their own limits, the section
                before that cut and those limits: a second cut is made from the
                whole text (one marker, counts from the whole source) and keeps them.
        """
        limit, count = self.limit.limit, self.limit.count
        came_in = came_in or {}
        size = self._measure(sections)
        if size <= limit:
            return sections
        sizes = self.formatter.sizes(sections, count)
        if self.policy == "fail":
            raise self._exceeded(sections, sizes.sections, size)
        current: list[Section | None] = list(sections)
        parts = list(sizes.sections)
        laid_out, alive = sum(parts), len(parts)
        offset = size - sizes.total(laid_out, alive)  # how far the parts are from the whole (0 in characters)
        notes: dict[int, Note] = {}
        reasons: dict[str, tuple[SkipReason, str]] = {}
        order = sorted(range(len(sections)), key=lambda i: (_priority(self.priorities, sections[i]), -i))
        for i in order:
            original, own = came_in.get(sections[i].source, (sections[i], ()))
            while size > limit:
                now = current[i]
                assert now is not None
                over = size - limit
                new = self._cut(original, own, count(now.text.rstrip()) - over) if self.policy == "truncate" else None
                if new is None:
                    current[i] = None
                    notes.pop(i, None)
                    laid_out, alive = laid_out - parts[i], alive - 1
                    reasons[original.source] = (SkipReason.OVER_BUDGET, self._why_dropped(size, parts[i]))
                else:
                    saved = count(now.text.rstrip()) - count(new.rstrip())
                    parts[i] -= saved
                    laid_out -= saved
                    current[i] = original.with_text(new)
                    notes[i] = _truncated(original, new, self.limit, "total", bool(self.marker.text))
                size = sizes.total(laid_out, alive) + offset
                if size <= limit:  # the parts say it fits: measure the block itself (tokens do not quite add up)
                    size = self._measure([s for s in current if s is not None])
                    offset = size - sizes.total(laid_out, alive)
                if current[i] is None:
                    break
            if size <= limit:
                break
        if size > limit:  # every source is out and the layout alone is over (the build checks this)
            raise self._exceeded(sections, sizes.sections, size)
        return Processed([s for s in current if s is not None], [notes[i] for i in sorted(notes)], reasons)

    def _cut(self, section: Section, own: Sequence[Limit], room: int) -> str | None:
        """*section*'s text cut to *room* (and its *own* limits); ``None`` when nothing of it would be left."""
        if room <= 0:
            return None
        count = self.limit.count
        before = count(section.text.rstrip())

        def fits(text: str) -> bool:
            content = text.rstrip()
            return count(content) <= room and all(limit.count(content) <= limit.limit for limit in own)

        return cut_lines(section.text, fits, lambda kept: self.marker(section, count, before, kept))

    def _why_dropped(self, size: int, part: int) -> str:
        word = self.limit.count.word
        how = "cutting it to fit would leave nothing of it" if self.policy == "truncate" else "policy drop"
        return (
            f"{self.limit.setting} is {self.limit.limit} {word}; the block was {size} {word}, "
            f"{part} of them this source's: {how}"
        )

    def _exceeded(self, sections: Sequence[Section], parts: Sequence[int], size: int) -> BudgetExceeded:
        largest = sorted(zip((s.source for s in sections), parts, strict=True), key=lambda item: -item[1])[:3]
        return BudgetExceeded(self.limit.setting, size, self.limit.limit, self.limit.count.word, largest)


class ByteBudget:
    """A running budget of UTF-8 bytes of content, spent from the first source down (Codex's ``project_doc_max_bytes``).

    Sources are visited by ``priority`` (highest first), in prompt order on equal
    priority: each takes what is left. One that does not fit is cut on a byte
    boundary (``truncate``; the marker, if any, on its own line, counted in) or
    left out whole (``drop``); ``fail`` raises. A cut that would keep nothing
    but whitespace leaves the source out, and spends nothing (as Codex skips a
    blank part). ``0`` leaves every source out: Codex's way to turn project docs off.

    Args:
        limit: the budget in bytes.
        trim: the layout right-strips content (then trailing whitespace is not counted).
    """

    def __init__(
        self,
        limit: int,
        policy: Literal["truncate", "drop", "fail"],
        marker: Marker,
        priorities: Mapping[str, int] | None = None,
        trim: bool = True,
    ) -> None:
        self.limit = Limit(BYTES, limit, "formatter.budget.max_bytes")
        self.policy, self.marker, self.trim = policy, marker, trim
        self.priorities = dict(priorities or {})
        made_of = repr((marker.text, trim, sorted(self.priorities.items())))
        self.token = f"byte_budget:{self.limit.token}:{policy}:{hashlib.sha256(made_of.encode()).hexdigest()[:16]}"

    def __repr__(self) -> str:
        return f"ByteBudget(max_bytes={self.limit.limit}, policy={self.policy!r}, {self.marker!r})"

    def __call__(
        self, sections: Sequence[Section], came_in: Mapping[str, tuple[Section, Sequence[Limit]]] | None = None
    ) -> Sequence[Section] | Processed:
        """The sections within the budget (*came_in* is not used: a source's own cut stands, and is cut again)."""
        limit = self.limit.limit
        sizes = [self._size(s) for s in sections]
        if sum(sizes) <= limit:
            return sections
        if self.policy == "fail":
            largest = sorted(zip((s.source for s in sections), sizes, strict=True), key=lambda item: -item[1])[:3]
            raise BudgetExceeded(self.limit.setting, sum(sizes), limit, BYTES.word, largest)
        kept: list[Section | None] = list(sections)
        notes: dict[int, Note] = {}
        reasons: dict[str, tuple[SkipReason, str]] = {}
        left = limit
        order = sorted(range(len(sections)), key=lambda i: (-_priority(self.priorities, sections[i]), i))
        for i in order:
            section, size = sections[i], sizes[i]
            if size <= left:
                left -= size
                continue
            new = self._cut(section, size, left) if self.policy == "truncate" and left > 0 else None
            if new is None:
                kept[i] = None
                reasons[section.source] = (SkipReason.OVER_BUDGET, self._why_out(limit, left, size))
                continue
            kept[i] = section.with_text(new)
            notes[i] = _truncated(section, new, self.limit, "total", bool(self.marker.text), self.trim)
            left = 0
        return Processed([s for s in kept if s is not None], [notes[i] for i in sorted(notes)], reasons)

    def _content(self, section: Section) -> str:
        return section.text.rstrip() if self.trim else section.text

    def _size(self, section: Section) -> int:
        """The bytes *section* spends: the file's raw size while its text is the one read and holds a
        replaced byte (Codex counts the raw bytes), else its text's UTF-8 bytes (the same for valid text)."""
        content = self._content(section)
        if section.read_bytes is not None and content is section.text and "\ufffd" in content:
            return section.read_bytes
        return BYTES(content)

    def _cut(self, section: Section, size: int, room: int) -> str | None:
        """*section*'s content cut to *room* bytes, the marker included; ``None`` if only whitespace would be left.

        The bytes kept are counted as they are in the source: a character split by
        the cut becomes U+FFFD, as Codex decodes it, and costs the bytes it had.
        """
        data = self._content(section).encode("utf-8", "surrogatepass")
        end = room
        while end > 0:
            kept = data[:end].decode("utf-8", "replace")
            mark = self.marker(section, BYTES, size, kept)
            if not mark:
                return kept if kept.strip() else None
            joined = "" if kept.endswith("\n") else "\n"
            extra = BYTES(joined + mark)
            if end + extra <= room:
                return kept + joined + mark if kept.strip() else None
            end = min(end - 1, room - extra)
        return None

    def _why_out(self, limit: int, left: int, size: int) -> str:
        setting = self.limit.setting
        if limit == 0:
            return f"{setting} is 0: no content goes in"
        if left == 0:
            return f"{setting} is {limit} bytes, all spent on the sources before this one ({size} bytes)"
        how = "cutting it would leave only whitespace" if self.policy == "truncate" else "policy drop"
        return f"{setting} is {limit} bytes; {left} were left for this source's {size}: {how}"


class Budgets:
    """A config's budgets as one processor: sources' own limits first, then the block's.

    One processor, so that a source both cut is cut once, from its whole text:
    one marker, one ``source_truncated`` (the block budget's, counting from the
    whole source); a source cut and then left out has only its ``source_dropped``.
    """

    def __init__(self, limits: SourceLimits | None, total: TotalBudget | ByteBudget | None) -> None:
        self.limits, self.total = limits, total
        self.token = "+".join(p.token for p in (limits, total) if p is not None)

    def __repr__(self) -> str:
        return f"Budgets({self.limits!r}, {self.total!r})"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section] | Processed:
        first = self.limits(sections) if self.limits is not None else sections
        if self.total is None:
            return first
        if not isinstance(first, Processed):
            return self.total(first)
        limits = self.limits.limits if self.limits is not None else {}
        came_in = {}
        for note in first.notes:
            section = note.section
            own = limits.get(section.source) or limits.get(section.parent or "", ())
            came_in[section.source] = (section, own)
        second = self.total(first.sections, came_in)
        if not isinstance(second, Processed):
            return first
        redone = {note.section.source for note in second.notes} | set(second.reasons)
        notes = [note for note in first.notes if note.section.source not in redone]
        order = {section.source: i for i, section in enumerate(sections)}
        notes = sorted([*notes, *second.notes], key=lambda note: order.get(note.section.source, 0))
        return Processed(second.sections, notes, {**first.reasons, **second.reasons})


def budget_processors(config: Config, formatter: Measure, sources: Sequence[Source]) -> list[Processor]:
    """The budget processors a config asks for: per-source limits first, then the total budget.

    Args:
        sources: the config's sources as built (:func:`memconfig.sources.build_sources`), for their keys.

    Raises:
        ConfigError: the token counter cannot be had (see :func:`~memconfig.process.tokens.token_counter`),
            or the block with no source in it is already over the total budget.
    """
    budget = config.formatter.budget
    limited = any(s.max_chars is not None or s.max_tokens is not None for s in config.sources)
    if budget is None and not limited and config.formatter.tokens.count == "estimate":
        return []  # nothing to keep within: no processor, nothing to build
    wants_tokens = (budget is not None and budget.max_tokens is not None) or any(
        s.max_tokens is not None for s in config.sources
    )
    tokens = token_counter(config) if wants_tokens or config.formatter.tokens.count != "estimate" else None
    neutralise = None
    if formatter.wrappers:
        closing = ClosingTags(formatter.wrappers)
        neutralise = lambda value: closing.neutralise(value)[0]  # noqa: E731
    try:
        marker = Marker(budget.marker if budget is not None else None, neutralise)
    except TemplateError as exc:  # the schema checks it too; this is for configs built without it
        raise ConfigError([Problem("formatter.budget.marker", str(exc))], file=config.file) from None
    limits: dict[str, list[Limit]] = {}
    priorities: dict[str, int] = {}
    for index, (item, source) in enumerate(zip(config.sources, sources, strict=True)):
        if item.max_chars is not None:
            limits.setdefault(source.key, []).append(Limit(CHARACTERS, item.max_chars, f"sources[{index}].max_chars"))
        if item.max_tokens is not None and tokens is not None:
            limits.setdefault(source.key, []).append(Limit(tokens, item.max_tokens, f"sources[{index}].max_tokens"))
        if item.priority:
            priorities[source.key] = item.priority
    own = SourceLimits(limits, marker) if limits else None
    total: TotalBudget | ByteBudget | None = None
    if budget is not None and budget.max_bytes is not None:
        trim = formatter.layout.trim if isinstance(formatter, LaidOut) else True
        total = ByteBudget(budget.max_bytes, budget.policy, marker, priorities, trim)
    elif budget is not None and (budget.max_chars is not None or budget.max_tokens is not None):
        if budget.max_chars is not None:
            limit = Limit(CHARACTERS, budget.max_chars, "formatter.budget.max_chars")
        else:
            assert tokens is not None and budget.max_tokens is not None
            limit = Limit(tokens, budget.max_tokens, "formatter.budget.max_tokens")
        bare = limit.count(formatter.format(()).text)
        if bare > limit.limit:
            word = limit.count.word
            message = f"the block with no source in it (its template and empty text) is already {bare} {word}"
            raise ConfigError([Problem(limit.setting, message)], file=config.file)
        total = TotalBudget(limit, budget.policy, marker, formatter, priorities)
    return [Budgets(own, total)] if own is not None or total is not None else []
