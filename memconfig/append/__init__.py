"""The appender stage: a closed, read-only table of the shapes a render can be given in.

Names map to where the appender lives and which extra brings what it needs;
each is imported on first use, so a missing optional dependency costs nothing
until its shape is asked for, and then says what to install (as fsspec's
protocol registry does). A config can only name an entry of the table, never
an import path.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ..exceptions import ConfigError
from .anthropic import AnthropicAppender
from .json import JSONAppender
from .openai import OpenAIAppender
from .text import TextAppender

if TYPE_CHECKING:
    from ..config import Config
    from ..stages import Appender

__all__ = [
    "APPENDERS",
    "AnthropicAppender",
    "AppenderEntry",
    "JSONAppender",
    "OpenAIAppender",
    "TextAppender",
    "appender_for",
]


class AppenderEntry(NamedTuple):
    """Where an appender lives (``module:Class``, built with ``from_config``) and the extra it needs.

    Attributes:
        printable: ``memconfig render --format NAME`` can print it (the class has
            ``output(system, render)``: a ``str`` printed as it is, else data printed as JSON).
        honours: the ``appender`` settings this shape uses; setting another to
            something other than its default is a config error at its key path
            (``None``: no check).
    """

    target: str
    extra: str | None = None
    printable: bool = False
    honours: frozenset[str] | None = None


APPENDERS: Mapping[str, AppenderEntry] = MappingProxyType(
    {
        "text": AppenderEntry(
            "memconfig.append.text:TextAppender", printable=True, honours=frozenset({"separator", "position"})
        ),
        "json": AppenderEntry("memconfig.append.json:JSONAppender", printable=True, honours=frozenset()),
        "openai": AppenderEntry(
            "memconfig.append.openai:OpenAIAppender",
            printable=True,
            honours=frozenset({"separator", "position", "placement", "role"}),
        ),
        "anthropic": AppenderEntry(
            "memconfig.append.anthropic:AnthropicAppender",
            printable=True,
            honours=frozenset({"position", "placement", "cache_control"}),
        ),
        "langchain": AppenderEntry(
            "memconfig.append.langchain:LangchainAppender",
            "langchain",
            honours=frozenset({"separator", "position", "placement", "cache_control"}),
        ),
    }
)


def appender_for(name: str, config: Config) -> Appender:
    """The appender called *name*, built for *config*.

    Raises:
        ConfigError: *name* is not in the table (the message lists the choices),
            or what it needs is not installed (the message names the extra).
    """
    entry = APPENDERS.get(name)
    if entry is None:
        choices = ", ".join(sorted(APPENDERS))
        raise ConfigError(f"unknown output format {name!r}; choose one of: {choices}")
    module_name, _, attribute = entry.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f"pip install 'memconfig[{entry.extra}]'" if entry.extra else str(exc)
        raise ConfigError(f"output format {name!r} needs a package that is not installed ({hint})") from None
    built: Appender = getattr(module, attribute).from_config(config)
    return built
