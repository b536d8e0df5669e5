"""Single flight: concurrent reads of the same request share one result, across threads and tasks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from ..model import LoadRequest, LoadResult

__all__ = ["Claim", "Flights", "group"]

Batch = Future[list[list[LoadResult]]]


@dataclass(slots=True)
class Claim:
    """What one caller reads (under one future) and what it waits for from others."""

    mine: list[int]  # indexes of the requests this caller reads
    keys: list[tuple[Any, ...]]  # their flight keys
    batch: Batch  # this caller's results, per request in *mine*
    theirs: list[tuple[int, Batch, int]]  # (index, future, position in it)


class Flights:
    """A caller claims the requests nobody is reading yet, under one future for all of them.

    Later callers asking for any of those wait on that future. A caller whose
    reader failed or was cancelled reads for itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: dict[tuple[Any, ...], tuple[Batch, int]] = {}

    def claim(self, requests: Sequence[LoadRequest], *, share: bool = True) -> Claim:
        """Claim *requests*; with *share* false, read all of them alone (neither joining nor joined)."""
        claim = Claim([], [], Future(), [])
        if not share:
            claim.mine = list(range(len(requests)))
            return claim
        keys = [_flight_key(request) for request in requests]
        with self._lock:
            for index, key in enumerate(keys):
                held = self._reading.get(key)
                if held is None:
                    self._reading[key] = (claim.batch, len(claim.mine))
                    claim.mine.append(index)
                    claim.keys.append(key)
                else:
                    claim.theirs.append((index, *held))
        return claim

    def release(
        self, requests: Sequence[LoadRequest], claim: Claim, outcome: Sequence[LoadResult] | BaseException
    ) -> dict[int, list[LoadResult]]:
        """Publish this caller's results (regrouped per request) to everyone waiting."""
        grouped = {} if isinstance(outcome, BaseException) else group(requests, claim.mine, outcome)
        with self._lock:
            for flight in claim.keys:
                del self._reading[flight]
        if isinstance(outcome, BaseException):
            claim.batch.set_exception(outcome)
        else:
            claim.batch.set_result([grouped[index] for index in claim.mine])
        return grouped


def group(
    requests: Sequence[LoadRequest], indexes: list[int], outcome: Sequence[LoadResult]
) -> dict[int, list[LoadResult]]:
    """The loader's flat results regrouped per request (it puts an expanded source's children in its place)."""
    if len(outcome) == len(indexes) and all(not r.source.lineage for r in outcome):
        return {index: [result] for index, result in zip(indexes, outcome, strict=True)}
    grouped: dict[int, list[LoadResult]] = {}
    position = 0
    for index in indexes:
        key = requests[index].source.key
        found = grouped[index] = []
        while position < len(outcome) and outcome[position].source.root == key:
            found.append(outcome[position])
            position += 1
    return grouped


def _flight_key(request: LoadRequest) -> tuple[Any, ...]:
    children = tuple(sorted(request.children.items())) if request.children else ()
    return (request.source.key, request.source.url, request.fingerprint, request.sha256, children)
