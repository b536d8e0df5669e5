"""The pipeline: wires loader → state cache → formatter → appender, and nothing more."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from . import events
from .appender import SystemPromptAppender
from .cache import PolicyCache
from .config import Config, load_config
from .exceptions import SourceError
from .formatter import TemplateFormatter
from .loader import FsspecLoader
from .sources import build_sources
from .stages import Appender, Formatter, Loader, LoadResult, Snapshot, StateCache

__all__ = ["Pipeline"]


class Pipeline:
    """Builds one prompt from the sources a config declares.

    ``render`` and ``arender`` keep contents in *state* (any mutable mapping:
    an agent's state, a checkpointed thread's dict); without one, the
    pipeline's own state is used, so repeated renders share one cache.
    """

    def __init__(
        self,
        loader: Loader,
        cache: StateCache,
        formatter: Formatter,
        appender: Appender,
        *,
        config: Config | None = None,
    ) -> None:
        self.loader = loader
        self.cache = cache
        self.formatter = formatter
        self.appender = appender
        self.config = config
        self.state: dict[str, Any] = {}

    @classmethod
    def from_config(cls, config: Config | Mapping[str, Any]) -> Pipeline:
        """Build the four stages from a config object or a plain mapping.

        Raises:
            ConfigError: the mapping is not a valid config.
        """
        if not isinstance(config, Config):
            config = Config.from_mapping(config)
        formatter = TemplateFormatter.from_config(config)
        sources = build_sources(config)
        return cls(
            FsspecLoader.from_config(config, formatter.is_blank),
            PolicyCache.from_config(config, sources),
            formatter,
            SystemPromptAppender.from_config(config),
            config=config,
        )

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> Pipeline:
        """Build from a YAML config file. Raises :class:`ConfigError` naming the file."""
        return cls.from_config(load_config(path))

    def __repr__(self) -> str:
        return f"Pipeline({self.loader!r}, {self.cache!r}, {self.formatter!r}, {self.appender!r})"

    def render(self, system: str | None = None, state: MutableMapping[str, Any] | None = None) -> str:
        """The system prompt with the memory block added.

        Raises:
            SourceError: a required source is not available (or a decode error
                under ``on_decode_error: fail``).
        """
        started = time.perf_counter()
        snapshot = self.cache.resolve(self.state if state is None else state, self.loader)
        return self._finish(system, snapshot, started)

    async def arender(self, system: str | None = None, state: MutableMapping[str, Any] | None = None) -> str:
        """:meth:`render` for asyncio callers."""
        started = time.perf_counter()
        snapshot = await self.cache.aresolve(self.state if state is None else state, self.loader)
        return self._finish(system, snapshot, started)

    def load(self, state: MutableMapping[str, Any] | None = None) -> list[LoadResult]:
        """Read every source now, whatever the cache policy; one result per source (or glob match)."""
        snapshot = self.cache.resolve(self.state if state is None else state, self.loader, force=True)
        return list(snapshot.results)

    def _finish(self, system: str | None, snapshot: Snapshot, started: float) -> str:
        block = self.formatter.format(snapshot)
        prompt = self.appender.append(system, block)
        events.prompt_built(
            sources_loaded=len(snapshot.entries),
            sources_skipped=snapshot.left_out,
            chars=len(block.text),
            sha256=block.sha256,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            memo=block.memo,
            **snapshot.stats,
        )
        if snapshot.failures:
            raise SourceError(*snapshot.failures[0])
        return prompt
