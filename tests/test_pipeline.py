"""The pipeline as a Python user calls it: from_yaml, from_config, render, arender, load."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import plain_pipeline
from support.pipelines import plain_pipeline as _plain

from memconfig import ConfigError, Pipeline, Render, SourceError, TextAppender


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    (tmp_path / "b.md").write_text("beta", encoding="utf-8")
    return tmp_path


def test_from_yaml_renders_relative_to_the_config_file(project: Path, write_config: Callable[..., Path]) -> None:
    """Relative sources resolve against the config file's folder, wherever the process runs."""
    config = write_config({"version": 1, "sources": ["a.md", "b.md"], "formatter": {"preset": "plain"}})
    assert config.parent == project
    assert Pipeline.from_yaml(config).render("SYS") == "SYS\n\nalpha\n\nbeta"


def test_from_config_accepts_a_mapping_and_rejects_a_bad_one(project: Path) -> None:
    """A plain mapping is validated like YAML; a bad one raises ConfigError with the key path."""
    assert _plain(project, ["a.md"]).render() == "alpha"
    with pytest.raises(ConfigError, match=r"sources\[0\]\.bogus: unknown key"):
        Pipeline.from_config({"version": 1, "sources": [{"url": "a.md", "bogus": 1}]})


@pytest.mark.parametrize("system", [pytest.param(None, id="none"), pytest.param("", id="empty")])
def test_empty_system_prompt_counts_as_none(project: Path, system: str | None) -> None:
    """With no system prompt the block alone is the prompt."""
    assert _plain(project, ["a.md"]).render(system) == "alpha"


def test_arender_matches_render(project: Path) -> None:
    """The async API gives the same prompt."""
    pipeline = _plain(project, ["a.md", "b.md"])
    assert asyncio.run(pipeline.arender("S", state={})) == pipeline.render("S", state={})


def test_load_returns_one_result_per_source(project: Path) -> None:
    """`load` reads every source and reports source, status, reason, bytes and sha256."""
    results = _plain(project, ["a.md", "missing.md"]).load()
    assert [(r.source.key, r.status, r.reason, r.bytes) for r in results] == [
        ("a.md", "loaded", None, 5),
        ("missing.md", "skipped", "not_found", 0),
    ]
    assert results[0].sha256 is not None and len(results[0].sha256) == 64


def test_every_source_gets_exactly_one_event_per_pass(project: Path) -> None:
    """One source_loaded or source_skipped per source, the block's manifest, then one prompt_built with the counts."""
    with capture_logs() as logs:
        _plain(project, ["a.md", "missing.md", "b.md"]).render()
    assert [(e["event"], e.get("source")) for e in logs] == [
        ("source_loaded", "a.md"),
        ("source_skipped", "missing.md"),
        ("source_loaded", "b.md"),
        ("prompt_manifest", None),
        ("prompt_built", None),
    ]
    loaded, skipped, manifest, built = logs[0], logs[1], logs[3], logs[4]
    assert {"source", "url", "bytes", "chars", "sha256", "duration_ms"} <= loaded.keys()
    assert (skipped["reason"], skipped["url"]) == ("not_found", str(project / "missing.md"))
    assert (built["sources_loaded"], built["sources_skipped"], built["chars"]) == (2, 1, len("alpha\n\nbeta"))
    assert manifest["sha256"] == built["sha256"]
    assert [(s["source"], s["status"], s.get("reason")) for s in manifest["sources"]] == [
        ("a.md", "loaded", None),
        ("missing.md", "skipped", "not_found"),
        ("b.md", "loaded", None),
    ]


