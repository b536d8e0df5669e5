"""The YAML config: its schema, reading, ``${VAR}`` expansion and the checks that need the disk.

Loading goes: read the file, parse YAML (:mod:`~memconfig.safe_yaml`: ``yaml.safe_load``
that rejects a repeated key), expand ``${VAR}`` / ``${VAR:-default}`` in string
values (:mod:`.expansion`), validate with pydantic-settings (:mod:`.schema`;
``MEMCONFIG_*`` environment variables override the file, nested with ``__``),
then check what needs the disk (:mod:`.checks`: template and credentials files,
installed protocols) and repeated sources. Those checks run even when
validation failed, so every problem found is reported at once, each with its
key path (:mod:`.problems`). :mod:`.loading` ties it together as
:func:`load_config` (and :func:`load_config_stream`, for standard input).
Every step is bounded (:mod:`.limits`): size, nesting depth, and how far
YAML aliases may expand.
"""

from ..interpolation import expand_vars
from ..limits import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, MAX_CONFIG_NODES, MAX_CONFIG_TEXT
from .loading import load_config, load_config_stream
from .schema import (
    AppenderConfig,
    CacheConfig,
    Config,
    FormatterConfig,
    LoaderConfig,
    LoggingConfig,
    SourceConfig,
    printed_as,
)

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "MAX_CONFIG_TEXT",
    "AppenderConfig",
    "CacheConfig",
    "Config",
    "FormatterConfig",
    "LoaderConfig",
    "LoggingConfig",
    "SourceConfig",
    "expand_vars",
    "load_config",
    "load_config_stream",
    "printed_as",
]
