"""Counting text for budgets: characters, an estimate of tokens, or exact tokens with tiktoken.

A budget asks a :class:`Counter` how big a text is, in its unit. The token
estimate needs nothing installed: **one token per 3 bytes of ASCII, plus one
per 2 bytes of any other UTF-8** (a CJK character, 3 bytes, counts 1.5),
rounded up. Measured against cl100k_base it counts 1.2-1.6x the real number on
English prose, Markdown and Python code, and 1.2-1.3x on Chinese, Japanese and
Korean text (see docs/budgets.md for the table): a budget in estimated tokens errs
on the side of a smaller block.

Exact counts use tiktoken (the ``tokens`` extra), with the
encoding's ranks read from a local file only: ``formatter.tokens.encoding_file``,
or tiktoken's own cache. Nothing is ever downloaded; an encoding that is not
on the machine is a :class:`~memconfig.ConfigError` when the pipeline is built,
saying how to provide it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import sys
import tempfile
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..exceptions import ConfigError, Problem
from ..file_kinds import not_openable
from ..install import install_hint
from ..limits import MAX_RANKS_BYTES

if TYPE_CHECKING:
    import tiktoken

    from ..config import Config
    from ..config.schema import TokensConfig

__all__ = ["CHARACTERS", "ESTIMATE", "Characters", "Counter", "TiktokenCount", "TokenEstimate", "token_counter"]

_WHERE = "formatter.tokens"


class Counter(Protocol):
    """How big a text is in one unit; *token* names the rule, so that a changed rule invalidates memoised blocks."""

    @property
    def unit(self) -> str:
        """``chars`` or ``tokens``: the unit's name in events and in the ``max_…`` keys."""
        ...

    @property
    def word(self) -> str:
        """The unit as a marker shows it (``characters``, ``tokens``)."""
        ...

    @property
    def token(self) -> str: ...

    def __call__(self, text: str) -> int: ...


class Characters:
    """Code points, as ``len`` counts them."""

    unit = "chars"
    word = "characters"
    token = "chars"

    def __call__(self, text: str) -> int:
        return len(text)

    def __repr__(self) -> str:
        return "Characters()"


