"""The YAML config: its schema, reading, ``${VAR}`` expansion and the checks that need the disk."""

from .interpolation import expand_vars
from .schema import (
    AppenderConfig,
    CacheConfig,
    Config,
    FormatterConfig,
    LoaderConfig,
    LoggingConfig,
    SourceConfig,
    load_config,
)

__all__ = [
    "AppenderConfig",
    "CacheConfig",
    "Config",
    "FormatterConfig",
    "LoaderConfig",
    "LoggingConfig",
    "SourceConfig",
    "expand_vars",
    "load_config",
]
