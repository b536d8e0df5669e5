"""The shape of a text step: a processor that rewrites each section's text and nothing else.

Apart from the steps themselves (:mod:`.cleaning`, :mod:`.frontmatter`) so
that each can build on it and the chain can run consecutive ones as one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from ..model import Section

__all__ = ["TextStep"]


class TextStep:
    """A processor that rewrites each section's text with :meth:`clean`; its token is its class and fields."""

    @classmethod
    def from_config(cls, options: Mapping[str, Any]) -> Self:
        """The step a config's ``processors:`` entry names, its ``options`` as the fields (the registry's factory)."""
        return cls(**options)

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