class TokenEstimate:
    """A conservative token estimate: ``ceil(ascii_bytes / 3 + other_utf8_bytes / 2)``.

    Tokenizers give plain English about 4-5 bytes a token and CJK text about
    2.7; one rule with a divisor per kind of byte stays above both without
    doubling either. Lone surrogates count as the 3 bytes they would take.
    """

    unit = "tokens"
    word = "tokens"
    token = "estimate:ascii/3+other/2"

    def __call__(self, text: str) -> int:
        if text.isascii():
            return -(-len(text) // 3)
        size = len(text.encode("utf-8", "surrogatepass"))
        ascii_bytes = len(text.encode("ascii", "ignore"))
        return -(-(2 * ascii_bytes + 3 * (size - ascii_bytes)) // 6)

    def __repr__(self) -> str:
        return "TokenEstimate()"


class TiktokenCount:
    """Exact tokens of a tiktoken encoding; special-token text (``<|endoftext|>``) counts as the plain text it is."""

    unit = "tokens"
    word = "tokens"

    def __init__(self, encoding: tiktoken.Encoding, ranks_sha256: str) -> None:
        self.encoding = encoding
        self.token = f"tiktoken:{encoding.name}:{ranks_sha256}"
        self._encode = encoding.encode_ordinary

    def __call__(self, text: str) -> int:
        return len(self._encode(text))

    def __repr__(self) -> str:
        return f"TiktokenCount({self.encoding.name!r})"


CHARACTERS = Characters()
ESTIMATE = TokenEstimate()


def token_counter(config: Config) -> Counter:
    """The counter ``formatter.tokens`` asks for.

    Raises:
        ConfigError: at ``formatter.tokens``: tiktoken is not installed, the
            encoding is unknown, or its ranks are not on this machine.
    """
    tokens = config.formatter.tokens
    if tokens.count == "estimate":
        return ESTIMATE
    return _tiktoken_counter(tokens, config)


# -- tiktoken, offline ---------------------------------------------------------------------


class _NotHere(Exception):
    """The encoding's ranks are not on this machine (the message says where they were looked for)."""

    def __init__(self, message: str, blobpath: str = "") -> None:
        super().__init__(message)
        self.blobpath = blobpath


class _Unsupported(Exception):
    """The encoding's ranks come in a form memconfig does not read."""


def _tiktoken_counter(tokens: TokensConfig, config: Config) -> TiktokenCount:
    try:
        import tiktoken
        import tiktoken.registry
    except ImportError:
        raise _error("count", f"tiktoken is not installed: {install_hint('tokens')}", config) from None
    constructors = _constructors(tiktoken.registry)
    name = tokens.encoding
    if name not in constructors:
        known = ", ".join(sorted(constructors)) or "none"
        raise _error("encoding", f"tiktoken has no encoding {name!r} (it has: {known})", config)
    path = str(config.resolve_path(tokens.encoding_file)) if tokens.encoding_file is not None else None
    key = "encoding_file" if path is not None else ""
    read: list[bytes] = []
    try:
        spec = _offline(constructors[name], path, read)()
        encoding = tiktoken.Encoding(
            spec["name"],
            pat_str=spec["pat_str"],
            mergeable_ranks=spec["mergeable_ranks"],
            special_tokens=spec["special_tokens"],
        )
    except _Unsupported as exc:
        raise _error("encoding", f"{name!r} {exc}; choose another encoding", config) from None
    except _NotHere as exc:
        message = str(exc) if path is not None else _how_to_provide(name, exc)
        raise _error(key, message, config) from None
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        where = path if path is not None else f"tiktoken's cached {name}"
        raise _error(key, f"{where} cannot be used as the ranks of {name!r}: {exc}", config) from None
    return TiktokenCount(encoding, hashlib.sha256(b"".join(read)).hexdigest()[:16])


def _constructors(registry: types.ModuleType) -> dict[str, Callable[[], dict[str, Any]]]:
    """tiktoken's table of encoding constructors (its plugins'), found as ``tiktoken.get_encoding`` finds them."""
    if registry.ENCODING_CONSTRUCTORS is None:
        registry._find_constructors()
    return dict(registry.ENCODING_CONSTRUCTORS or {})


def _offline(
    constructor: Callable[[], dict[str, Any]], path: str | None, read: list[bytes]
) -> Callable[[], dict[str, Any]]:
    """*constructor* with its module's loading functions replaced by ones that read local files only.

    tiktoken's constructors load their ranks through ``load_tiktoken_bpe(url)``
    (which downloads on a cache miss). The copy made here runs the same code
    with module globals of its own: ``load_tiktoken_bpe`` reads *path*, or
    tiktoken's cache, and never the network; nothing process-wide is patched.
    """
    module = sys.modules[constructor.__module__]
    namespace: dict[str, Any] = dict(vars(module))

    def load_tiktoken_bpe(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = _read_local(blobpath, expected_hash, path)
        read.append(data)
        return _parse_ranks(data, path or blobpath)

    def data_gym_to_mergeable_bpe_ranks(*args: Any, **kwargs: Any) -> dict[bytes, int]:
        raise _Unsupported("is published as GPT-2 data-gym files, not as a .tiktoken ranks file memconfig can read")

    namespace["load_tiktoken_bpe"] = load_tiktoken_bpe
    namespace["data_gym_to_mergeable_bpe_ranks"] = data_gym_to_mergeable_bpe_ranks
    for key, value in vars(module).items():  # o200k_harmony calls o200k_base: it must get the copy too
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            namespace[key] = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__)
    return namespace[constructor.__name__]  # type: ignore[no-any-return]


def _read_local(blobpath: str, expected_hash: str | None, path: str | None) -> bytes:
    """The ranks file: *path* if given (taken as it is), else tiktoken's cached copy of *blobpath*."""
    if path is not None:
        try:
            return _read_ranks(path)
        except OSError as exc:
            raise _NotHere(f"{path} cannot be read ({exc.strerror or exc})") from None
    cache = tiktoken_cache_dir()
    if not cache:
        raise _NotHere("tiktoken's cache is turned off (TIKTOKEN_CACHE_DIR is empty)", blobpath)
    cached = os.path.join(cache, hashlib.sha1(blobpath.encode()).hexdigest())
    try:
        data = _read_ranks(cached, blobpath)
    except FileNotFoundError:
        raise _NotHere(f"it is not in tiktoken's cache ({cached} does not exist)", blobpath) from None
    except OSError as exc:
        raise _NotHere(f"{cached} in tiktoken's cache cannot be read ({exc.strerror or exc})", blobpath) from None
    if expected_hash is not None and hashlib.sha256(data).hexdigest() != expected_hash:
        raise _NotHere(f"the copy in tiktoken's cache ({cached}) does not match tiktoken's published hash", blobpath)
    return data


def _read_ranks(path: str, blobpath: str = "") -> bytes:
    """*path*'s bytes (a copy of *blobpath*), at most :data:`~memconfig.limits.MAX_RANKS_BYTES`: a FIFO or a
    device is not opened.

    Raises:
        _NotHere: it is not a regular file, or it is over the limit.
        OSError: it cannot be read.
    """
    refused = not_openable(path)
    if refused is not None:
        raise _NotHere(f"{path} {refused}", blobpath)
    with open(path, "rb") as handle:
        data = handle.read(MAX_RANKS_BYTES + 1)
    if len(data) > MAX_RANKS_BYTES:
        raise _NotHere(
            f"{path} is larger than the limit of {MAX_RANKS_BYTES} bytes (memconfig.limits.MAX_RANKS_BYTES)", blobpath
        )
    return data


def tiktoken_cache_dir() -> str:
    """Where tiktoken keeps downloaded encodings: ``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR``, or its temp folder."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _parse_ranks(data: bytes, where: str) -> dict[bytes, int]:
    """A ``.tiktoken`` file: one ``<base64 token> <rank>`` per line."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise ValueError(f"line {number} is not '<base64 token> <rank>'") from None
    if not ranks:
        raise ValueError("it holds no ranks")
    return ranks


def _how_to_provide(name: str, missing: _NotHere) -> str:
    cache = tiktoken_cache_dir() or "a folder of your choice"
    source = f" ({missing.blobpath})" if missing.blobpath else ""
    return (
        f"the tiktoken encoding {name!r} is not on this machine: {missing}; memconfig never downloads it.\n"
        f"  Either set formatter.tokens.encoding_file to a local copy of its ranks file{source},\n"
        f"  or fill tiktoken's cache ({cache}; TIKTOKEN_CACHE_DIR chooses it) once, on a machine with network"
        f" access:\n  TIKTOKEN_CACHE_DIR={cache} python -c \"import tiktoken; tiktoken.get_encoding('{name}')\""
    )


def _error(key: str, message: str, config: Config) -> ConfigError:
    return ConfigError([Problem(f"{_WHERE}.{key}" if key else _WHERE, message)], file=config.file)
