"""memconfig: a YAML-declared pipeline that builds an agent's memory prompt from files anywhere fsspec reaches."""

from importlib.metadata import PackageNotFoundError, version

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

try:
    __version__ = version("memconfig")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"

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
