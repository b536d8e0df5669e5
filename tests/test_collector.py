"""The cyclic collector is held off while a config is validated, its pipeline built and a render reads,
and nothing memconfig makes is left for it: a pipeline dropped leaves no reference cycle."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memconfig import Config, Pipeline
from memconfig.collector import paused


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations the collector collects, one entry per pass."""
    passes: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    threshold = gc.get_threshold()
    was_on = gc.isenabled()
    gc.enable()
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    gc.callbacks.append(seen)
    try:
        yield passes
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
        if not was_on:
            gc.disable()


def _config(tmp_path: Path, count: int = 50) -> dict[str, Any]:
    paths = []
    for i in range(count):
        path = tmp_path / f"note-{i:02d}.md"
        path.write_text(f"# Note {i}\n\nremember {i}\n")
        paths.append(str(path))
    return {"version": 1, "sources": paths}


def test_validation_build_and_a_reading_render_run_without_a_collection(
    tmp_path: Path, collections: list[int], logs: list[dict[str, Any]]
) -> None:
    data = _config(tmp_path, 400)
    gc.collect()
    collections.clear()
    config = Config.from_mapping(data)
    pipeline = Pipeline.from_config(config)
    built = len(collections)
    text = pipeline.render(state={})

    assert text.count("remember") == 400
    assert [e["event"] for e in logs].count("source_loaded") == 400
    # each burst ends with one young pass at most (its allocations counted): a handful, where unheld they are
    # about one per 700 objects made (here 11 for the build and 17 in all)
    assert built <= 3
    assert len(collections) <= 8


def test_the_collector_is_on_again_afterwards_and_off_stays_off() -> None:
    was_on = gc.isenabled()
    try:
        gc.enable()
        with paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(KeyError), paused():
            raise KeyError("x")
        assert gc.isenabled()
        gc.disable()
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if was_on else gc.disable)()


def test_a_pipeline_dropped_leaves_no_cycle(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    data = _config(tmp_path)
    Pipeline.from_config(data).render(state={})  # whatever a first use creates once (imports, caches) is made here
    gc.collect()
    state: dict[str, Any] = {}
    pipeline = Pipeline.from_config(Config.from_mapping(data))
    pipeline.render(state=state)
    (tmp_path / "note-07.md").write_text("# Note 7\n\nchanged\n")
    pipeline.render(state=state)  # a changed turn too
    del pipeline, state

    assert gc.collect() == 0, "memconfig left objects in a reference cycle"
