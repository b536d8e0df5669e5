"""A loader over a deepagents backend: every pass is one batched ``download_files`` call.

deepagents reads memory through its backends (a folder, the agent's state, a
LangGraph store, a composite of those), not through fsspec; this loader lets
memconfig's cache, processors and events work over the same backends. Each
source's URL is handed to the backend as it is (the backend resolves it), all
of them in one ``download_files`` call per pass, as deepagents makes — or one
``adownload_files`` call when the pass is awaited. The backend's error codes
become skip reasons; nothing raises.

A backend path is its own identity: only the backend knows whether two paths
(``/a.md`` and ``/./a.md``, a link and its target) are one file, so each
result's place is its path, and no two distinct paths are taken for repeats.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..drive import Either, Flow, run
from ..model import LoadRequest, LoadResult, SkipReason, Status
from ..timing import ms_since
from .errors import over_max_bytes

__all__ = ["BACKEND_ERRORS", "BackendLoader", "BackendResult"]

#: deepagents' standard download error codes, as skip reasons (any other string is an ``error``).
BACKEND_ERRORS: Mapping[str, SkipReason] = MappingProxyType(
    {
        "file_not_found": SkipReason.NOT_FOUND,
        "permission_denied": SkipReason.PERMISSION_DENIED,
        "is_directory": SkipReason.IS_DIRECTORY,
    }
)

_RUNTIME: contextvars.ContextVar[Any] = contextvars.ContextVar("memconfig_backend_runtime", default=None)


@dataclass(slots=True)
class BackendResult(LoadResult):
    """A load result that also keeps what the backend said, for callers that must react as deepagents does."""

    backend_error: str | None = None
    """The backend's own error string (``"permission_denied"``, or a backend-specific message)."""
    decode_error: UnicodeDecodeError | None = None
    """The error decoding the bytes raised, when they were not valid text."""


class BackendLoader:
    """Reads sources through a deepagents backend (``download_files`` / ``adownload_files``).

    Args:
        backend: a backend instance, or a factory called with the LangGraph
            runtime of the pass (see :meth:`bound`) that returns one.
        encoding: the text encoding of every source.
        on_decode_error: ``skip`` the source, ``replace`` bad bytes, or ``fail``
            (a skip marked fatal: the render fails).
        max_bytes: larger sources are skipped as ``too_large``; ``None``: no limit
            (deepagents sets none).
        text_only: skip content holding a NUL character as ``binary``.
        listed: the paths as the caller lists them, repeats included: a pass
            that reads all of them downloads this list, in this order (as
            deepagents does), each source taking its path's first response.
    """

    def __init__(
        self,
        backend: Any,
        *,
        encoding: str = "utf-8",
        on_decode_error: str = "skip",
        max_bytes: int | None = 1 << 20,
        text_only: bool = True,
        listed: Sequence[str] | None = None,
    ) -> None:
        self.backend = backend
        self.listed = list(listed) if listed is not None else None
        self._distinct = frozenset(self.listed or ())
        self.encoding = encoding
        self.on_decode_error = on_decode_error
        self.max_bytes = max_bytes
        self.text_only = text_only

    @property
    def token(self) -> str:
        """What decides the text a source reads as: a state read under another token is read afresh."""
        kind = type(self.backend)
        return (
            f"backend:{kind.__module__}.{kind.__qualname__}:{self.encoding}:{self.on_decode_error}:"
            f"{self.max_bytes}:{self.text_only}"
        )

    def __repr__(self) -> str:
        return f"BackendLoader({type(self.backend).__name__}, encoding={self.encoding!r}, max_bytes={self.max_bytes})"

    @contextlib.contextmanager
    def bound(self, runtime: Any) -> Iterator[None]:
        """Passes run inside use *runtime* to build the backend, when it is a factory."""
        token = _RUNTIME.set(runtime)
        try:
            yield
        finally:
            _RUNTIME.reset(token)

    def resolve(self) -> Any:
        """The backend of this pass: the instance, or what the factory makes of the bound runtime."""
        backend = self.backend
        if callable(backend) and not hasattr(backend, "download_files"):
            return backend(_RUNTIME.get())
        return backend

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        """Read every request with one ``download_files`` call; results in request order."""
        return run(self.read(requests))

    def read(self, requests: Sequence[LoadRequest]) -> Flow[list[LoadResult]]:
        """:meth:`load` as a flow: ``adownload_files`` awaited when the pass is, else ``download_files`` inline."""
        if not requests:
            return []
        paths = [request.source.url for request in requests]  # as they are: the backend resolves paths itself
        batch = paths
        if self.listed is not None and len(paths) == len(self._distinct) and self._distinct.issuperset(paths):
            batch = self.listed
        started = time.perf_counter()
        backend = self.resolve()
        # Both forms: the driver picks (``adownload_files`` awaited by an async one, ``download_files`` inline).
        responses = yield Either(
            functools.partial(backend.download_files, batch), functools.partial(backend.adownload_files, batch)
        )
        if batch is not paths:
            first: dict[str, Any] = {}
            for path, response in zip(batch, responses, strict=True):
                first.setdefault(path, response)
            responses = [first[path] for path in paths]
        return [self._result(r, response, started) for r, response in zip(requests, responses, strict=True)]

    def _result(self, request: LoadRequest, response: Any, started: float) -> LoadResult:
        source = request.source
        error = getattr(response, "error", None)
        data = getattr(response, "content", None)
        if error is not None:
            reason = BACKEND_ERRORS.get(error, SkipReason.ERROR)
            return _skipped(request, reason, str(error), started, backend_error=str(error))
        if data is None:
            return _skipped(request, SkipReason.ERROR, "the backend returned no content", started)
        if self.max_bytes is not None and len(data) > self.max_bytes:
            return _skipped(request, SkipReason.TOO_LARGE, over_max_bytes(self.max_bytes), started)
        sha256 = hashlib.sha256(data).hexdigest()
        place = "backend:" + source.url
        if sha256 == request.sha256:
            ms = ms_since(started)
            return LoadResult(source, Status.UNCHANGED, sha256=sha256, fingerprint=sha256, duration_ms=ms, place=place)
        try:
            text = data.decode(self.encoding)
        except UnicodeDecodeError as exc:
            if self.on_decode_error != "replace":
                detail = f"not valid {self.encoding} at byte {exc.start}"
                fatal = self.on_decode_error == "fail"
                return _skipped(request, SkipReason.DECODE_ERROR, detail, started, fatal=fatal, decode_error=exc)
            text = data.decode(self.encoding, errors="replace")
        if self.text_only and "\0" in text:
            detail = f"holds a NUL character (at character {text.index(chr(0))}): not text"
            return _skipped(request, SkipReason.BINARY, detail, started)
        # A backend gives no version stamp: the content hash is the fingerprint a revalidation compares.
        ms = ms_since(started)
        return LoadResult(
            source, Status.LOADED, text, None, "", len(data), sha256, sha256, ms, read_at=started, place=place
        )


def _skipped(
    request: LoadRequest,
    reason: SkipReason,
    detail: str,
    started: float,
    *,
    fatal: bool = False,
    backend_error: str | None = None,
    decode_error: UnicodeDecodeError | None = None,
) -> BackendResult:
    return BackendResult(
        source=request.source,
        status=Status.SKIPPED,
        reason=reason,
        detail=detail,
        duration_ms=ms_since(started),
        fatal=fatal,
        backend_error=backend_error,
        decode_error=decode_error,
    )
