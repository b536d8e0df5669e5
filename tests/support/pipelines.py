"""Small builders shared by the tests: a pipeline over sources in a folder, and picking events by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memconfig import Pipeline, Processor


def plain_pipeline(
    root: Path | None,
    sources: Sequence[Any],
    policy: str = "once",
    *,
    processors: Sequence[Processor] = (),
    cache: Mapping[str, Any] | None = None,
    formatter: Mapping[str, Any] | None = None,
    **sections: Any,
) -> Pipeline:
    """A pipeline with the ``plain`` layout over *sources* (relative to *root*), under the cache *policy*.

    *cache* and *formatter* add to (or replace) the cache's and the formatter's settings; *sections* add or
    replace other parts of the config (``loader``, ``imports``, ``appender`` …).
    """
    config: dict[str, Any] = {
        "version": 1,
        "sources": list(sources),
        "cache": {"policy": policy, **(cache or {})},
        "formatter": {"preset": "plain", **(formatter or {})},
        **sections,
    }
    if root is not None:
        config["base_dir"] = str(root)
    return Pipeline.from_config(config, processors=processors)


def events_named(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The captured events called *name*, in order."""
    return [e for e in logs if e["event"] == name]
