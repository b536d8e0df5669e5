"""Expanders: a glob in, its children out; what the state and the process keep of them, under churn."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named as _events
from support.pipelines import plain_pipeline
from support.trees import write_atomically as _write

from memconfig import EXPANDERS, Expander, Pipeline, SkipReason
from memconfig.expand import GlobExpander

GLOB = "rules/*.md"
GONE = "no longer matched by the glob"


def _pipeline(root: Path, sources: Sequence[Any], policy: str = "revalidate") -> Pipeline:
    return plain_pipeline(root, sources, policy)


def _children(meta: dict[str, Any]) -> dict[str, list[str]]:
    """Every place meta names a glob's children: entries, skipped records and the expansion."""
    return {
        "entries": [e["key"] for e in meta["entries"] if e["lineage"] == [GLOB]],
        "skipped": sorted(k for k, r in meta["skipped"].items() if r["lineage"] == [GLOB]),
        "expansion": list(meta["expansions"].get(GLOB, {}).get("children", [])),
    }


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    """A project folder whose `rules/` holds a.md and b.md."""
    _write(tmp_path / "rules" / "a.md", "rule a")
    _write(tmp_path / "rules" / "b.md", "rule b")
    return tmp_path


def test_expanders_table_is_read_only_with_glob() -> None:
    """EXPANDERS is a read-only mapping whose `glob` entry is an Expander with `via` "glob"."""
    assert isinstance(EXPANDERS, Mapping)
    assert isinstance(EXPANDERS["glob"], GlobExpander)
    assert isinstance(EXPANDERS["glob"], Expander)
    assert EXPANDERS["glob"].via == "glob"
    with pytest.raises(TypeError):
        EXPANDERS["import"] = GlobExpander()  # type: ignore[index]


def test_glob_children_are_kept_in_state_meta(rules: Path) -> None:
    """The state's meta holds each child with lineage [glob] and via glob, and the glob's children in order."""
    state: dict[str, Any] = {}
    _pipeline(rules, [{"glob": GLOB}]).build(state)
    meta = state["memory_contents_meta"]
    assert meta["v"] == 3
    assert [(e["key"], e["lineage"], e["via"]) for e in meta["entries"]] == [
        ("rules/a.md", [GLOB], "glob"),
        ("rules/b.md", [GLOB], "glob"),
    ]
    assert meta["expansions"][GLOB]["children"] == ["rules/a.md", "rules/b.md"]
    assert meta["expansions"][GLOB]["via"] == "glob"
    assert state["memory_contents"] == {"rules/a.md": "rule a", "rules/b.md": "rule b"}


def test_directories_are_not_matches(rules: Path) -> None:
    """A folder matching the pattern is not a child."""
    (rules / "rules" / "folder.md").mkdir()
    render = _pipeline(rules, [{"glob": GLOB}]).build({})
    assert [r.source for r in render.sources] == [GLOB, "rules/a.md", "rules/b.md"]


def test_vanished_child_leaves_meta_and_is_reported_once(rules: Path) -> None:
    """A deleted match is gone from entries, skipped and expansions, logged once as not_found."""
    pipeline = _pipeline(rules, [{"glob": GLOB}])
    state: dict[str, Any] = {}
    pipeline.build(state)
    (rules / "rules" / "a.md").unlink()
    with capture_logs() as logs:
        render = pipeline.build(state)
    assert render.text == "rule b"
    [skipped] = _events(logs, "source_skipped")
    assert (skipped["source"], skipped["reason"], skipped["detail"]) == ("rules/a.md", "not_found", GONE)
    assert (skipped["parent"], skipped["via"]) == (GLOB, "glob")
    assert _children(state["memory_contents_meta"]) == {
        "entries": ["rules/b.md"],
        "skipped": [],
        "expansion": ["rules/b.md"],
    }
    assert "rules/a.md" not in state["memory_contents"]
    assert [r.source for r in render.sources] == [GLOB, "rules/b.md"]
    with capture_logs() as logs:
        pipeline.build(state)
    assert _events(logs, "source_skipped") == []


