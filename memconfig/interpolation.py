"""``${VAR}`` and ``${VAR:-default}`` in config strings, expanded from the environment.

Kept apart from :mod:`memconfig.config` because both the config (string
values) and the sources (URLs, expanded when the pipeline is built) use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple
from urllib.parse import quote

from .lazy import compiled_when_used

__all__ = ["Substitution", "UnsetVariableError", "expand_vars", "expand_vars_traced", "variable_names"]

# Compiled when a text first holds a "$" (most configs hold none), as the next one is.
_var_re = compiled_when_used(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{[^}]*\}?")
# What os.environ makes of bytes that are not UTF-8 (surrogateescape): such a value cannot be written anywhere.
_not_utf8 = compiled_when_used("[\udc80-\udcff]")
# The text of a malformed reference is never quoted: it may be part of a password that holds "${".
_MALFORMED = "malformed variable reference: write ${NAME} or ${NAME:-default}, and $$ for a literal $"


class UnsetVariableError(ValueError):
    """A ``${NAME}`` without a default names a variable that is not set.

    Attributes:
        name: the variable's name.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"environment variable ${{{name}}} is not set and has no default (write ${{{name}:-default}})")


class Substitution(NamedTuple):
    """One ``${NAME}`` (or ``${NAME:-default}``) that expansion replaced."""

    name: str
    """The variable's name."""
    value: str
    """What it was replaced by: the variable's value or the default."""
    start: int
    """Where the reference starts in the text as written."""
    end: int
    """Where it ends (exclusive) in the text as written."""


def expand_vars(text: str, environ: Mapping[str, str] | None = None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; ``$$`` is a literal ``$``.

    Raises:
        UnsetVariableError: a variable is unset and has no default.
        ValueError: a ``${`` is malformed.
    """
    return expand_vars_traced(text, environ)[0] if "$" in text else text


def expand_vars_traced(
    text: str, environ: Mapping[str, str] | None = None, *, quote_within: Sequence[tuple[int, int]] = ()
) -> tuple[str, list[Substitution]]:
    """:func:`expand_vars`, also giving each substitution made, so a caller can tell which values to keep secret.

    A value substituted inside one of the *quote_within* spans of *text* is
    percent-encoded (for URL user-info: a password holding ``@`` or ``/``
    must not turn into a host name).

    Raises:
        UnsetVariableError: a variable is unset and has no default.
        ValueError: a ``${`` is malformed, or a variable's value is not UTF-8.
    """
    if "$" not in text:
        return text, []
    env = os.environ if environ is None else environ
    made: list[Substitution] = []

    def substitute(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        name, default = match[1], match[2]
        if name is None:
            raise ValueError(_MALFORMED)
        value = env.get(name)
        if value is None or not (value or default is None):
            if default is None:
                raise UnsetVariableError(name)
            value = default
        elif _not_utf8().search(value):  # the value is never shown: it may be a secret
            raise ValueError(f"environment variable ${{{name}}} holds bytes that are not UTF-8")
        made.append(Substitution(name, value, match.start(), match.end()))
        if any(start <= match.start() and match.end() <= end for start, end in quote_within):
            return quote(value, safe=":")  # ":" still parts user from password
        return value

    return _var_re().sub(substitute, text), made


def variable_names(text: str) -> tuple[str, ...]:
    """The names of the variables *text* refers to (``${NAME}``, ``${NAME:-default}``), in order, each once.

    Nothing is looked up: a name says which variable to set, and is never a secret.
    """
    if "$" not in text:
        return ()
    return tuple(dict.fromkeys(match[1] for match in _var_re().finditer(text) if match[1] is not None))