def test_tilde_expands_to_home(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`~/…` reads from the home folder (the source deepagents documents but never finds)."""
    monkeypatch.setenv("HOME", str(project))
    assert _plain(project, ["~/a.md"]).render() == "alpha"


def test_env_variables_in_sources_keep_the_written_key(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`${VAR}` in a source is expanded for reading, while the header and state key stay as written."""
    monkeypatch.setenv("NOTES", str(project))
    state: dict[str, Any] = {}
    pipeline = Pipeline.from_config({"version": 1, "sources": ["${NOTES}/a.md"]})
    assert "${NOTES}/a.md\n\nalpha" in pipeline.render(state=state)
    assert state["memory_contents"] == {"${NOTES}/a.md": "alpha"}


def test_required_source_missing_fails_naming_source_and_reason(project: Path) -> None:
    """A skipped required source raises SourceError naming it and why, after logging it."""
    pipeline = _plain(project, ["a.md", {"url": "missing.md", "required": True}])
    with capture_logs() as logs, pytest.raises(SourceError, match=r"'missing.md'.*not_found") as caught:
        pipeline.render()
    assert (caught.value.source, caught.value.reason, caught.value.exit_code) == ("missing.md", "not_found", 1)
    assert [e["reason"] for e in logs if e["event"] == "source_skipped"] == ["not_found"]


def test_required_source_is_retried_until_it_loads(project: Path) -> None:
    """Under `once`, a required source that failed is tried again on the next render."""
    pipeline = _plain(project, [{"url": "later.md", "required": True}])
    state: dict[str, Any] = {}
    with pytest.raises(SourceError):
        pipeline.render(state=state)
    (project / "later.md").write_text("now here", encoding="utf-8")
    assert pipeline.render(state=state) == "now here"


def test_decode_failure_policy_fails_the_render(project: Path) -> None:
    """`on_decode_error: fail` turns a bad file into a failed render even if not required."""
    (project / "bad.md").write_bytes(b"\xff")
    with pytest.raises(SourceError, match="decode_error"):
        _plain(project, ["bad.md"], loader={"on_decode_error": "fail"}).render()


def test_custom_stage_can_replace_a_builtin(project: Path) -> None:
    """Any object with the stage's verb can stand in for it (here: the appender)."""

    class Shouting:
        def append(self, system: str | None, render: Render) -> str:
            return render.text.upper()

    pipeline = _plain(project, ["a.md"])
    pipeline.appender = Shouting()
    assert pipeline.render("ignored") == "ALPHA"
    assert "TextAppender" in repr(_plain(project, ["a.md"]))
    assert isinstance(_plain(project, ["a.md"]).appender, TextAppender)


@pytest.fixture
def watched(tmp_path: Path) -> Path:
    """A file and a folder of notes a glob takes (an async render walks it on the loader's pool)."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "a.md").write_text("alpha", encoding="utf-8")
    (tmp_path / "notes" / "b.md").write_text("beta", encoding="utf-8")
    return tmp_path


def _opened(pipeline: Pipeline, before: set[threading.Thread]) -> list[threading.Thread]:
    """Render sync and async (the watcher starts, the glob's walk takes a pool thread): the threads they started."""
    assert pipeline.build().text == "alpha\n\nbeta"
    assert asyncio.run(pipeline.abuild({})).text == "alpha\n\nbeta"
    threads = [t for t in set(threading.enumerate()) - before if t.name.startswith("memconfig-")]
    assert {t.name.split("_")[0].removesuffix("-tree") for t in threads} == {"memconfig-load", "memconfig-watch"}
    return threads


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cycle collector off: what is freed is freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_collector")
def test_a_dropped_pipeline_is_freed_by_reference_counting_and_its_threads_end(watched: Path) -> None:
    """No reference cycle holds a pipeline: dropped, it is gone at once, and its pool and watcher threads end."""
    before = set(threading.enumerate())
    pipeline = plain_pipeline(watched, ["a.md", {"glob": "notes/*.md"}], "watch")
    threads = _opened(pipeline, before)
    dropped = weakref.ref(pipeline)
    del pipeline
    assert dropped() is None
    for thread in threads:
        thread.join(timeout=60)  # a bound for a broken build only: each thread ends as soon as it is told
        assert not thread.is_alive(), thread.name


def test_close_stops_the_pool_and_the_watcher_and_a_render_after_it_opens_them_again(watched: Path) -> None:
    """Leaving the pipeline's ``with`` joins its threads; closing again does nothing; a render after it works."""
    before = set(threading.enumerate())
    with plain_pipeline(watched, ["a.md", {"glob": "notes/*.md"}], "watch") as pipeline:
        threads = _opened(pipeline, before)
    assert [t.name for t in threads if t.is_alive()] == []
    pipeline.close()
    reopened = _opened(pipeline, before)
    pipeline.close()
    assert [t.name for t in reopened if t.is_alive()] == []


def test_changed_turns_of_a_large_block_keep_one_block_and_one_copy_of_the_texts(tmp_path: Path) -> None:
    """An agent's turns after edits: the pipeline and its state hold about what they held after the first render
    (the texts once, the block once), not the blocks of earlier turns or a second copy of the texts (the formatter
    keeps a bounded number of characters of trimmed copies)."""
    import tracemalloc

    from memconfig.limits import MAX_HELD_CHARS as _COPIES_HELD

    paths = []
    for i in range(250):
        path = tmp_path / f"note-{i:03d}.md"
        path.write_text(f"# note {i}\n" + "remember this, and that.\n" * 800)  # 20 KB: a 5 MB block
        paths.append(str(path))
    state: dict[str, Any] = {}
    pipeline = Pipeline.from_config({"version": 1, "sources": paths, "cache": {"policy": "revalidate"}})
    tracemalloc.start()
    try:
        block = pipeline.render(state=state)
        first = tracemalloc.get_traced_memory()[0]
        for turn in range(4):
            Path(paths[turn]).write_text(f"# note {turn}, edited\n" + "remember this instead.\n" * 800)
            block = pipeline.render(state=state)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert "edited" in block and len(block) > 5_000_000
    assert after - first < _COPIES_HELD + len(block) // 4, (first, after)
