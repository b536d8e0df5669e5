"""``provides`` answers as ``isinstance`` does for every stage protocol, for the library's stages and others."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from memconfig import Pipeline, stages
from memconfig.expand import EXPANDERS
from memconfig.process.budget import LaidOut

PROTOCOLS = [
    value
    for _, value in inspect.getmembers(stages, inspect.isclass)
    if getattr(value, "_is_runtime_protocol", False) and value.__module__ == stages.__name__
] + [LaidOut]


class _Partial:
    token = "x"

    def load(self, requests: Any) -> list[Any]:
        return []


class _NoneMethod:
    close = None  # a member that is there but not callable: not a Closing
    takes_paths = True

    def __call__(self, sections: Any, paths: Any) -> Any:
        return sections


class _Declared(stages.Closing):
    """Says it is one by inheriting, without defining the member itself."""


def _objects() -> list[Any]:
    pipeline = Pipeline.from_config({"version": 1, "sources": []})
    built = [pipeline.loader, pipeline.cache, pipeline.formatter, pipeline.appender, *pipeline.processors.processors]
    return [*built, *EXPANDERS.values(), _Partial(), _NoneMethod(), _Declared(), 3, "text", None]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_provides_answers_as_isinstance(protocol: Any) -> None:
    for stage in _objects():
        assert stages.provides(stage, protocol) == isinstance(stage, protocol), (stage, protocol)
