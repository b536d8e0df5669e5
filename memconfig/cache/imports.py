"""The imports of a pass: files that ``@path`` tokens name become child sources, read in the same pass.

After the declared sources are read, each file that follows imports is
scanned (:mod:`memconfig.expand.imports`); the files it imports are read
together, one loader call per depth, and scanned in turn until none is left.
An import that must not be read (a URL, a cycle, the depth limit, a file
outside the project root) is a skipped result of its own, with its reason,
and is logged as any other skip. Each group ends up in prompt order: a file,
then what it imports, depth first.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import fsspec

from ..expand.discover import project_root
from ..expand.imports import MAX_IMPORTS, child_key, find_tokens, kind, shown_path
from ..model import ImportRef, LoadRequest, LoadResult, SkipReason, Status
from .merge import STALE_REASONS as STALE

if TYPE_CHECKING:
    from ..sources import Source

__all__ = ["expand_imports", "without_orphans"]

_LOCAL_FS = fsspec.filesystem("file")

Load = Callable[[list[LoadRequest]], Generator[Any, Any, Sequence[LoadResult]]]


def expand_imports(
    groups: Mapping[int, list[LoadResult]],
    load: Load,
    request: Callable[[Source], LoadRequest],
    text_of: Callable[[LoadResult], str | None],
) -> Generator[Any, Any, dict[int, list[LoadResult]]]:
    """*groups* with every import of their files read and placed after its importer (a flow).

    Args:
        load: reads requests (the loader's flow).
        request: the request for an imported source (with what is known of it).
        text_of: the text of a result that read (or found unchanged) its file; ``None`` if none is held.
    """
    children: dict[str, list[LoadResult | None]] = {}
    frontier: list[tuple[LoadResult, str]] = []  # (a file read, its text)
    budget: dict[str, int] = {}  # imports left under each top file
    for group in groups.values():
        for result in group:
            text = _importing(result, text_of)
            if text is not None:
                frontier.append((result, text))
    while frontier:
        reads: list[tuple[str, int, Source]] = []  # (importer, its child's slot, the child)
        for result, text in frontier:
            source = result.source
            top = _top(source)
            made, budget[top] = _imports_of(source, text, budget.get(top, MAX_IMPORTS))
            slots = children.setdefault(source.key, [])
            for child in made:
                if isinstance(child, LoadResult):
                    slots.append(child)
                else:
                    reads.append((source.key, len(slots), child))
                    slots.append(None)
        frontier = []
        if not reads:
            break
        loaded = yield from load([request(child) for _, _, child in reads])
        by_key = {r.source.key: r for r in loaded}
        for parent, slot, child in reads:
            got = by_key.get(child.key) or _skipped(child, SkipReason.ERROR, "the loader gave no result for it")
            children[parent][slot] = got
            text = _importing(got, text_of)
            if text is not None:
                frontier.append((got, text))
    if not children:
        return dict(groups)
    out: dict[int, list[LoadResult]] = {}
    for index, group in groups.items():
        placed: list[LoadResult] = []
        for result in group:
            _place(result, children, placed)
        out[index] = placed
    return out


def without_orphans(groups: Mapping[int, list[LoadResult]]) -> Mapping[int, list[LoadResult]]:
    """*groups* without the imports of an imported file that is out (a repeat of a file already in the prompt)."""
    changed: dict[int, list[LoadResult]] | None = None
    for index, group in groups.items():
        out_keys: set[str] = set()
        kept = []
        for result in group:
            parent = result.source.parent
            if result.source.via == "import" and parent in out_keys:
                out_keys.add(result.source.key)
                continue
            if not result.ok:
                out_keys.add(result.source.key)
            kept.append(result)
        if len(kept) != len(group):
            changed = dict(groups) if changed is None else changed
            changed[index] = kept
    return groups if changed is None else changed


def _place(result: LoadResult, children: Mapping[str, list[LoadResult | None]], placed: list[LoadResult]) -> None:
    placed.append(result)
    for child in children.get(result.source.key, ()):
        if child is not None:
            _place(child, children, placed)


def _importing(result: LoadResult, text_of: Callable[[LoadResult], str | None]) -> str | None:
    """The text to scan for imports, if *result*'s source follows imports and its file is in the prompt."""
    if result.source.imports is None:
        return None
    if result.status not in (Status.LOADED, Status.UNCHANGED) and not (
        result.status == Status.SKIPPED and result.reason in STALE
    ):
        return None  # out of the prompt; a file that failed in a way that may pass keeps its copy, and its imports
    return text_of(result)


def _top(source: Source) -> str:
    ref = source.import_of
    return source.key if ref is None else source.lineage[len(source.lineage) - ref.depth]


def _imports_of(source: Source, text: str, left: int) -> tuple[list[Source | LoadResult], int]:
    """What the tokens of *source*'s *text* import: sources to read, or skips decided now; and the budget left."""
    settings = source.imports
    assert settings is not None
    tokens = find_tokens(text, settings.allow_home)
    if not tokens:
        return [], left
    ref = source.import_of
    path = source.local_path
    local = path is not None and os.path.isabs(path)
    if local:
        assert path is not None
        real = os.path.realpath(path)
        chain = (real,) if ref is None else ref.chain
        root = _root_of(os.path.dirname(real), settings.root_markers) if ref is None else ref.root
        folder = os.path.dirname(path)
    depth = 0 if ref is None else ref.depth
    made: list[Source | LoadResult] = []
    seen: set[str] = set()
    for token in tokens:
        found = kind(token.path, settings.allow_home)
        key = child_key(source.key, token.path)
        if found is None or key in seen:
            continue
        written = shown_path(token.path)  # a URL's credentials never reach a name, a key or the log
        if not local:
            if found in ("explicit", "named", "url"):
                seen.add(key)
                child = _child(source, key, written, token.optional, depth + 1, (), "", written)
                made.append(
                    _skipped(child, SkipReason.PROTOCOL_NOT_ALLOWED, "imports are followed in local files only")
                )
            continue
        # A URL is shown as written (masked), not as a path under the importer's folder.
        target = written if found == "url" else os.path.normpath(os.path.join(folder, os.path.expanduser(token.path)))
        if found == "bare" and not (_inside(target, root) and os.path.isfile(target)):
            continue  # a name, not an import: no such file
        seen.add(key)
        child = _child(source, key, written, token.optional, depth + 1, chain, root, target)
        if left <= 0:
            detail = f"more than {MAX_IMPORTS} imports under one file; the rest stay text"
            made.append(_skipped(child, SkipReason.TOO_LARGE, detail))
            break
        left -= 1
        if found == "url":
            made.append(_skipped(child, SkipReason.PROTOCOL_NOT_ALLOWED, "a URL is not imported: imports are files"))
            continue
        if depth >= settings.max_depth:
            detail = f"imported from a file at depth {depth}, the limit (imports.max_depth: {settings.max_depth})"
            made.append(_skipped(child, SkipReason.IMPORT_DEPTH, detail))
            continue
        real_target = os.path.realpath(target)
        home = settings.allow_home and token.path.startswith("~/")
        if not (
            _inside(real_target, root) or (home and _inside(real_target, os.path.realpath(os.path.expanduser("~"))))
        ):
            where = target if real_target == target else f"{target} (resolves to {real_target})"
            made.append(_skipped(child, SkipReason.OUTSIDE_ROOT, f"{where} is outside the project root {root}"))
            continue
        if real_target in chain:
            cycle = " → ".join([*chain[chain.index(real_target) :], real_target])
            made.append(_skipped(child, SkipReason.IMPORT_CYCLE, f"already on the import chain: {cycle}"))
            continue
        ref = child.import_of
        assert ref is not None
        made.append(replace(child, import_of=replace(ref, chain=(*chain, real_target))))
    return made, left


def _child(
    source: Source, key: str, written: str, optional: bool, depth: int, chain: tuple[str, ...], root: str, url: str
) -> Source:
    fs_path = (_LOCAL_FS, url) if os.path.isabs(url) else None
    ref = ImportRef(written, optional, depth, chain, root)
    return source.derived(key, written, url, "import", fs_path, required=False, import_of=ref)


def _skipped(source: Source, reason: SkipReason, detail: str) -> LoadResult:
    fingerprint = None
    if source.local_path is not None and os.path.isabs(source.local_path):
        from ..load.fingerprints import local_fingerprint

        with contextlib.suppress(OSError):  # a fingerprint lets a revalidation see it unchanged
            fingerprint = local_fingerprint(os.stat(source.local_path))
    return LoadResult(source, Status.SKIPPED, reason=reason, detail=detail, fingerprint=fingerprint)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _root_of(folder: str, markers: tuple[str, ...]) -> str:
    """The project root imports from a file in *folder* stay in: the nearest ancestor holding one of *markers*
    (the source's, a discovery's ``root_markers``: Gemini CLI's boundary marker is ``.git``), else *folder*."""
    return project_root(folder, markers) or folder
