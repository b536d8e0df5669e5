"""The ``json`` appender: a :class:`~memconfig.Render` as JSON-able data, for tools and audits.

What ``memconfig render --format json`` prints: the block, its sha256 (a
prompt-cache key), the render's id and counts (those of ``prompt_built``), and a
record per source, skipped ones included. Keys come in a fixed order; ``counts``
are sorted by name. The system prompt is not part of it: a render has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.schema import AppenderConfig
    from ..model import Render

__all__ = ["JSONAppender"]


class JSONAppender:
    """Gives the render itself, as plain dicts, lists, strings and numbers (``json.dumps`` takes it as it is)."""

    @classmethod
    def from_config(cls, options: AppenderConfig) -> JSONAppender:
        return cls()

    def __repr__(self) -> str:
        return "JSONAppender()"

    def append(self, system: object, render: Render) -> dict[str, Any]:
        """*render* as data; *system* is not used (a render holds the block, not the prompt)."""
        return {
            "text": render.text,
            "sha256": render.sha256,
            "render_id": render.render_id,
            "counts": dict(sorted(render.counts.items())),
            "sources": [
                {**record._asdict(), "reason": record.reason and str(record.reason), "notes": list(record.notes)}
                for record in render.sources
            ],
        }

    def output(self, system: str | None, render: Render) -> dict[str, Any]:
        """What ``memconfig render --format json`` prints."""
        return self.append(system, render)
