"""What memconfig makes only when first asked for: a package's public names (PEP 562), a regular expression.

A package that re-exported its names at import would import every module
below it with the package: ``import memconfig`` would cost every stage, a
registry's string targets (``"memconfig.expand.glob:GlobExpander"``) would be
imported anyway through their package, and the command line could not pause
the collector before its command's imports (:func:`memconfig.cli.main.run`).
A package keeps its names in a closed table instead; the type checker reads
the same names from imports under ``TYPE_CHECKING``.

A pattern that only some inputs need (a URL with user-info, a ``${VAR}``) is
compiled when first used: compiling is the expensive part of a pattern, and a
start that compiled them all would pay for every one (see benchmarks/startup.py).
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["compiled_when_used", "lazy_names"]


def lazy_names(package: str, modules: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for *package*, whose names *modules* maps to the module (of the package)
    that defines each.

    A name is imported once: the first lookup stores it in the package, where the next finds it.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *modules})

    return __getattr__, __dir__


def compiled_when_used(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """*pattern*, compiled the first time the function returned is called, and kept: ``_found().search(text)``."""
    return functools.cache(functools.partial(re.compile, pattern, flags))
