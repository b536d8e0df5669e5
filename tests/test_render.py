"""The Render a build gives: the block, its hash, and one record per source in prompt order."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import plain_pipeline as _pipeline
from support.servers import WebServer
from support.trees import write_atomically as _write

from memconfig import Pipeline, Render, SkipReason, SourceRecord, TextAppender

COUNTS = {
    "sources_loaded",
    "sources_skipped",
    "cache_hits",
    "revalidated",
    "refreshed",
    "stale",
    "loaded",
    "skipped",
    "dropped",
    "truncated",
    "escaped",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with two notes and a rules folder of two files."""
    _write(tmp_path / "a.md", "alpha")
    _write(tmp_path / "b.md", "beta text")
    _write(tmp_path / "rules" / "one.md", "rule one")
    _write(tmp_path / "rules" / "two.md", "rule two!")
    return tmp_path


def test_build_gives_the_block_its_utf8_hash_and_an_id(project: Path) -> None:
    """`text` is the block, `sha256` the SHA-256 of its UTF-8 bytes, `render_id` a non-empty string."""
    _write(project / "u.md", "Grüße — ☃")
    render = _pipeline(project, ["a.md", "u.md"]).build({})
    assert isinstance(render, Render)
    assert render.text == "alpha\n\nGrüße — ☃"
    assert render.sha256 == hashlib.sha256(render.text.encode("utf-8")).hexdigest()
    assert isinstance(render.render_id, str) and render.render_id


