"""The built-in cleaning: processors that change a section's text and nothing else.

Each also cleans a bare string (:meth:`clean`), which is how the loader tells
ahead of time that a file has nothing to show (it is skipped as ``empty``
and never stored). Trailing whitespace is not cleaning but layout: the
formatter right-strips each section, so sections join with exactly the separator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..render import Section

__all__ = ["Cleaning", "StripBOM", "StripHTMLComments", "TextStep"]

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SPACE = re.compile(r"\s*")
_BOM = "\ufeff"


class TextStep:
    """A processor that rewrites each section's text with :meth:`clean`; its token is its class and fields."""

    def clean(self, text: str) -> str:
        raise NotImplementedError

    @property
    def token(self) -> str:
        return repr(self)

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        clean = self.clean
        out = []
        for section in sections:
            text = clean(section.text)
            out.append(section if text is section.text else section.with_text(text))
        return out


@dataclass(frozen=True, slots=True)
class StripBOM(TextStep):
    """Removes a leading byte order mark (U+FEFF), which would otherwise reach the model as text."""

    def clean(self, text: str) -> str:
        return text[1:] if text.startswith(_BOM) else text


@dataclass(frozen=True, slots=True)
class StripHTMLComments(TextStep):
    """Removes ``<!-- … -->``: notes for people editing the file, not for the model."""

    def clean(self, text: str) -> str:
        # "<" first: a one-character search is a memchr, far cheaper than looking for "<!--" itself.
        if "<" in text and "<!--" in text:
            return _HTML_COMMENT.sub("", text)
        return text


class Cleaning:
    """The built-in cleaning processors for one layout, in order, and the blank test they imply."""

    def __init__(self, strip_html_comments: bool = True) -> None:
        self.strip_html_comments = strip_html_comments
        steps: list[TextStep] = [StripBOM()]
        if strip_html_comments:
            steps.append(StripHTMLComments())
        self.steps: tuple[TextStep, ...] = tuple(steps)
        self.token = "+".join(step.token for step in self.steps)

    def __repr__(self) -> str:
        return f"Cleaning({self.token})"

    def clean(self, text: str) -> str:
        for step in self.steps:
            text = step.clean(text)
        return text

    def is_blank(self, text: str) -> bool:
        """Whether *text* has nothing but whitespace once cleaned; looks no further than its first word."""
        first = text[:1]
        if first and first != "<" and first != _BOM and not first.isspace():
            return False  # the usual case, decided by one character
        start = _SPACE.match(text, 1 if text.startswith(_BOM) else 0).end()  # type: ignore[union-attr]
        if start == len(text):
            return True
        if self.strip_html_comments and text.startswith("<!--", start):
            return not self.clean(text).strip()
        return False
