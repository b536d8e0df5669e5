"""An example memconfig plugin: what a package of its own registers through entry points.

* ``banner`` (group ``memconfig.appenders``): the prompt with the block under a banner line;
  printable, as it has ``output``.
* ``stamp`` (group ``memconfig.processors``): puts ``[label]`` before each section's text.
* ``notes`` (group ``memconfig.loaders``): reads ``notes://NAME`` from a table it is given.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from memconfig import LoadRequest, LoadResult, Render, Section, SkipReason

__all__ = ["BannerAppender", "NotesLoader", "Stamp"]


class BannerAppender:
    """The system prompt, then a banner line, then the block."""

    def __init__(self, banner: str = "== memory ==") -> None:
        self.banner = banner

    @classmethod
    def from_config(cls, options: Any) -> BannerAppender:
        return cls()

    def append(self, system: str | None, render: Render) -> str:
        return "\n".join(part for part in (system, self.banner, render.text) if part)

    def output(self, system: str | None, render: Render) -> str:
        return self.append(system, render)


@dataclasses.dataclass(frozen=True)
class Stamp:
    """Puts ``[label]`` before every section's text, so the model can tell where a rule came from."""

    label: str = "memory"

    @classmethod
    def from_config(cls, options: Mapping[str, Any]) -> Stamp:
        return cls(**options)

    @property
    def token(self) -> str:
        return f"stamp:{self.label}"

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        return [section.with_text(f"[{self.label}] {section.text}") for section in sections]


class NotesLoader:
    """Reads ``notes://NAME`` from a table of notes (here a fixed one; a real plugin would ask its store)."""

    NOTES: Mapping[str, str] = {"style": "Write short sentences.", "review": "Ask for a second pair of eyes."}

    @classmethod
    def from_config(cls, settings: Any) -> NotesLoader:
        return cls()

    @property
    def token(self) -> str:
        return "notes/1"

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        results = []
        for request in requests:
            name = request.source.url.removeprefix("notes://")
            text = self.NOTES.get(name)
            if text is None:
                missing = f"no note {name!r}"
                results.append(LoadResult(request.source, "skipped", reason=SkipReason.NOT_FOUND, detail=missing))
            else:
                sha256 = hashlib.sha256(text.encode()).hexdigest()
                results.append(LoadResult(request.source, "loaded", text, bytes=len(text.encode()), sha256=sha256))
        return results
