"""How much config memconfig reads: bounds that make a hostile or broken config fail fast, in little memory.

A config often comes from a repository someone else controls, and it is read
on the path of every model call: 50 MB of text, a "billion laughs" alias bomb
or ten thousand nested brackets must be refused in well under a second, not
hang or end in a ``RecursionError``. Each bound is far above what a real
config needs, and each error message names the constant that set it.
"""

from __future__ import annotations

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "MAX_CONFIG_TEXT",
    "MAX_ERROR_LINE",
    "MAX_HELD_CHARS",
    "MAX_PRESET_DEPTH",
    "MAX_RANKS_BYTES",
]

#: The largest config (or ``credentials_file``, or ``formatter.template_file``) read, in bytes.
#: No more than this + 1 bytes is ever read, so even ``/dev/zero`` is refused at once.
MAX_CONFIG_BYTES = 1 << 20

#: How deeply mappings and lists may nest (a real config nests fewer than ten levels).
MAX_CONFIG_DEPTH = 64

#: How many values (scalars, lists, mappings) a config may hold once YAML aliases are expanded.
#: Anchors and aliases stay usable for sharing storage options; an alias bomb is refused while it is read.
MAX_CONFIG_NODES = 100_000

#: How many characters a config's strings may hold in all once YAML aliases are expanded.
MAX_CONFIG_TEXT = 8 << 20

#: How many presets a chain of ``extends`` may hold (a real config extends two or three).
MAX_PRESET_DEPTH = 32

#: The largest tiktoken ranks file read (``formatter.tokens.encoding_file``, or tiktoken's cached copy), in bytes.
#: o200k_base's is 3.6 MB; no more than this + 1 bytes is ever read.
MAX_RANKS_BYTES = 32 << 20

#: The longest line of an error message, in characters: a longer one is cut in its middle, its length said.
MAX_ERROR_LINE = 500

#: The characters of text a pipeline keeps besides its sources' texts and its last block, in each of its memos:
#: earlier blocks (for states that differ), and the formatter's trimmed copies of texts (for the next turn).
#: Past it, a memo keeps less and makes it again when needed, so a large prompt is not held twice or eight times.
MAX_HELD_CHARS = 1 << 22
