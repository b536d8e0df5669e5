"""What XML 1.0 calls a name, as regular-expression character classes: what the layout reader and escaper agree on.

A tag's name starts with a ``NameStartChar`` (a letter of any script, ``_``,
``:``) and goes on with ``NameChar`` (those, digits, ``-``, ``.``, combining
marks), so ``<ébauche>`` is an element as ``<notes>`` is. The escaper uses
:data:`NAME_CONTINUES` to tell ``</agent_memory>`` from ``</agent_memory_x>``;
it leaves out the invisible joiners XML allows in names (U+200C, U+200D), so a
name followed by one still reads, and is escaped, as the closing tag it looks like.
"""

from __future__ import annotations

__all__ = ["NAME_CHAR", "NAME_CONTINUES", "NAME_START"]

NAME_START = (
    ":A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
NAME_CHAR = NAME_START + r"\-.0-9\u00b7\u0300-\u036f\u203f-\u2040"
NAME_CONTINUES = NAME_CHAR.replace("\u200c-\u200d", "")
