"""The appender stage: the shapes a render can be given in, by name, from the open appender registry.

Names map to where the appender lives and which extra brings what it needs
(:data:`memconfig.registry.APPENDERS`: memconfig's own and a plugin's alike);
each is imported on first use, so a missing optional dependency costs nothing
until its shape is asked for, and then says what to install (as fsspec's
protocol registry does). A config can only name a registered appender, never
an import path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names
from ..registry import APPENDERS, AppenderEntry, appenders
from .text import TextAppender

if TYPE_CHECKING:
    from ..config import Config
    from ..stages import Appender
    from .anthropic import AnthropicAppender
    from .json import JSONAppender
    from .openai import OpenAIAppender

__all__ = [
    "APPENDERS",
    "AnthropicAppender",
    "AppenderEntry",
    "JSONAppender",
    "OpenAIAppender",
    "TextAppender",
    "appender_for",
    "printable",
]


def appender_for(name: str, config: Config) -> Appender:
    """The appender called *name*, built from *config*'s ``appender`` settings.

    Raises:
        ConfigError: *name* is not registered (the message lists the choices),
            or what it needs is not installed (the message names the extra).
    """
    built: Appender = appenders.load(name).from_config(config.appender)
    return built


def printable(name: str) -> bool:
    """Whether ``memconfig render`` can print the shape *name*: its entry says so, or (a plugin's) its class has
    ``output``."""
    entry = appenders.get(name)
    if entry is None:
        return False
    if entry.printable is not None:
        return entry.printable
    return callable(getattr(appenders.load(name), "output", None))


#: The other shapes' classes, imported when first asked for (the registry imports each when a render first asks
#: for its shape); the text appender, every render's default, is imported with the package.
_MODULES = {"AnthropicAppender": "anthropic", "JSONAppender": "json", "OpenAIAppender": "openai"}

if not TYPE_CHECKING:  # the type checker reads the imports above
    __getattr__, __dir__ = lazy_names(__name__, _MODULES)
