"""``${VAR}`` expanded over a whole config tree, each problem reported at its key path.

Kept apart from :mod:`memconfig.interpolation`, which expands one
string and is imported by :mod:`memconfig.sources`: this module walks the
config as plain data, so it also bounds its depth (a mapping built in Python
may nest without end, or hold itself).
"""

from __future__ import annotations

import re
from typing import Any

from ..exceptions import Problem
from ..interpolation import UnsetVariableError, expand_vars
from ..limits import MAX_CONFIG_DEPTH
from ..safe_yaml import Key
from ..shapes import is_mapping

__all__ = ["expand_tree"]

# Keys whose strings keep ${VAR} as written (they are expanded when used).
_KEEP_AS_WRITTEN = re.compile(r"^sources\[\d+\]\.(url|glob)$|^sources\[\d+\]$")


def expand_tree(value: Any, path: str, problems: list[Problem], depth: int = 0) -> Any:
    """*value* with ``${VAR}`` expanded in its strings; each problem is added to *problems* at its key path.

    An unset variable is named, secret or not: a variable's name is not a
    secret, its value is (and a value is never quoted). A malformed ``${`` is
    not quoted either, since it may be part of a password. A mapping key that
    is not a string (YAML reads an unquoted ``on`` as ``True`` and ``1`` as a
    number) is a problem, and is left out; so is anything nested deeper than
    :data:`~memconfig.limits.MAX_CONFIG_DEPTH`.
    """
    if isinstance(value, str):
        if _KEEP_AS_WRITTEN.match(path):
            return value
        try:
            return expand_vars(value)
        except (UnsetVariableError, ValueError) as exc:
            problems.append(Problem(path, str(exc)))
        return value
    if not isinstance(value, list) and not is_mapping(value):
        return value
    if depth >= MAX_CONFIG_DEPTH:
        where = path or "(top level)"
        problems.append(
            Problem(
                where, f"nested deeper than the limit of {MAX_CONFIG_DEPTH} levels (memconfig.config.MAX_CONFIG_DEPTH)"
            )
        )
        return None
    if isinstance(value, list):
        return [expand_tree(v, f"{path}[{i}]", problems, depth + 1) for i, v in enumerate(value)]
    out = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if isinstance(key, str):
            out[key] = expand_tree(item, where, problems, depth + 1)
        else:
            hint = f' (quote it: "{key.text}")' if isinstance(key, Key) and key.text else ""
            problems.append(Problem(where, f"keys must be strings{hint}"))
    return out