def test_vanished_child_that_was_out_leaves_skipped(rules: Path) -> None:
    """A child out of the prompt (empty) that then disappears is no longer recorded as skipped."""
    _write(rules / "rules" / "blank.md", "   ")
    pipeline = _pipeline(rules, [{"glob": GLOB}])
    state: dict[str, Any] = {}
    render = pipeline.build(state)
    assert ("rules/blank.md", "skipped", SkipReason.EMPTY) in [(r.source, r.status, r.reason) for r in render.sources]
    assert _children(state["memory_contents_meta"])["skipped"] == ["rules/blank.md"]
    (rules / "rules" / "blank.md").unlink()
    render = pipeline.build(state)
    assert _children(state["memory_contents_meta"]) == {
        "entries": ["rules/a.md", "rules/b.md"],
        "skipped": [],
        "expansion": ["rules/a.md", "rules/b.md"],
    }
    assert render.counts["sources_skipped"] == 0


def test_glob_that_stops_matching_is_skipped_and_its_children_reported(rules: Path) -> None:
    """When every match goes, each child is reported gone and the glob itself is skipped as not_found."""
    pipeline = _pipeline(rules, [{"glob": GLOB}])
    state: dict[str, Any] = {}
    pipeline.build(state)
    for name in ("a.md", "b.md"):
        (rules / "rules" / name).unlink()
    with capture_logs() as logs:
        render = pipeline.build(state)
    assert render.text == ""
    assert sorted((e["source"], e["detail"]) for e in _events(logs, "source_skipped") if e["parent"] == GLOB) == [
        ("rules/a.md", GONE),
        ("rules/b.md", GONE),
    ]
    [record] = render.sources
    assert (record.source, record.status, record.reason) == (GLOB, "skipped", SkipReason.NOT_FOUND)
    assert GLOB not in state["memory_contents_meta"]["expansions"]


def test_expansion_is_logged_only_when_the_children_change(rules: Path) -> None:
    """`source_expanded` is logged on the first pass and when the list of matches changes, not otherwise."""
    pipeline = _pipeline(rules, [{"glob": GLOB}])
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        pipeline.build(state)
        _write(rules / "rules" / "a.md", "rule a, edited")
        pipeline.build(state)
        _write(rules / "rules" / "c.md", "rule c")
        pipeline.build(state)
    assert [(e["source"], e["count"], e["matches"]) for e in _events(logs, "source_expanded")] == [
        (GLOB, 2, ["rules/a.md", "rules/b.md"]),
        (GLOB, 3, ["rules/a.md", "rules/b.md", "rules/c.md"]),
    ]


def test_glob_churn_keeps_only_the_current_matches(tmp_path: Path) -> None:
    """50 matches all replaced 30 times: meta and the process-wide copies hold only the current 50."""
    folder = tmp_path / "rules"
    pipeline = _pipeline(tmp_path, [{"glob": GLOB}])
    state: dict[str, Any] = {}
    previous: list[str] = []
    for round_ in range(30):
        for key in previous:
            (tmp_path / key).unlink()
        current = [f"rules/r{round_:02d}-{i:02d}.md" for i in range(50)]
        for key in current:
            _write(tmp_path / key, f"{key} text")
        with capture_logs() as logs:
            render = pipeline.build(state)
        gone = [e["source"] for e in _events(logs, "source_skipped") if e["detail"] == GONE]
        assert sorted(gone) == previous
        assert [r.source for r in render.sources] == [GLOB, *current]
        meta = state["memory_contents_meta"]
        assert _children(meta) == {"entries": current, "skipped": [], "expansion": current}
        assert sorted(state["memory_contents"]) == current
        held = {k for k in pipeline.cache._latest.copies if k.startswith("rules/")}
        assert held <= set(current)
        previous = current
    assert len(list(folder.iterdir())) == 50


def test_abuild_expands_as_build_does(rules: Path) -> None:
    """The async build gives the same children and records."""
    built = _pipeline(rules, [{"glob": GLOB}]).build({})
    awaited = asyncio.run(_pipeline(rules, [{"glob": GLOB}]).abuild({}))
    assert awaited.sources == built.sources
    assert awaited.text == built.text == "rule a\n\nrule b"


def test_memory_glob_expands_in_sorted_order(memfs: Any) -> None:
    """A glob over fsspec's memory filesystem gives its files sorted, each a child of the glob."""
    for name in ("c.md", "a.md", "b.md"):
        memfs.pipe(f"/notes/{name}", name.encode())
    render = _pipeline(Path("/"), [{"glob": "memory://notes/*.md"}]).build({})
    assert render.text == "a.md\n\nb.md\n\nc.md"
    assert [r.parent for r in render.sources[1:]] == ["memory://notes/*.md"] * 3
