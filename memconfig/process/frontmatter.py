"""Frontmatter stripping: the YAML block at the top of a rule file is for the tool that reads it, not the model.

Cursor's ``.mdc`` rules (``description:``, ``globs:``, ``alwaysApply:``) and
Claude Code's rule files (``paths:``) start with such a block. It is removed
only when it is surely one, so no content is ever lost by mistake:

* the text starts (after a byte order mark) with a line that is ``---``;
* a later line is ``---`` or ``...`` (trailing spaces allowed; ``\\n`` or ``\\r\\n``);
* the first line between them that is not blank or a ``#`` comment is a
  ``key:`` entry, or there is none (an empty block).

Otherwise the text is kept as it is: an unterminated block (``---`` with no
end), or a Markdown horizontal rule followed by prose, is content. The blank
lines right after a removed block go with it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..model import Section
from .text import TextStep

__all__ = ["Frontmatter", "StripFrontmatter", "StripFrontmatterOf", "split_frontmatter", "strip_frontmatter"]

_OPEN = re.compile(r"(?:\ufeff)?---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_KEY = re.compile(r"""(?:"[^"]*"|'[^']*'|[^\s#'"?:\-][^:]*?|-[^\s:][^:]*?)[ \t]*:(?:[ \t]|$)""")
_BLANK_LINES = re.compile(r"(?:[ \t]*\r?\n)*")
_LINE = re.compile(r"[^\r\n]+")


class Frontmatter(NamedTuple):
    """A leading YAML block as :func:`split_frontmatter` finds it.

    Attributes:
        yaml: the text between the fences (``None``: the block is never closed).
        body: the text after the block, the blank lines right after it removed
            (the whole text for a block never closed).
        line: the file's line number (1-based) of the block's first YAML line.
    """

    yaml: str | None
    body: str
    line: int


def split_frontmatter(text: str) -> Frontmatter | None:
    """*text*'s leading YAML block and the rest, or ``None`` when it surely has none (see the module).

    A block opened by ``---`` whose first entry is a ``key:`` but that is
    never closed comes back with ``yaml=None`` and the whole text as body:
    content, but likely a broken block, which a reader of rules reports.
    """
    opened = _OPEN.match(text)
    if opened is None:
        return None
    closed = _CLOSE.search(text, opened.end())
    end = len(text) if closed is None else closed.start()
    for found in _LINE.finditer(text, opened.end(), end):  # lazily: an unclosed block may be the whole file
        line = found.group().strip()
        if line and not line.startswith("#"):
            if _KEY.match(line) is None:
                return None  # a horizontal rule and prose, not a YAML mapping
            break
    else:
        if closed is None:
            return None  # "---" and nothing like YAML after it
    if closed is None:
        return Frontmatter(None, text, 2)
    rest = _BLANK_LINES.match(text, closed.end()).end()  # type: ignore[union-attr]
    return Frontmatter(text[opened.end() : closed.start()], text[rest:], 2)


def strip_frontmatter(text: str) -> str:
    """*text* without its leading YAML frontmatter block, if it surely has one (see the module)."""
    found = split_frontmatter(text)
    return text if found is None else found.body


@dataclass(frozen=True, slots=True)
class StripFrontmatter(TextStep):
    """Removes a leading YAML ``---`` block (see :func:`strip_frontmatter` for when a block is one)."""

    def clean(self, text: str) -> str:
        # "-" first: a file that does not start with a dash (or a BOM) costs one comparison.
        first = text[:1]
        if first != "-" and first != "\ufeff":
            return text
        return strip_frontmatter(text)


class StripFrontmatterOf:
    """:class:`StripFrontmatter` for the sections of some sources only, when a config's sources disagree.

    A glob's matches go with the glob: a section is stripped when its source,
    or the source it was expanded from, is one of *sources* (keys).
    """

    def __init__(self, sources: Collection[str]) -> None:
        self.sources = frozenset(sources)
        digest = hashlib.sha256("\x1e".join(sorted(self.sources)).encode()).hexdigest()
        self.token = f"StripFrontmatter(sources={len(self.sources)}:{digest[:16]})"

    def __repr__(self) -> str:
        return f"StripFrontmatterOf({sorted(self.sources)!r})"

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        chosen = self.sources
        out = []
        for section in sections:
            if (section.source if section.parent is None else section.parent) in chosen:
                text = strip_frontmatter(section.text)
                if text is not section.text:
                    section = section.with_text(text)
            out.append(section)
        return out
