"""The formatter stage: sections in, one memory block out.

Each section's text, right-stripped, is laid out by the layout's *section*
template (slots ``{path}``, ``{name}``, ``{title}``, ``{content}``), sections
are joined by the *separator*, and the result fills the template's
``{agent_memory}`` slot (or the *empty* text does, when no section is left).
Cleaning (BOM, comments, frontmatter) and escaping content are not done here:
they are the processors' job, before.

What the formatter escapes is what it puts in itself, when the layout's
``escape`` rule is on: a slot that sits inside a tag (``<source name="{title}">``)
gets its value escaped for that place (``&``, ``<``, ``>``, the attribute's quote,
control characters), and a name, title or path laid out as text has the
wrappers' closing tags neutralised as content has (a file name can hold
``</agent_memory>`` too). Which slots sit where is read from the layout. Every
text value's end is checked once more as it goes in (a ``<`` that the text after
it could still turn into a wrapper's closing tag gets a backslash), for what a
processor after the escaping one, a budget's cut, leaves there. A layout whose
own text would let a value finish or name a tag is refused when the formatter is
made (:func:`~memconfig.format.markup.layout_problems`, :class:`~memconfig.format.markup.LayoutError`).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..closing import ClosingTags
from ..held import Held
from ..limits import MAX_HELD_CHARS
from ..model import Block, Section
from ..templates import Template
from .markup import LayoutError, layout_problems, slot_contexts, wrappers
from .presets import MEMORY_SLOT, PRESETS, SECTION_SLOTS, Preset, define_presets

if TYPE_CHECKING:
    from ..config.schema import FormatterConfig, PresetConfig
    from ..sources.source import Source

__all__ = ["TemplateFormatter", "escape_attribute"]

_UNSAFE = re.compile(r"""[&<>"'\x00-\x1f\x7f-\x9f]""")
_ALLOWED_CONTROLS = {"\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}


def escape_attribute(value: str, quote: str = '"') -> str:
    """*value* as it can stand inside a tag: ``&``, ``<``, ``>`` and the quote as entities.

    *quote* is the attribute's quote (``'"'`` or ``"'"``; ``""`` for a slot
    unquoted in a tag: both are escaped). Tab, newline and carriage return
    become character references; other control characters, which XML 1.0 does
    not allow even as references, become U+FFFD.
    """
    if _UNSAFE.search(value) is None:
        return value
    out = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote != "'":
        out = out.replace('"', "&quot;")
    if quote != '"':
        out = out.replace("'", "&apos;")
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: _ALLOWED_CONTROLS.get(m[0], "\ufffd"), out)


class BlockSizes(NamedTuple):
    """A block's size in parts (see :meth:`TemplateFormatter.sizes`)."""

    frame: int
    """The template around the sections."""
    empty: int
    """The text that stands in for the sections when there is none."""
    separator: int
    sections: tuple[int, ...]
    """Each section as laid out, in order."""

    def total(self, laid_out: int, count: int) -> int:
        """The block's size with *count* sections whose laid-out sizes add up to *laid_out*."""
        return self.frame + (laid_out + self.separator * (count - 1) if count else self.empty)


class _LaidOut(NamedTuple):
    """A section as the formatter laid it out: kept while the same section comes back.

    Its content trimmed (``trim``) is a copy of its text, kept for the next call up to
    :data:`~memconfig.limits.MAX_HELD_CHARS` characters in all; past them a section keeps the place of its
    content, trimmed again when it comes back (a copy freed once the block is joined).
    """

    section: Section
    pieces: list[str]  # never changed once made (a list: a tuple of it would be one more copy per section)
    chars: int  # its content's characters, as laid out (before escaping)
    trimmed_at: int  # where the trimmed content goes in *pieces* (-1: every piece is kept as it is)
    copied: int  # the characters of a copy of the text among *pieces* (its content trimmed or escaped), or 0

    def again(self) -> list[str]:
        """The pieces, the trimmed content put back in its place."""
        if self.trimmed_at < 0:
            return self.pieces
        pieces = self.pieces.copy()
        pieces[self.trimmed_at] = self.section.text.rstrip()
        return pieces

    def whole(self, pieces: list[str]) -> _LaidOut:
        """This, keeping *pieces* (:meth:`again`'s) whole: its trimmed copy too."""
        return _LaidOut(self.section, pieces, self.chars, -1, len(pieces[self.trimmed_at]))


