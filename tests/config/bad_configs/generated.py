"""The bad configs too large or too odd to commit: each written into a folder when a test (or the benchmark) runs.

Shared by ``tests/config/test_bad_configs.py`` and ``benchmarks/bad_configs.py``.
Each case gives the file's bytes (or makes the path itself, for a folder),
the fragment its error must contain, and where the error must point: ``-``
(the file itself), ``L:C`` (some line and column) or an exact key path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

MiB = 1 << 20


class Generated(NamedTuple):
    """One generated bad config."""

    name: str
    make: Callable[[Path], None]
    """Writes the config at the path it is given."""
    expect: str
    where: str
    heavy: bool = False
    """Also run in a child process whose peak memory is measured."""


def _write(data: bytes | str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    return make


def _fifty_megabytes(path: Path) -> None:
    line = b"  - rules/AGENTS.md\n"
    with path.open("wb") as file:
        file.write(b"version: 1\nsources:\n")
        chunk = line * (MiB // len(line))
        for _ in range(50):
            file.write(chunk)


def _billion_laughs() -> str:
    lines = ['lol0: &lol0 "lol"']
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "version: 1\nstorage:\n  s3:\n" + "".join(f"    {line}\n" for line in lines)


def _doubling_anchors() -> str:
    lines = ["a0: &a0 {anon: true}"] + [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 64)]
    return "version: 1\nstorage:\n  s3:\n" + "".join(f"    {line}\n" for line in lines)


def _doubling_merges() -> str:
    lines = ["m0: &m0 {anon: true}"] + [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}" for i in range(1, 64)]
    return "version: 1\nstorage:\n  s3:\n" + "".join(f"    {line}\n" for line in lines)


def _text_bomb() -> str:
    return f'version: 1\nformatter:\n  empty: &big "{"x" * 500_000}"\n  separator: [{", ".join(["*big"] * 40)}]\n'


def _deep_block_mappings() -> str:
    return "version: 1\nstorage:\n" + "".join(" " * (i + 1) + "k:\n" for i in range(1_000)) + " " * 1_001 + "x\n"


def _directory(path: Path) -> None:
    path.mkdir()


CASES = [
    Generated(
        "fifty-megabytes",
        _fifty_megabytes,
        "larger than the limit of 1 MiB (memconfig.config.MAX_CONFIG_BYTES)",
        "-",
        True,
    ),
    Generated(
        "one-byte-over-the-limit",
        _write(b"version: 1\n" + b"#" * (MiB - 11) + b"\n"),
        "larger than the limit of 1 MiB (memconfig.config.MAX_CONFIG_BYTES)",
        "-",
    ),
    Generated("billion-laughs", _write(_billion_laughs()), "memconfig.config.MAX_CONFIG_NODES", "L:C", True),
    Generated("doubling-anchors", _write(_doubling_anchors()), "memconfig.config.MAX_CONFIG_NODES", "L:C", True),
    Generated("doubling-merge-keys", _write(_doubling_merges()), "memconfig.config.MAX_CONFIG_NODES", "L:C", True),
    Generated("text-bomb", _write(_text_bomb()), "memconfig.config.MAX_CONFIG_TEXT", "L:C", True),
    Generated(
        "flat-list-of-200k",
        _write("version: 1\nsources: [" + "a," * 200_000 + "a]\n"),
        "memconfig.config.MAX_CONFIG_NODES",
        "L:C",
        True,
    ),
    Generated(
        "flow-nesting-10k",
        _write("version: 1\nsources: " + "[" * 10_000 + "]" * 10_000 + "\n"),
        "nested deeper than the limit of 64 levels (memconfig.config.MAX_CONFIG_DEPTH)",
        "L:C",
        True,
    ),
    Generated(
        "flow-mapping-nesting-10k",
        _write("version: 1\nstorage: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n"),
        "nested deeper than the limit of 64 levels (memconfig.config.MAX_CONFIG_DEPTH)",
        "L:C",
        True,
    ),
    Generated(
        "block-nesting-10k",
        _write("version: 1\nsources:\n" + "- " * 10_000 + "a.md\n"),
        "nested deeper than the limit of 64 levels (memconfig.config.MAX_CONFIG_DEPTH)",
        "L:C",
        True,
    ),
    Generated(
        "block-mapping-nesting-1k",
        _write(_deep_block_mappings()),
        "nested deeper than the limit of 64 levels (memconfig.config.MAX_CONFIG_DEPTH)",
        "L:C",
        True,
    ),
    Generated("a-directory", _directory, "is a directory", "-"),
    Generated(
        "latin-1",
        _write(b"version: 1\n# caf\xe9\n"),
        "is not UTF-8 text (invalid continuation byte at line 2, column 6, byte 16)",
        "-",
    ),
    Generated("utf-16", _write("version: 1\n".encode("utf-16")), "is not UTF-8 text", "-"),
    Generated(
        "control-character", _write(b"version: 1\nsources: [a\x07.md]\n"), "character U+0007 is not allowed", "2:12"
    ),
    Generated("nul-byte", _write(b"version: 1\x00\n"), "character U+0000 is not allowed", "1:11"),
    Generated(
        "long-unknown-key",
        _write("version: 1\n? " + "k" * 900_000 + "\n: 1\n"),
        "characters, cut) … kkkk",
        "-",
    ),
    Generated(
        "extends-ring-of-1000",
        _write(
            "version: 1\nformatter: {preset: p0}\npresets:\n"
            + "".join(f"  p{i}: {{extends: p{(i + 1) % 1000}}}\n" for i in range(1000))
        ),
        "extends a chain of more than 32 presets (memconfig.limits.MAX_PRESET_DEPTH): p0 → p1 → … → p31 → p32",
        "presets.p0.extends",
    ),
]

if os.path.exists("/dev/zero"):

    def _dev_zero(path: Path) -> None:
        path.symlink_to("/dev/zero")

    CASES.append(Generated("dev-zero", _dev_zero, "is a character device, not a regular file: not opened", "-", True))
