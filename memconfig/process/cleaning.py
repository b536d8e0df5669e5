"""The built-in cleaning: processors that change a section's text and nothing else.

Each also cleans a bare string (:meth:`clean`), which is how the loader tells
ahead of time that a file has nothing to show (it is skipped as ``empty``
and never stored). Trailing whitespace is not cleaning but layout: the
formatter right-strips each section, so sections join with exactly the separator.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..fences import closes, opens
from .text import TextStep

if TYPE_CHECKING:
    from ..format.presets import Preset
    from ..sources.source import Source
    from ..stages import Processor

__all__ = ["Cleaning", "StripBOM", "StripHTMLComments", "TextStep"]

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SPACE = re.compile(r"\s*")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class StripBOM(TextStep):
    """Removes a leading byte order mark (U+FEFF), which would otherwise reach the model as text."""

    def clean(self, text: str) -> str:
        return text[1:] if text.startswith(_BOM) else text


@dataclass(frozen=True, slots=True)
class StripHTMLComments(TextStep):
    """Removes ``<!-- … -->``: notes for people editing the file, not for the model.

    *outside_code*: those inside fenced code blocks (```` ``` ```` or ``~~~``) are kept, as
    Claude Code keeps them (an example of a comment is code, not a note); deepagents strips them all.
    """

    outside_code: bool = field(default=False, repr=False)

    @property
    def token(self) -> str:
        return "StripHTMLComments(outside_code=True)" if self.outside_code else "StripHTMLComments()"

    def clean(self, text: str) -> str:
        # "<" first: a one-character search is a memchr, far cheaper than looking for "<!--" itself.
        if "<" not in text or "<!--" not in text:
            return text
        if not self.outside_code or ("```" not in text and "~~~" not in text):
            return _HTML_COMMENT.sub("", text)
        return "".join(_HTML_COMMENT.sub("", part) if prose else part for prose, part in _fenced(text))


def _fenced(text: str) -> list[tuple[bool, str]]:
    """*text* as runs of prose (``True``) and fenced code blocks (``False``): :mod:`memconfig.fences`' reading;
    an unclosed fence runs to the end."""
    runs: list[tuple[bool, str]] = []
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        if fence is None:
            fence = opens(line.rstrip("\r\n"))
            if fence is None:
                prose.append(line)
                continue
            runs.append((True, "".join(prose)))
            prose, code = [], [line]
            continue
        code.append(line)
        if closes(line.rstrip("\r\n"), fence):
            runs.append((False, "".join(code)))
            code, fence = [], None
    runs += [(False, "".join(code)), (True, "".join(prose))]
    return runs


class Cleaning:
    """The built-in cleaning processors for one layout, in order, and the blank test they imply.

    Args:
        strip_html_comments: remove ``<!-- … -->`` (``"outside_code"``: but inside fenced code).
        strip_frontmatter: remove a leading YAML ``---`` block: for every
            source, or by source key (each source's own choice). When the
            sources disagree, the blank test leaves frontmatter in (a file that
            is only frontmatter is then read, and left out by the step as ``empty``).
    """

    def __init__(
        self,
        strip_html_comments: bool | str = True,
        strip_frontmatter: bool | Mapping[str, bool] = False,
        strip_bom: bool = True,
    ) -> None:
        self.strip_html_comments = strip_html_comments
        if isinstance(strip_frontmatter, Mapping):
            choices = set(strip_frontmatter.values())
            every = choices == {True}
            some = [key for key, strip in strip_frontmatter.items() if strip] if len(choices) > 1 else []
        else:
            every, some = strip_frontmatter, []
        self.strip_frontmatter = every
        """Frontmatter is stripped from every source (the blank test strips it too)."""
        if every or some:
            from .frontmatter import StripFrontmatter, StripFrontmatterOf  # only stripping frontmatter pays for it

        text: list[TextStep] = [StripBOM()] if strip_bom else []
        if every:
            text.append(StripFrontmatter())
        if strip_html_comments:
            text.append(StripHTMLComments(outside_code=strip_html_comments == "outside_code"))
        self._text: tuple[TextStep, ...] = tuple(text)
        steps: list[Processor] = list(text)
        chosen = (("bom", strip_bom), ("frontmatter", every), ("html_comments", strip_html_comments))
        names = [name for name, on in chosen if on]
        if some:  # after the BOM (if stripped), before comments: the block must be at the very start
            steps.insert(1 if strip_bom else 0, StripFrontmatterOf(some))
            names.insert(1 if strip_bom else 0, "frontmatter")
        self.steps: tuple[Processor, ...] = tuple(steps)
        self.names: tuple[str, ...] = tuple(names)
        """Each step's name in the processor chain (:data:`~memconfig.process.chain.BUILT_IN`)."""
        self.token = "+".join(step.token for step in self.steps)

    @classmethod
    def for_layout(
        cls, layout: Preset, sources: Sequence[Source] = (), enabled: Collection[str] | None = None
    ) -> Cleaning:
        """The cleaning a layout's rules ask for, with each source's own ``strip_frontmatter`` (if set) first.

        Args:
            enabled: the names of the steps that may run (``None``: every one the layout asks for).
        """
        on = (lambda name: True) if enabled is None else enabled.__contains__
        rule = layout.strip_frontmatter and on("frontmatter")
        chosen = {s.key: rule if s.strip_frontmatter is None else s.strip_frontmatter for s in sources}
        if not on("frontmatter"):
            chosen = {}
        comments = layout.strip_html_comments if on("html_comments") else False
        return cls(comments, chosen or rule, layout.strip_bom and on("bom"))

    def __repr__(self) -> str:
        return f"Cleaning({self.token})"

    def clean(self, text: str) -> str:
        """*text* as the steps that apply to every source leave it."""
        for step in self._text:
            text = step.clean(text)
        return text

    def is_blank(self, text: str) -> bool:
        """Whether *text* has nothing but whitespace once cleaned; looks no further than its first word."""
        first = text[:1]
        if first and first != "<" and first != _BOM and first != "-" and not first.isspace():
            return False  # the usual case, decided by one character
        if self.strip_frontmatter and text.startswith(("-", _BOM + "-")):
            return not self.clean(text).strip()
        start = _SPACE.match(text, 1 if text.startswith(_BOM) else 0).end()  # type: ignore[union-attr]
        if start == len(text):
            return True
        if self.strip_html_comments and text.startswith("<!--", start):
            return not self.clean(text).strip()
        return False
