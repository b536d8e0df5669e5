"""A package's public names, each imported from the module that defines it when first asked for (PEP 562).

A package that re-exported its names at import would import every module
below it with the package: ``import memconfig`` would cost every stage, a
registry's string targets (``"memconfig.expand.glob:GlobExpander"``) would be
imported anyway through their package, and the command line could not pause
the collector before its command's imports (:func:`memconfig.cli.main.run`).
A package keeps its names in a closed table instead; the type checker reads
the same names from imports under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


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