def test_render_is_frozen(project: Path) -> None:
    """A Render cannot be changed after the fact."""
    render = _pipeline(project, ["a.md"]).build({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        render.text = "other"  # type: ignore[misc]


def test_records_follow_prompt_order_with_glob_children_after_their_glob(project: Path) -> None:
    """One record per declared source and per glob child, in prompt order, skipped ones in place."""
    render = _pipeline(project, ["b.md", {"glob": "rules/*.md"}, "missing.md", "a.md"]).build({})
    assert all(isinstance(r, SourceRecord) for r in render.sources)
    assert [(r.source, r.status, r.parent, r.via) for r in render.sources] == [
        ("b.md", "loaded", None, None),
        ("rules/*.md", "loaded", None, None),
        ("rules/one.md", "loaded", "rules/*.md", "glob"),
        ("rules/two.md", "loaded", "rules/*.md", "glob"),
        ("missing.md", "skipped", None, None),
        ("a.md", "loaded", None, None),
    ]


def test_record_chars_and_hashes(project: Path) -> None:
    """A file's record has its block chars and content hash; a glob's has its children's total chars."""
    render = _pipeline(project, ["a.md", {"glob": "rules/*.md"}, "missing.md"]).build({})
    records = {r.source: r for r in render.sources}
    assert records["a.md"].chars == len("alpha")
    assert records["a.md"].sha256 == hashlib.sha256(b"alpha").hexdigest()
    assert records["rules/one.md"].chars == len("rule one")
    assert records["rules/*.md"].chars == len("rule one") + len("rule two!")
    assert records["missing.md"].chars == 0
    assert records["missing.md"].sha256 is None


def test_glob_record_hash_is_of_its_child_list(project: Path) -> None:
    """A glob's sha256 changes when its list of children changes, not when a child's content does."""
    pipeline = _pipeline(project, [{"glob": "rules/*.md"}], policy="revalidate")
    state: dict[str, Any] = {}

    def glob_hash() -> str | None:
        return next(r.sha256 for r in pipeline.build(state).sources if r.source == "rules/*.md")

    first = glob_hash()
    assert first is not None and len(first) == 64
    _write(project / "rules" / "one.md", "rule one, edited")
    assert glob_hash() == first
    _write(project / "rules" / "three.md", "rule three")
    assert glob_hash() != first


def test_skipped_record_carries_a_skip_reason(project: Path) -> None:
    """A source not in the prompt is `skipped` with a SkipReason and a detail."""
    render = _pipeline(project, ["missing.md"]).build({})
    [record] = render.sources
    assert record.status == "skipped"
    assert isinstance(record.reason, SkipReason)
    assert (record.reason, bool(record.detail)) == (SkipReason.NOT_FOUND, True)


def test_counts_hold_every_key_of_prompt_built(project: Path) -> None:
    """`counts` has the eleven counts, equal to those logged in `prompt_built`, as fields and keys; read-only."""
    with capture_logs() as logs:
        render = _pipeline(project, ["a.md", "missing.md", {"glob": "rules/*.md"}]).build({})
    assert set(render.counts) == COUNTS
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert {k: built[k] for k in COUNTS} == dict(render.counts)
    assert (render.counts["sources_loaded"], render.counts["sources_skipped"]) == (3, 1)
    assert (render.counts.sources_loaded, render.counts.loaded) == (3, 3)  # typed: a RenderCounts
    assert render.counts == {**dict.fromkeys(COUNTS, 0), **{k: built[k] for k in COUNTS}}
    with pytest.raises(KeyError):
        render.counts["sha256"]
    with pytest.raises(TypeError):
        render.counts["loaded"] = 0  # type: ignore[index]


@pytest.mark.parametrize(
    ("system", "appender"),
    [
        pytest.param("SYS", {}, id="default"),
        pytest.param(None, {}, id="no-system"),
        pytest.param("SYS", {"separator": "\n---\n", "position": "prepend"}, id="configured"),
    ],
)
def test_render_is_the_text_appender_applied_to_build(project: Path, system: str | None, appender: Any) -> None:
    """`render(system, state)` equals the config's text appender applied to `build(state)`."""
    pipeline = _pipeline(project, ["a.md", "b.md"], appender=appender)
    expected = TextAppender(appender.get("separator", "\n\n"), appender.get("position", "append")).append(
        system, pipeline.build({})
    )
    assert pipeline.render(system, {}) == expected
    assert pipeline.render(system, {}, format="text") == expected


def test_abuild_matches_build(project: Path) -> None:
    """The async build gives the same text, hash and records, under a render id of its own."""
    pipeline = _pipeline(project, ["a.md", {"glob": "rules/*.md"}, "missing.md"])
    built = pipeline.build({})
    awaited = asyncio.run(pipeline.abuild({}))
    assert (awaited.text, awaited.sha256, awaited.sources) == (built.text, built.sha256, built.sources)
    assert awaited.render_id != built.render_id


def test_second_build_of_a_state_is_served_from_the_memo(project: Path) -> None:
    """An unchanged turn gets the same block with `memo` set, and a new render id."""
    pipeline = _pipeline(project, ["a.md", "b.md"])
    state: dict[str, Any] = {}
    first, second = pipeline.build(state), pipeline.build(state)
    assert (first.memo, second.memo) == (False, True)
    assert (second.text, second.sources) == (first.text, first.sources)
    assert second.render_id != first.render_id


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("\ufeffwith a bom".encode(), id="bom-utf8"),
        pytest.param("\ufeffwith a bom\n  \n".encode(), id="bom-and-trailing-space"),
    ],
)
def test_byte_order_mark_is_not_in_the_block(project: Path, data: bytes) -> None:
    """A file starting with U+FEFF renders without it, and its record counts the chars without it."""
    (project / "bom.md").write_bytes(data)
    render = _pipeline(project, ["bom.md", "a.md"]).build({})
    assert render.text == "with a bom\n\nalpha"
    assert render.sources[0].chars == len("with a bom")


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param(None, id="deepagents-no-meta"),
        pytest.param({"v": 1, "entries": [], "checked_at": 0.0}, id="older-memconfig-v1"),
    ],
)
def test_state_from_another_writer_is_adopted_as_it_is(project: Path, meta: dict[str, Any] | None) -> None:
    """Contents written without meta (deepagents) or with meta v1 render as they are, without a read."""
    state: dict[str, Any] = {"memory_contents": {"a.md": "alpha as stored", "b.md": "beta as stored"}}
    if meta is not None:
        state["memory_contents_meta"] = meta
    render = _pipeline(project, ["a.md", "b.md"]).build(state)
    assert render.text == "alpha as stored\n\nbeta as stored"
    assert [r.status for r in render.sources] == ["loaded", "loaded"]
    assert state["memory_contents_meta"]["v"] == 3


def test_adopted_state_reads_the_sources_it_lacks(project: Path) -> None:
    """A source an adopted state does not hold is read on that render, the held ones are kept."""
    state: dict[str, Any] = {"memory_contents": {"a.md": "alpha as stored"}}
    render = _pipeline(project, ["a.md", "b.md"]).build(state)
    assert render.text == "alpha as stored\n\nbeta text"


# -- stale records, against a real HTTP server ----------------------------------------


def test_failed_refresh_is_a_stale_record_with_its_reason(web: WebServer) -> None:
    """A source whose refresh fails keeps its content and is recorded `stale` with the reason."""
    url = web.serve("team.md", "team rules")
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "sources": [url],
            "loader": {"backoff": 0.01, "retries": 0, "timeout": 2},
            "cache": {"policy": "revalidate"},
            "formatter": {"preset": "plain"},
        }
    )
    state: dict[str, Any] = {}
    pipeline.build(state)
    web.fail("team.md", 503)
    render = pipeline.build(state)
    assert render.text == "team rules"
    [record] = render.sources
    assert (record.status, record.reason, record.chars) == ("stale", SkipReason.REMOTE_ERROR, len("team rules"))
    assert render.counts["stale"] == 1
