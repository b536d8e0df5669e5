"""The formatter stage: entries in, one memory block out.

Each entry becomes a *section* (slots ``{path}``, ``{name}``, ``{content}``),
sections are joined by the *separator*, and the result fills the template's
``{agent_memory}`` slot (or the *empty* text does, when nothing is left).
Blocks are memoised by the snapshot's digest, so an unchanged turn does no
formatting and no hashing.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import replace

from .config import MEMORY_SLOT, SECTION_SLOTS, Config
from .presets import PRESETS, Preset
from .stages import Block, Snapshot
from .templates import Template

__all__ = ["TemplateFormatter"]

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SPACE = re.compile(r"\s*")
_MEMO_SIZE = 64


class TemplateFormatter:
    """Formats entries with a :class:`~memconfig.presets.Preset` layout."""

    def __init__(self, layout: Preset = PRESETS["deepagents"]) -> None:
        self.layout = layout
        self._template = Template(layout.template, {MEMORY_SLOT}, [MEMORY_SLOT])
        self._section = Template(layout.section, SECTION_SLOTS)
        self._memo: dict[str, Block] = {}  # by snapshot digest, oldest first
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config) -> TemplateFormatter:
        return cls(config.formatter.layout(config.template_text))

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self.layout).items() if k != "template"}
        return f"TemplateFormatter(template={self.layout.template[:40]!r}..., {shown})"

    def clean(self, text: str) -> str:
        """What of a source's text goes into its section: comments stripped (if set), trailing space removed."""
        # "<" first: a one-character search is a memchr, far cheaper than looking for "<!--" itself.
        if self.layout.strip_html_comments and "<" in text and "<!--" in text:
            text = _HTML_COMMENT.sub("", text)
        return text.rstrip()

    def is_blank(self, text: str) -> bool:
        """Whether *text* has nothing to show once cleaned; looks no further than its first word."""
        start = _SPACE.match(text).end()  # type: ignore[union-attr]
        if start == len(text):
            return True
        if self.layout.strip_html_comments and text.startswith("<!--", start):
            return not self.clean(text)
        return False

    def format(self, snapshot: Snapshot) -> Block:
        """The block for *snapshot*; served from the memo when its digest was seen before."""
        block = self._memo.get(snapshot.digest)  # a dict read needs no lock
        if block is not None:
            return block
        # Every piece of every section goes in one list, joined once with the template around it.
        body: list[str] = []
        section = self._section.parts
        for entry in snapshot.entries:
            content = self.clean(entry.content)
            if content:
                if body:
                    body.append(self.layout.separator)
                values = {"path": entry.key, "name": entry.name, "content": content}
                body += [values[part] if is_slot else part for is_slot, part in section]
        pieces: list[str] = []
        for is_slot, part in self._template.parts:
            if is_slot:
                pieces += body or [self.layout.empty]
            else:
                pieces.append(part)
        digest = hashlib.sha256()
        for piece in pieces:  # piece by piece: encoding the whole block at once costs a second copy of it
            digest.update(piece.encode())
        block = Block("".join(pieces), digest.hexdigest())
        with self._lock:
            self._memo[snapshot.digest] = replace(block, memo=True)
            while len(self._memo) > _MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))  # the oldest
        return block
