"""YAML as memconfig reads it: plain data only, a repeated key is an error, and a syntax error is one line.

Kept apart because two files are YAML: the config itself
(:mod:`memconfig.config.loading`) and the ``credentials_file``
(:mod:`memconfig.config.checks`). It needs nothing of the config.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

import yaml

__all__ = ["Key", "safe_load", "yaml_message"]


class Key(NamedTuple):
    """A mapping key YAML did not read as a string, and its text as written (``on`` for ``True``)."""

    value: Any
    text: str

    def __str__(self) -> str:
        return str(self.value)


class _SafeLoader(yaml.SafeLoader):
    """``yaml.safe_load``, except that a key given twice in one mapping is an error, not a silent override.

    A key that is not a string comes back as a :class:`Key`, so that the
    problem reported for it can show the key as written.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        texts: dict[Any, str] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
                if not isinstance(key, str) and isinstance(key_node, yaml.ScalarNode):
                    texts[key] = key_node.value
        mapping = super().construct_mapping(node, deep)
        if not texts:
            return mapping
        return {Key(k, texts[k]) if not isinstance(k, str) and k in texts else k: v for k, v in mapping.items()}


def safe_load(text: str) -> Any:
    """Parse *text* as :func:`yaml.safe_load` does, but reject a key repeated in one mapping.

    Raises:
        yaml.YAMLError: *text* is not valid YAML, or repeats a key.
    """
    return yaml.load(text, Loader=_SafeLoader)  # a SafeLoader subclass: plain data only


def yaml_message(file: str, exc: yaml.YAMLError) -> str:
    """*exc* as one line, ``file:line:column: YAML syntax error: …`` when YAML gave a position."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = f"{problem} ({context})" if context else str(problem)
    if mark is not None:
        return f"{file}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: {text}"
    return f"{file}: YAML syntax error: {text}"
