"""``${VAR}`` and ``${VAR:-default}`` in config strings, expanded from the environment.

Kept apart from :mod:`memconfig.config` because both the config (string
values) and the sources (URLs, expanded when the pipeline is built) use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["UnsetVariableError", "expand_vars"]

_VAR_RE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{[^}]*\}?")


class UnsetVariableError(ValueError):
    """A ``${NAME}`` without a default names a variable that is not set.

    Attributes:
        name: the variable's name.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"environment variable ${{{name}}} is not set and has no default (write ${{{name}:-default}})")


def expand_vars(text: str, environ: Mapping[str, str] | None = None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; ``$$`` is a literal ``$``.

    Raises:
        UnsetVariableError: a variable is unset and has no default.
        ValueError: a ``${`` is malformed.
    """
    if "$" not in text:
        return text
    env = os.environ if environ is None else environ

    def substitute(match: re.Match[str]) -> str:
        whole = match[0]
        if whole == "$$":
            return "$"
        name, default = match[1], match[2]
        if name is None:
            raise ValueError(f"malformed variable reference {whole!r}; use ${{NAME}} or ${{NAME:-default}}")
        value = env.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        raise UnsetVariableError(name)

    return _VAR_RE.sub(substitute, text)
