"""pydantic and pydantic-settings errors turned into :class:`~memconfig.exceptions.Problem`, each at its key path.

Kept apart from the schema: the models say what a valid config is, this
says how an invalid one is reported (``sources[0].url``, ``unknown key``,
and the ``MEMCONFIG_*`` variable behind a bad value).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic_settings import SettingsError

from ..exceptions import Problem

__all__ = ["problem_from_pydantic", "problem_from_settings"]


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def problem_from_pydantic(err: Mapping[str, Any]) -> Problem:
    """One entry of ``ValidationError.errors()`` at its key path (``sources[0].url``), in plain words."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "union["))))
    message = str(err["msg"])
    message = message.removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    elif err["type"] == "missing":
        message = "required key is missing"
    elif err["type"] in ("model_type", "dict_type"):
        message = "must be a mapping"
    else:
        message = message.replace("Input should be", "must be")
    return Problem(_format_loc(loc), message + _env_hint(loc))


def problem_from_settings(exc: SettingsError) -> Problem:
    """A ``MEMCONFIG_*`` variable pydantic-settings could not parse, named with its field."""
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return Problem("(environment)", str(exc))
    name = f"MEMCONFIG_{found[1].upper()}"
    return Problem(found[1], f"environment variable {name} is not valid JSON (lists and mappings must be JSON)")


def _env_hint(loc: tuple[int | str, ...]) -> str:
    """Name the ``MEMCONFIG_*`` variable behind a bad value, since the YAML may not even mention it."""
    names = [str(p) for p in loc]
    set_names = {k.upper() for k in os.environ if k.upper().startswith("MEMCONFIG_")}
    for end in range(len(names), 0, -1):
        if not all(n.isidentifier() for n in names[:end]):
            continue
        name = "MEMCONFIG_" + "__".join(names[:end]).upper()
        if name in set_names:
            return f" (set by environment variable {name})"
    return ""
