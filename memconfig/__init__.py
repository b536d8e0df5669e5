"""memconfig: a YAML-declared pipeline that builds an agent's memory prompt from files anywhere fsspec reaches."""

from importlib.metadata import PackageNotFoundError, version

from .appender import SystemPromptAppender
from .cache import PolicyCache
from .config import Config, load_config
from .exceptions import ConfigError, MemconfigError, Problem, SourceError
from .formatter import TemplateFormatter
from .loader import FsspecLoader
from .pipeline import Pipeline
from .sources import Source
from .stages import Appender, Block, Entry, Formatter, Loader, LoadRequest, LoadResult, Snapshot, StateCache

try:
    __version__ = version("memconfig")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Appender",
    "Block",
    "Config",
    "ConfigError",
    "Entry",
    "Formatter",
    "FsspecLoader",
    "LoadRequest",
    "LoadResult",
    "Loader",
    "MemconfigError",
    "Pipeline",
    "PolicyCache",
    "Problem",
    "Snapshot",
    "Source",
    "SourceError",
    "StateCache",
    "SystemPromptAppender",
    "TemplateFormatter",
    "__version__",
    "load_config",
]
