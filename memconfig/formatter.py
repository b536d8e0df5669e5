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
from collections import OrderedDict

from .config import MEMORY_SLOT, SECTION_SLOTS, Config
from .presets import PRESETS, Preset
from .stages import Block, Snapshot
from .templates import Template

__all__ = ["TemplateFormatter"]

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MEMO_SIZE = 64


class TemplateFormatter:
    """Formats entries with a :class:`~memconfig.presets.Preset` layout."""

    def __init__(self, layout: Preset = PRESETS["deepagents"]) -> None:
        self.layout = layout
        self._template = Template(layout.template, {MEMORY_SLOT}, [MEMORY_SLOT])
        self._section = Template(layout.section, SECTION_SLOTS)
        self._memo: OrderedDict[str, Block] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config) -> TemplateFormatter:
        return cls(config.formatter.layout(config.template_text))

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self.layout).items() if k != "template"}
        return f"TemplateFormatter(template={self.layout.template[:40]!r}..., {shown})"

    def clean(self, text: str) -> str:
        """What of a source's text goes into its section: comments stripped (if set), trailing space removed."""
        if self.layout.strip_html_comments and "<!--" in text:
            text = _HTML_COMMENT.sub("", text)
        return text.rstrip()

    def format(self, snapshot: Snapshot) -> Block:
        """The block for *snapshot*; served from the memo when its digest was seen before."""
        with self._lock:
            block = self._memo.get(snapshot.digest)
            if block is not None:
                self._memo.move_to_end(snapshot.digest)
                return Block(block.text, block.sha256, memo=True)
        sections = []
        for entry in snapshot.entries:
            content = self.clean(entry.content)
            if content:
                sections.append(self._section.render({"path": entry.key, "name": entry.name, "content": content}))
        body = self.layout.separator.join(sections) if sections else self.layout.empty
        text = self._template.render({MEMORY_SLOT: body})
        block = Block(text, hashlib.sha256(text.encode()).hexdigest())
        with self._lock:
            self._memo[snapshot.digest] = block
            while len(self._memo) > _MEMO_SIZE:
                self._memo.popitem(last=False)
        return block
