"""Imports: ``@path`` tokens in a file's text stand for other files, inlined in their place.

Claude Code and Gemini CLI both expand ``@path`` in their instruction files;
this module holds the rules that say which tokens are imports and what the
text becomes, as pure functions over text. Reading the imported files is the
cache's pass (:mod:`memconfig.cache.imports`): each one is a child source of
its importer, cached, revalidated and confined like any other.

**Which ``@`` is a token.** An ``@`` at the start of the text or after
whitespace, outside code: fenced blocks (a line of three or more backticks or
tildes, closed by a line of at least as many of the same character; an
unclosed fence runs to the end), code spans (a run of backticks closed by the
next run of the same length within the paragraph, CommonMark's rule; an
unmatched run is text) and HTML comments (``<!-- … -->``: a commented-out
import stays out). The token runs to the next whitespace; trailing ``, ; : !
) ] } > " '`` and a final ``.`` are sentence punctuation, not part of the path
(Claude Code takes them into the path and silently misses the file,
claude-code 86060). A trailing ``?`` marks the import optional.

**Which token is an import** (:func:`kind`). The path must start with ``.``,
``/`` or an ASCII letter (``~/`` too with ``allow_home``), so ``@1.md``,
``@_x`` and ``@@`` are text. Then it is an import when it

* starts with ``./``, ``../`` or ``/`` (or ``~/``): always, even if missing;
* has a file extension on its last segment (a dot, then a letter, then
  letters or digits: ``@AGENTS.md``, ``@docs/a.txt``; not ``@v1.2``);
* or, failing both, names a file that exists next to the importing file
  (``@README``).

A path with another ``@`` in it (``@user@host.org``), ``.`` and ``..`` are
text unless they start with ``./``, ``../`` or ``/``. So ``@scope/pkg`` and
``@user`` in prose stay text (unless such a file exists), and an e-mail
address is never a token (its ``@`` follows a letter). A URL
(``@https://…``) is an import that is refused.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from ..fences import closes, opens
from ..model.sources import ROOT_MARKERS, ImportSettings

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "END_MARKER",
    "FAILED_MARKER",
    "MAX_IMPORTS",
    "START_MARKER",
    "Token",
    "child_key",
    "find_tokens",
    "inline",
    "kind",
    "settings_for",
    "shown_path",
]

#: At most this many files are imported under one top file (all depths); past it, the rest stay text.
MAX_IMPORTS = 1000

#: Gemini CLI's markers (packages/core/src/utils/memoryImportProcessor.ts), byte for byte.
START_MARKER = "<!-- Imported from: {path} -->"
END_MARKER = "<!-- End of import from: {path} -->"
FAILED_MARKER = "<!-- Import failed: {path} - {reason} -->"


class Token(NamedTuple):
    """One ``@path`` in a text: ``text[start:end]`` is the token (``@`` and ``?`` included)."""

    start: int
    end: int
    path: str
    optional: bool


def child_key(importer: str, path: str) -> str:
    """The key of what *importer* imports as *path*: its parent's key, ``::@``, the path (pytest's node-id form)."""
    return f"{importer}::@{shown_path(path)}"


def shown_path(path: str) -> str:
    """*path* as written in a token, as a key, the log or a marker shows it: a URL's credentials masked."""
    if "://" not in path:
        return path
    from ..sources.redact import redact_url  # only a URL token pays for the import

    return redact_url(path)


# -- finding tokens -------------------------------------------------------------

_PUNCTUATION = frozenset(",;:!)]}>\"'")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_EXTENSION = re.compile(r"[^/]*[^./][^/]*\.[A-Za-z][A-Za-z0-9]*")  # a last segment with a name and an extension


def find_tokens(text: str, allow_home: bool = False) -> list[Token]:
    """Every ``@path`` token of *text* outside code and comments, in order (see the module for the rule)."""
    tokens: list[Token] = []
    if "@" not in text:
        return tokens
    starts, ends = _code_regions(text)
    at = text.find("@")
    size = len(text)
    while at >= 0:
        if at == 0 or text[at - 1].isspace():
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and at < ends[i]:  # inside code or a comment: on past it
                at = text.find("@", ends[i])
                continue
            end = at + 1
            while end < size and (not text[end].isspace() or (text[end] == " " and text[end - 1] == "\\")):
                end += 1  # a backslash-escaped space is part of the path (@Design\ Docs/x.md), as Claude Code reads
            token = _token(text, at, end, allow_home)
            if token is not None:
                tokens.append(token)
            at = text.find("@", end)
        else:
            at = text.find("@", at + 1)
    return tokens


def _token(text: str, at: int, end: int, allow_home: bool) -> Token | None:
    raw = _trimmed(text[at + 1 : end])
    optional = raw.endswith("?")
    if optional:
        raw = _trimmed(raw[:-1])
    if not raw:
        return None
    first = raw[0]
    if not (first in "./" or ("a" <= first <= "z") or ("A" <= first <= "Z") or (allow_home and raw[:2] == "~/")):
        return None
    return Token(at, at + 1 + len(raw) + optional, raw.replace("\\ ", " "), optional)


def _trimmed(path: str) -> str:
    """*path* without the sentence punctuation after it (a final ``.`` only after a name character)."""
    while path:
        last = path[-1]
        if last in _PUNCTUATION or (last == "." and len(path) > 1 and path[-2] not in "./"):
            path = path[:-1]
        else:
            break
    return path