class TemplateFormatter:
    """Formats sections with a :class:`~memconfig.format.presets.Preset` layout.

    Args:
        layout: the preset, with the config's overrides.
        titles: each declared source's ``title``, by key; a source not listed
            (a glob's match, a source without one) is titled with its name.

    Attributes:
        wrappers: the elements content sits in, as the layout declares them
            (empty when the layout's ``escape`` rule is off): what the escaping
            processor neutralises the closing tags of.
    """

    def __init__(self, layout: Preset = PRESETS["deepagents"], titles: Mapping[str, str] | None = None) -> None:
        self.layout = layout
        self.titles: Mapping[str, str] = dict(titles or {})
        self._template = Template(layout.template, {MEMORY_SLOT}, [MEMORY_SLOT])
        self._section = Template(layout.section, SECTION_SLOTS)
        self.wrappers: tuple[str, ...] = ()
        if layout.escape:
            problems = layout_problems(self._template.parts, self._section.parts, layout.separator)
            if problems:
                raise LayoutError(problems)
            self.wrappers = wrappers(self._template.parts, self._section.parts, layout.separator)
        self._parts = self._escaped_parts(ClosingTags(self.wrappers))
        # Where the trimmed content goes, when it is put in as it is or only escaped where it holds a "<" (a value
        # of an attribute is escaped whatever it holds: kept as made).
        plain = [i for i, (slot, _, escape, lt_only) in enumerate(self._parts) if slot == "content"]
        at = plain[0] if len(plain) == 1 else -1
        self._content_at = at if at >= 0 and (self._parts[at][2] is None or self._parts[at][3]) else -1
        self._laid_out: Held[_LaidOut] = Held()
        titled = tuple(sorted(self.titles.items())) if "title" in self._section.slots else ()
        self.token = _token(layout, titled)

    @classmethod
    def from_config(
        cls,
        formatter: FormatterConfig,
        sources: Sequence[Source] = (),
        *,
        presets: Mapping[str, PresetConfig] | None = None,
        template_text: str | None = None,
    ) -> TemplateFormatter:
        """The formatter a config's ``formatter`` section describes: its preset (built in or defined) and overrides.

        Args:
            sources: the config's sources as built (:func:`memconfig.sources.build_sources`), for their titles.
            presets: the config's ``presets:`` section, which ``formatter.preset`` may name.
            template_text: the text of ``formatter.template_file``, read when the config was loaded.
        """
        defined, _ = define_presets(presets or {})
        layout = formatter.layout(template_text, defined)
        return cls(layout, {s.key: s.title for s in sources if s.title is not None})

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self.layout).items() if k != "template"}
        return f"TemplateFormatter(template={self.layout.template[:40]!r}..., {shown})"

    def _escaped_parts(
        self, closing: ClosingTags
    ) -> tuple[tuple[str | None, str, Callable[[str], str] | None, bool], ...]:
        """The section's parts as ``(slot or None, literal, escape, only_with_lt)``: how each slot's value goes in.

        *only_with_lt*: the escape changes nothing in a value without a ``<``
        (closing tags), so the usual value is put in without a call.
        """
        parts = []
        contexts = slot_contexts(self._section.parts) if self.layout.escape else (None,) * len(self._section.parts)
        for (is_slot, text), context in zip(self._section.parts, contexts, strict=True):
            escape: Callable[[str], str] | None = None
            if is_slot and context is not None:
                escape = lambda value, quote=context: escape_attribute(value, quote)  # noqa: E731
            elif is_slot and text == "content" and closing.names:
                escape = closing.neutralise_end  # the escaping processor did the rest; a later cut may leave an end
            elif is_slot and closing.names:
                escape = lambda value: closing.neutralise(value)[0]  # noqa: E731
            only_with_lt = escape is not None and context is None
            parts.append((text if is_slot else None, "" if is_slot else text, escape, only_with_lt))
        return tuple(parts)

    def format(self, sections: Sequence[Section]) -> Block:
        """The block for *sections*, in their order.

        A section laid out by the call before is not laid out again: its pieces
        are kept by key while the same section object comes back (a changed turn
        lays out what changed, then joins and hashes the block once).
        """
        # Every piece of every section goes in one list, joined once with the template around it.
        held = self._laid_out.last
        laid_out = self._laid_out.start()
        body: list[str] = []
        chars: dict[str, int] = {}
        separator = self.layout.separator
        spare = MAX_HELD_CHARS  # characters of trimmed copies kept for the next call (see _LaidOut)
        for item in sections:
            key = item.source
            found = held.get(key)
            if found is not None and found.section is item and found.trimmed_at < 0 and found.copied <= spare:
                pieces, size = found.pieces, found.chars  # the usual case: taken again as it is
                if laid_out is not None:
                    laid_out[key] = found
                    spare -= found.copied
            elif found is not None and found.section is item:  # kept without its trimmed copy: trimmed again
                pieces, size = found.again(), found.chars
                if laid_out is not None:
                    laid_out[key] = found if len(pieces[found.trimmed_at]) > spare else found.whole(pieces)
                    spare -= laid_out[key].copied
            else:
                pieces, size = self._pieces(item)
                if laid_out is not None:  # kept from the second call on (a first render is often the only one)
                    kept = laid_out[key] = self._kept(item, pieces, size, spare)
                    spare -= kept.copied
            if body:
                body.append(separator)
            body += pieces
            chars[key] = size
        self._laid_out.finish(laid_out)
        pieces = self._framed(body)
        digest = hashlib.sha256()
        for (
            piece
        ) in pieces:  # piece by piece: a copy of the whole block, encoded, is slower once it outgrows the caches
            digest.update(piece.encode())
        return Block("".join(pieces), digest.hexdigest(), chars)

    def _framed(self, body: list[str]) -> list[str]:
        """The block's pieces: the template around the sections' (its ``empty`` text when there is none)."""
        pieces: list[str] = []
        for is_slot, part in self._template.parts:
            if is_slot:
                pieces += body or [self.layout.empty]
            else:
                pieces.append(part)
        return pieces

    def _pieces(self, item: Section) -> tuple[list[str], int]:
        """*item*'s pieces in the block (its slots filled, escaped where the layout says), and its content's size."""
        name = item.name
        title = self.titles.get(item.source, name) if self.titles else name
        content = item.text.rstrip() if self.layout.trim else item.text
        values = {"path": item.source, "name": name, "title": title, "content": content}
        pieces = [
            literal
            if slot is None
            else values[slot]
            if escape is None or (lt_only and "<" not in values[slot])
            else escape(values[slot])
            for slot, literal, escape, lt_only in self._parts
        ]
        return pieces, len(content)

    def _kept(self, item: Section, pieces: list[str], size: int, spare: int) -> _LaidOut:
        """What is kept of *item* laid out: its pieces; a trimmed copy of its text only within *spare* characters."""
        at = self._content_at
        if at < 0 or len(pieces[at]) == len(item.text):  # nothing trimmed: the piece is the section's own text
            return _LaidOut(item, pieces, size, -1, 0)
        copied = len(pieces[at])
        if copied <= spare or ("<" in pieces[at] and pieces[at] != item.text.rstrip()):  # or escaped: kept as made
            return _LaidOut(item, pieces, size, -1, copied)
        return _LaidOut(item, [*pieces[:at], "", *pieces[at + 1 :]], size, at, 0)

    def sizes(self, sections: Sequence[Section], count: Callable[[str], int] = len) -> BlockSizes:
        """The block's size for *sections* in parts, each measured with *count*: what budgets weigh.

        A budget sees from the parts what leaving out or shortening a section
        saves without formatting the block again. Each part is measured on what
        :meth:`format` itself makes (a section laid out alone, the block with no
        section), so the parts add up to the block exactly in characters (for a
        template with one ``{agent_memory}``); in tokens, to within a few tokens.
        """
        empty = count(self.layout.empty)
        frame = count("".join(self._framed([]))) - empty
        held = self._laid_out.last
        laid_out = []
        for item in sections:
            found = held.get(item.source)
            pieces = found.again() if found is not None and found.section is item else self._pieces(item)[0]
            laid_out.append(count("".join(self._framed(list(pieces)))) - frame)
        return BlockSizes(frame, empty, count(self.layout.separator), tuple(laid_out))


@functools.lru_cache(maxsize=64)  # by layout and titles: a process has a few, and each pipeline asks again
def _token(layout: Preset, titled: tuple[tuple[str, str], ...]) -> str:
    """What a formatter lays out with, as its token: a Preset's repr names every field (no deep copy, as astuple)."""
    made_of = repr((layout, list(titled)))  # as a list: the token states were made for stays the same
    return "template:" + hashlib.sha256(made_of.encode()).hexdigest()
