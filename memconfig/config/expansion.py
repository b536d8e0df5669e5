"""``${VAR}`` expanded over a whole config tree, each problem reported at its key path.

Kept apart from :mod:`memconfig.config.interpolation`, which expands one
string and is imported by :mod:`memconfig.sources`: this module needs
:mod:`memconfig.sources.redact` (to keep secrets out of its messages), and
putting it there would make the two packages import each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..exceptions import Problem
from ..sources.redact import is_secret_key
from .interpolation import UnsetVariableError, expand_vars
from .safe_yaml import Key

__all__ = ["expand_tree"]

# Keys whose strings keep ${VAR} as written (they are expanded when used).
_KEEP_AS_WRITTEN = re.compile(r"^sources\[\d+\]\.(url|glob)$|^sources\[\d+\]$")
# Where storage options sit: there, a value under a secret-looking name is a secret.
_OPTIONS = re.compile(r"^(storage|sources\[\d+\]\.storage_options)\.")
_UNSET_IN_SECRET = (
    "references an environment variable that is not set (its name is not shown, as it may be part of the secret;"
    " write ${NAME:-default}, or $$ for a literal $)"
)


def expand_tree(value: Any, path: str, problems: list[Problem], secret: bool = False) -> Any:
    """*value* with ``${VAR}`` expanded in its strings; each problem is added to *problems* at its key path.

    A mapping key that is not a string (YAML reads an unquoted ``on`` as
    ``True`` and ``1`` as a number) is a problem, and is left out. Under a
    secret (*secret*, or a storage option with a secret-looking name) a problem
    never quotes the value, nor a variable name that may be part of it.
    """
    if isinstance(value, str):
        if _KEEP_AS_WRITTEN.match(path):
            return value
        try:
            return expand_vars(value)
        except UnsetVariableError as exc:
            named = not secret or value.strip() == f"${{{exc.name}}}"
            problems.append(Problem(path, str(exc) if named else _UNSET_IN_SECRET))
        except ValueError as exc:
            problems.append(Problem(path, str(exc)))
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                below = secret or (is_secret_key(key) and _OPTIONS.match(where) is not None)
                out[key] = expand_tree(item, where, problems, below)
            else:
                hint = f' (quote it: "{key.text}")' if isinstance(key, Key) and key.text else ""
                problems.append(Problem(where, f"keys must be strings{hint}"))
        return out
    if isinstance(value, list):
        return [expand_tree(v, f"{path}[{i}]", problems, secret) for i, v in enumerate(value)]
    return value