def kind(path: str, allow_home: bool = False) -> Literal["url", "explicit", "named", "bare"] | None:
    """What *path* (a token's) is: a ``url`` (refused), an ``explicit`` or ``named`` import, a ``bare`` name
    (an import only if such a file exists), or ``None``: text."""
    if _URL.match(path):
        return "url"
    if path.startswith(("./", "../", "/")) or (allow_home and path.startswith("~/")):
        return "explicit"
    if "@" in path or path in (".", ".."):
        return None
    if _EXTENSION.fullmatch(path.rsplit("/", 1)[-1]):
        return "named"
    return "bare"


def _code_regions(text: str) -> tuple[list[int], list[int]]:
    """The spans of *text* where an ``@`` is not a token: fenced blocks, code spans, HTML comments; disjoint, sorted."""
    regions: list[tuple[int, int]] = []
    fence: tuple[str, int] | None = None  # (the fence, where its block starts)
    paragraph: int | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        start, position = position, position + len(line)
        body = line.rstrip("\r\n")
        if fence is not None:
            if closes(body, fence[0]):
                regions.append((fence[1], position))
                fence = None
            continue
        opened = opens(body)
        if opened is not None:
            if paragraph is not None:
                regions += _code_spans(text, paragraph, start)
                paragraph = None
            fence = (opened, start)
        elif not body.strip():
            if paragraph is not None:
                regions += _code_spans(text, paragraph, start)
                paragraph = None
        elif paragraph is None:
            paragraph = start
    if fence is not None:
        regions.append((fence[1], len(text)))
    elif paragraph is not None:
        regions += _code_spans(text, paragraph, len(text))
    regions += _comments(text, regions)
    regions.sort()
    starts: list[int] = []
    ends: list[int] = []
    for start, end in regions:
        if ends and start < ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """CommonMark code spans in ``text[start:end]`` (one paragraph): a run of n backticks up to the next run of n."""
    if "`" not in text[start:end]:
        return []
    runs: list[tuple[int, int]] = []  # (position, length)
    i = text.find("`", start, end)
    while i >= 0:
        j = i
        while j < end and text[j] == "`":
            j += 1
        runs.append((i, j - i))
        i = text.find("`", j, end)
    by_length: dict[int, list[int]] = {}
    for index, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(index)
    spans = []
    index = 0
    while index < len(runs):
        position, length = runs[index]
        slashes = 0
        while position - slashes - 1 >= start and text[position - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2:  # an escaped backtick is text; the rest of the run opens
            position, length = position + 1, length - 1
            if not length:
                index += 1
                continue
        same = by_length.get(length, [])
        k = bisect.bisect_right(same, index)
        if k < len(same):
            closer = runs[same[k]]
            spans.append((position, closer[0] + closer[1]))
            index = same[k] + 1
        else:
            index += 1
    return spans


def _comments(text: str, code: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """HTML comments outside code (a ``<!--`` inside a code span or fence starts none)."""
    found = []
    code = sorted(code)
    starts = [s for s, _ in code]
    at = text.find("<!--")
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and at < code[i][1]:
            at = text.find("<!--", code[i][1])
            continue
        close = text.find("-->", at + 4)
        end = len(text) if close < 0 else close + 3
        found.append((at, end))
        at = text.find("<!--", end)
    return found


# -- the text with its imports inlined ------------------------------------------


def inline(
    key: str,
    contents: Mapping[str, str],
    loaded: Callable[[str], bool],
    failed: Mapping[str, str],
    settings: ImportSettings,
) -> str:
    """The text of *key* with each import replaced by the imported file's text, recursively.

    Args:
        contents: every source's text, by key.
        loaded: whether an import's key is in the prompt.
        failed: why an import is not (its ``source_skipped`` reason), by key; a token
            whose key is in neither is not an import and stays text.

    A file is inlined at its first token only; a later token naming it stays text.
    What is inlined loses its leading byte order mark and its trailing whitespace (a
    file's last newline would otherwise break the line it is imported into).
    """
    text = contents[key]
    tokens = find_tokens(text, settings.allow_home)
    if not tokens:
        return text
    comments = settings.markers == "comments"
    parts: list[str] = []
    last = 0
    used: set[str] = set()
    for token in tokens:
        child = child_key(key, token.path)
        if child in used:
            continue
        if loaded(child):
            inner = inline(child, contents, loaded, failed, settings)
            inner = inner.removeprefix("\ufeff").rstrip()
            if comments:
                shown = _shown(token.path)
                inner = f"{START_MARKER.format(path=shown)}\n{inner}\n{END_MARKER.format(path=shown)}"
        elif child in failed:
            if not comments:
                used.add(child)
                continue  # the token stays as it is written
            inner = FAILED_MARKER.format(path=_shown(token.path), reason=failed[child])
        else:
            continue
        used.add(child)
        parts += (text[last : token.start], inner)
        last = token.end
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def _shown(path: str) -> str:
    """*path* as a marker shows it: a ``-->`` in it would end the comment early."""
    return shown_path(path).replace("-->", "--&gt;")


def settings_for(config: Config) -> list[ImportSettings | None]:
    """Each configured source's import settings (``None``: off): its own ``imports`` over the config's, by field.

    A discovery's files find their project root by the discovery's ``root_markers``, as its walk did.
    """
    top = config.imports
    chosen: list[ImportSettings | None] = []
    for item in config.sources:
        own = item.imports
        if own is None:
            merged = top
        elif top is None:
            merged = own
        else:
            merged = top.model_copy(update={name: getattr(own, name) for name in own.model_fields_set})
        if merged is None or not merged.enabled:
            chosen.append(None)
        else:
            roots = ROOT_MARKERS if item.discover is None else tuple(item.discover.root_markers)
            chosen.append(ImportSettings(merged.max_depth, merged.markers, merged.allow_home, roots))
    return chosen
