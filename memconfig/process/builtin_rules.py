"""The built-in rules' names, in the order they run: a leaf, so a config can be checked against them.

The processor chain (:mod:`memconfig.process.chain`) keeps its order by these
names; the config's schema checks a processor's ``before:`` / ``after:`` and a
layout's ``disable:`` against them without importing the chain.
"""

from __future__ import annotations

from ..suggest import did_you_mean

__all__ = ["BUILT_IN", "unknown_rule"]

BUILT_IN: tuple[str, ...] = ("rules", "bom", "frontmatter", "html_comments", "escaping", "budgets")
"""The built-in rules' names, in the order they run.

``rules`` first: it reads the frontmatter that ``frontmatter`` strips;
``budgets`` last: they weigh what goes into the block. A config has only the
ones it asks for; a name here is a place in the order either way.
"""


def unknown_rule(name: object) -> str:
    """The message for a name that is no built-in rule: it lists the rules, in order."""
    hint = did_you_mean(name, BUILT_IN) if isinstance(name, str) else ""
    return f"{name!r} is no built-in rule{hint}; the rules are {', '.join(BUILT_IN)}"
