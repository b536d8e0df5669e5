"""memconfig: a YAML-declared pipeline that builds an agent's memory prompt from files anywhere fsspec reaches.

The public API is re-exported here, each name imported when first used (:mod:`memconfig.lazy`): ``import
memconfig`` costs nothing, and ``from memconfig.cli import run`` imports none of the library before the command
line pauses the collector for its command's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_names

if TYPE_CHECKING:
    from .append import APPENDERS, TextAppender
    from .cache import PolicyCache
    from .config import Config, load_config
    from .exceptions import BudgetExceeded, ConfigError, MemconfigError, Problem, SourceError
    from .expand import EXPANDERS, Expander
    from .format import TemplateFormatter
    from .load import FsspecLoader
    from .model import (
        Block,
        Failure,
        LoadRequest,
        LoadResult,
        Render,
        RenderCounts,
        Section,
        SkipReason,
        Snapshot,
        SourceRecord,
        Status,
    )
    from .pipeline import Pipeline
    from .registry import LOADERS, PROCESSORS, register
    from .sources import Source
    from .stages import Appender, Formatter, Loader, Processor, StateCache
    from .version import __version__

__all__ = [
    "APPENDERS",
    "EXPANDERS",
    "LOADERS",
    "PROCESSORS",
    "Appender",
    "Block",
    "BudgetExceeded",
    "Config",
    "ConfigError",
    "Expander",
    "Failure",
    "Formatter",
    "FsspecLoader",
    "LoadRequest",
    "LoadResult",
    "Loader",
    "MemconfigError",
    "Pipeline",
    "PolicyCache",
    "Problem",
    "Processor",
    "Render",
    "RenderCounts",
    "Section",
    "SkipReason",
    "Snapshot",
    "Source",
    "SourceError",
    "SourceRecord",
    "StateCache",
    "Status",
    "TemplateFormatter",
    "TextAppender",
    "__version__",
    "load_config",
    "register",
]

#: Each public name: the module of this package that defines it (``__version__``: read from the installed metadata).
_MODULES = {
    "APPENDERS": "append",
    "TextAppender": "append",
    "PolicyCache": "cache",
    "Config": "config",
    "load_config": "config",
    **dict.fromkeys(("BudgetExceeded", "ConfigError", "MemconfigError", "Problem", "SourceError"), "exceptions"),
    "EXPANDERS": "expand",
    "Expander": "expand",
    "TemplateFormatter": "format",
    "FsspecLoader": "load",
    **dict.fromkeys(
        (
            "Block",
            "Failure",
            "LoadRequest",
            "LoadResult",
            "Render",
            "RenderCounts",
            "Section",
            "SkipReason",
            "Snapshot",
            "SourceRecord",
            "Status",
        ),
        "model",
    ),
    "Pipeline": "pipeline",
    **dict.fromkeys(("LOADERS", "PROCESSORS", "register"), "registry"),
    "Source": "sources",
    **dict.fromkeys(("Appender", "Formatter", "Loader", "Processor", "StateCache"), "stages"),
    "__version__": "version",
}

if not TYPE_CHECKING:  # the type checker reads the imports above
    __getattr__, __dir__ = lazy_names(__name__, _MODULES)
