"""An expander's optional hooks (`watched`, `would_take`, `no_match`): protocols, asked once, never per call."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline
from support.trees import write_atomically

import memconfig
from memconfig.expand import DiscoverExpander, GlobExpander
from memconfig.expand.capabilities import NO_MATCH, ExpanderCapabilities
from memconfig.model import Spot
from memconfig.registry import expanders
from memconfig.sources import Source


class Counted:
    """An expander that finds nothing, says why in its own words, and cannot say where to watch; counts each ask."""

    via = "counted"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def expand(self, source: Source) -> list[Source]:
        return []

    @property
    def no_match(self) -> str:
        self.asked.append("no_match")
        return "the list names no file"

    @property
    def watched(self) -> Callable[[Source], Sequence[Spot] | None]:
        self.asked.append("watched")
        return lambda source: None


@pytest.fixture
def counted() -> Iterator[Counted]:
    """`counted` registered as an expander (an object) for one test."""
    expander = Counted()
    memconfig.register("expanders", "counted", expander)
    yield expander
    expanders.unregister("counted")


@pytest.mark.parametrize(
    ("expander", "hooks", "no_match"),
    [
        pytest.param(GlobExpander(), ("watched", "would_take"), NO_MATCH, id="glob"),
        pytest.param(DiscoverExpander(), ("watched", "would_take"), "discovery found no file", id="discover"),
        pytest.param(object(), (), NO_MATCH, id="no-hooks"),
        pytest.param(None, (), NO_MATCH, id="no-expander"),
    ],
)
def test_capabilities_name_the_hooks_an_expander_has(expander: Any, hooks: tuple[str, ...], no_match: str) -> None:
    """Each hook is there when the expander has it (bound to it), else `None`; `no_match` has a default."""
    found = ExpanderCapabilities.of(expander)

    assert tuple(name for name in ("watched", "would_take") if getattr(found, name) is not None) == hooks
    assert found.no_match == no_match


def test_an_expanders_hooks_are_not_asked_again_on_later_renders(tmp_path: Path, counted: Counted) -> None:
    """Under `watch`, `no_match` (the skip's detail) and `watched` are asked on the first render, never after."""
    write_atomically(tmp_path / "list.txt", "nothing here\n")
    pipeline = plain_pipeline(tmp_path, [{"url": "list.txt", "expander": "counted"}], "watch")
    with pipeline, capture_logs() as logs:
        renders = [pipeline.build({})]
        first = sorted(set(counted.asked)), len(counted.asked)
        renders += [pipeline.build({}) for _ in range(3)]

    assert [(r.sources[0].reason, r.sources[0].detail) for r in renders] == [
        ("not_found", "the list names no file")
    ] * 4
    assert first == (["no_match", "watched"], len(counted.asked))
    assert [e["reason"] for e in events_named(logs, "source_unwatched")] == ["remote"]
