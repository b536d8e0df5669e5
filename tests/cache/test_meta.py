"""The cache's meta in the state: JSON a checkpoint keeps, read back as written, in each version memconfig wrote."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline
from support.trees import write, write_atomically

from memconfig import Pipeline, SkipReason
from memconfig.cache import PolicyCache
from memconfig.cache.meta import META_VERSION, Expansion, Meta, MetaEntry, OutRecord, digest
from memconfig.load.fingerprints import local_fingerprint

META = "memory_contents_meta"
SOURCE_EVENTS = ("source_loaded", "source_skipped", "source_stale", "source_expanded")

#: A project of each kind of record: a named file, a glob's two matches, a missing file, a file that imports another.
FILES = {
    "a.md": "alpha",
    "rules/r1.md": "rule one",
    "rules/r2.md": "rule two",
    "CLAUDE.md": "main\n@notes.md\n",
    "notes.md": "the notes",
}
SOURCES: list[Any] = [
    {"url": "a.md", "name": "team-rules"},
    {"glob": "rules/*.md"},
    {"url": "missing.md", "name": "optional-notes"},
    "CLAUDE.md",
]
TEXT = "alpha\n\nrule one\n\nrule two\n\nmain\nthe notes"
#: Each file in the prompt, by key: the imported file's key is its importer's and the token.
FILE_OF = {
    "a.md": "a.md",
    "rules/r1.md": "rules/r1.md",
    "rules/r2.md": "rules/r2.md",
    "CLAUDE.md": "CLAUDE.md",
    "CLAUDE.md::@notes.md": "notes.md",
}

#: The state memconfig 0.1.0 (meta version 2: main at c6cb6fe) wrote for this project in :data:`V2_ROOT`,
#: rendered once under ``revalidate``: ``json.dumps(state, indent=1)``, as it gave it.
V2_STATE = (Path(__file__).parent / "states" / "v2-revalidate.json").read_text(encoding="utf-8")
V2_ROOT = "/tmp/v2state-n841r_02"


def _pipeline(root: Path, policy: str = "revalidate", **cache: Any) -> Pipeline:
    """The pipeline over :data:`SOURCES` in *root*, imports followed; *cache*: more cache settings."""
    return plain_pipeline(root, SOURCES, policy, cache=cache, imports=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project of :data:`FILES`, a git root (imports stay under it)."""
    (tmp_path / ".git").mkdir()
    for name, text in FILES.items():
        write(tmp_path / name, text)
    return tmp_path


def _v2_state(root: Path, made_for: str) -> dict[str, Any]:
    """:data:`V2_STATE` as it would stand in *root*: its paths, its files' fingerprints, its configuration."""
    state: dict[str, Any] = json.loads(V2_STATE.replace(V2_ROOT, str(root)))
    meta = state[META]
    meta["made_for"] = made_for
    for e in meta["entries"]:
        e["fingerprint"] = local_fingerprint(os.stat(root / FILE_OF[e["source"]]))
    return state


def _made_for(pipeline: Pipeline) -> str:
    """The configuration a state of *pipeline*'s is made for, as its meta records it."""
    return cast(PolicyCache, pipeline.cache).made_for


def _source_events(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in logs if e["event"] in SOURCE_EVENTS]


# -- the records and their JSON ---------------------------------------------------------------

_keys = st.text(max_size=12)
_reasons = st.sampled_from(list(SkipReason))
_stamps = st.none() | st.tuples(st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False))
_lineages = st.lists(_keys, max_size=3).map(tuple)
_vias = st.none() | st.sampled_from(["glob", "discover", "import"])
_entries = st.builds(
    MetaEntry,
    _keys,
    _keys,
    _keys,
    _keys,
    st.none() | _keys,
    st.integers(min_value=0, max_value=2**53),
    _lineages,
    _vias,
    st.none() | _reasons,
    _stamps,
)
_outs = st.builds(OutRecord, _keys, _keys, _reasons, _keys, st.none() | _keys, _lineages, _vias, st.booleans(), _stamps)
_expansions = st.builds(Expansion, st.sampled_from(["glob", "discover", "import"]), _lineages, st.none() | _reasons)


@given(
    values=st.fixed_dictionaries(
        {
            "key": _keys,
            "name": _keys,
            "url": _keys,
            "sha256": _keys,
            "fingerprint": st.none() | _keys,
            "bytes": st.integers(min_value=0),
            "lineage": _lineages,
            "via": _vias,
            "stale": st.none() | _reasons,
            "read": _stamps,
        }
    )
)
def test_an_entry_holds_what_it_is_made_of(values: dict[str, Any]) -> None:
    """Each field of an entry, and of its JSON, is the value it was made with; a replaced field is in both."""
    entry = MetaEntry(**values)
    assert {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry) if f.name != "_json"} == values
    written = entry.to_json()
    assert {**written, "lineage": tuple(written["lineage"]), "read": values["read"] and tuple(written["read"])} == {
        **values,
        "stale": values["stale"] and values["stale"].value,
    }
    edited = dataclasses.replace(entry, sha256="edited")
    assert (edited.sha256, edited.to_json()["sha256"], edited.key) == ("edited", "edited", values["key"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.key = "another"  # type: ignore[misc]


@given(
    entries=st.lists(_entries, max_size=4),
    skipped=st.dictionaries(_keys, _outs, max_size=3),
    expansions=st.dictionaries(_keys, _expansions, max_size=3),
    pending=st.lists(_keys, max_size=3),
)
def test_meta_round_trips_through_json(
    entries: list[MetaEntry],
    skipped: dict[str, OutRecord],
    expansions: dict[str, Expansion],
    pending: list[str],
) -> None:
    """A meta made to JSON, dumped and loaded, reads back equal, and writes out the very JSON it was read from."""
    meta = Meta.make(entries, skipped, expansions, pending, "config")
    written = meta.to_json()
    loaded = json.loads(json.dumps(written))
    assert loaded == written
    back = Meta.from_json(loaded)
    assert back == meta
    assert back.to_json() is loaded
    assert [e.to_json() for e in back.entries] == loaded["entries"]


def test_a_render_writes_json_that_reads_back_as_it_was(project: Path) -> None:
    """The meta a render puts in the state is plain JSON of this version, and reads back to the same JSON."""
    state: dict[str, Any] = {}
    assert _pipeline(project).render(state=state) == TEXT
    written = state[META]
    assert written["v"] == META_VERSION == 3
    assert json.loads(json.dumps(written)) == written
    meta = Meta.from_json(json.loads(json.dumps(written)))
    assert [(e.key, e.lineage, e.via) for e in meta.entries] == [
        ("a.md", (), None),
        ("rules/r1.md", ("rules/*.md",), "glob"),
        ("rules/r2.md", ("rules/*.md",), "glob"),
        ("CLAUDE.md", (), None),
        ("CLAUDE.md::@notes.md", ("CLAUDE.md",), "import"),
    ]
    assert meta.skipped["missing.md"].reason is SkipReason.NOT_FOUND
    assert meta.expansions["rules/*.md"].children == ("rules/r1.md", "rules/r2.md")
    assert meta.to_json() == written


# -- checkpoints -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "cache"),
    [
        pytest.param("once", {}, id="once"),
        pytest.param("revalidate", {}, id="revalidate"),
        pytest.param("ttl", {"ttl": 0}, id="ttl-due"),
        pytest.param("always", {}, id="always"),
    ],
)
def test_a_checkpointed_state_restores_and_renders_as_it_was(project: Path, policy: str, cache: Any) -> None:
    """A state through json.dumps/json.loads renders the same block in a new pipeline, then as the policy says."""
    state: dict[str, Any] = {}
    assert _pipeline(project, policy, **cache).render(state=state) == TEXT
    restored = json.loads(json.dumps(state))
    pipeline = _pipeline(project, policy, **cache)  # another process, as far as the cache knows
    with capture_logs() as logs:
        assert pipeline.render(state=restored) == TEXT
    if policy != "always":  # which reads every source again, and logs each as a hit
        assert _source_events(logs) == []
    assert {k: v for k, v in restored[META].items() if k != "checked_at"} == {
        k: v for k, v in state[META].items() if k != "checked_at"
    }
    write_atomically(project / "a.md", "alpha, edited")
    edited = pipeline.render(state=json.loads(json.dumps(restored)))
    assert edited == (TEXT if policy == "once" else TEXT.replace("alpha", "alpha, edited"))


def test_a_pipeline_given_back_its_own_checkpoint_renders_an_unchanged_turn(project: Path) -> None:
    """A checkpoint of a state the pipeline wrote, restored again and again, renders with nothing read or logged."""
    pipeline = _pipeline(project)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    for _ in range(3):
        restored = json.loads(json.dumps(state))
        with capture_logs() as logs:
            assert pipeline.render(state=restored) == TEXT
        assert _source_events(logs) == []
        assert restored[META] == state[META]


# -- versions ----------------------------------------------------------------------------


def test_the_v2_fixture_is_made_for_this_configuration() -> None:
    """The configuration a v2 state was made for is recognised as it is: an upgrade does not read it afresh."""
    state = json.loads(V2_STATE)
    assert _made_for(_pipeline(Path(V2_ROOT))) == state[META]["made_for"]


@pytest.mark.parametrize("policy", ["once", "revalidate"])
def test_a_v2_state_is_migrated_without_a_read(project: Path, policy: str) -> None:
    """A state of meta version 2 (today's memconfig) renders as an unchanged turn: nothing read, nothing logged."""
    pipeline = _pipeline(project, policy)
    state = _v2_state(project, _made_for(pipeline))
    contents, v2 = state["memory_contents"], state[META]
    with capture_logs() as logs:
        render = pipeline.build(state)
    assert render.text == TEXT
    assert _source_events(logs) == []
    assert (render.counts["loaded"], render.counts["refreshed"], render.counts["cache_hits"]) == (0, 0, 5)
    assert render.counts["sources_skipped"] == 1
    assert state["memory_contents"] is contents  # the contents are kept as they are
    v3 = state[META]
    assert v3["v"] == 3
    assert [e["key"] for e in v3["entries"]] == [e["source"] for e in v2["entries"]]
    assert [{k: v for k, v in e.items() if k != "key"} for e in v3["entries"]] == [
        {k: v for k, v in e.items() if k != "source"} for e in v2["entries"]
    ]  # fingerprints, hashes, stamps: all it recorded
    assert {k: v3[k] for k in ("skipped", "expansions", "pending", "digest", "made_for")} == {
        k: v2[k] for k in ("skipped", "expansions", "pending", "digest", "made_for")
    }
    meta = Meta.from_json(v3)
    assert digest(meta.entries, meta.skipped) == v2["digest"]  # the digest of what it shows is unchanged
    assert [(r.source, r.name, r.status) for r in render.sources] == [
        ("a.md", "team-rules", "loaded"),
        ("rules/*.md", "rules/*.md", "loaded"),
        ("rules/r1.md", "rules/r1.md", "loaded"),
        ("rules/r2.md", "rules/r2.md", "loaded"),
        ("missing.md", "optional-notes", "skipped"),
        ("CLAUDE.md", "CLAUDE.md", "loaded"),
        ("CLAUDE.md::@notes.md", "notes.md", "loaded"),
    ]
    with capture_logs() as logs:
        assert pipeline.render(state=state) == TEXT
    assert _source_events(logs) == []
    assert state[META] is v3  # migrated once: the next turn reads the version 3 it wrote


def test_a_migrated_v2_state_sees_the_next_edit(project: Path) -> None:
    """After the migration, an edit of one file is read and logged as a refresh of that file alone."""
    pipeline = _pipeline(project)
    state = _v2_state(project, _made_for(pipeline))
    pipeline.render(state=state)
    write_atomically(project / "rules" / "r2.md", "rule two, edited")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == TEXT.replace("rule two", "rule two, edited")
    assert [(e["source"], e["cache"]) for e in events_named(logs, "source_loaded")] == [("rules/r2.md", "refreshed")]


def test_a_v2_state_of_another_configuration_is_read_afresh(project: Path) -> None:
    """A v2 state made under another configuration is read again, as a v3 one would be."""
    state = _v2_state(project, "another configuration")
    with capture_logs() as logs:
        assert _pipeline(project).render(state=state) == TEXT
    assert len(events_named(logs, "source_loaded")) == 5
    assert state[META]["v"] == 3


def test_a_state_of_a_newer_version_is_read_afresh(project: Path) -> None:
    """A meta written by a later memconfig is not trusted: every source is read again, the meta rewritten."""
    pipeline = _pipeline(project)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    newer = json.loads(json.dumps(state))
    newer[META]["v"] = META_VERSION + 1
    newer["memory_contents"]["a.md"] = "what a later memconfig kept"
    with capture_logs() as logs:
        assert pipeline.render(state=newer) == TEXT
    assert [e["source"] for e in events_named(logs, "source_loaded")] == [*FILE_OF]
    assert newer[META]["v"] == META_VERSION


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param({"v": 3, "entries": "not a list"}, id="fields-of-another-shape"),
        pytest.param({"v": 3}, id="fields-missing"),
        pytest.param({"v": "3"}, id="version-not-a-number"),
    ],
)
def test_a_meta_that_is_not_what_its_version_says_is_adopted(project: Path, meta: dict[str, Any]) -> None:
    """A meta edited by hand is adopted as a state without meta is: what the contents hold is taken as it is."""
    state: dict[str, Any] = {"memory_contents": {"a.md": "alpha as stored"}, META: meta}
    assert _pipeline(project, "once").render(state=state).startswith("alpha as stored\n\n")
    assert state[META]["v"] == META_VERSION


# -- what a turn converts ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["once", "revalidate"])
def test_an_unchanged_turn_leaves_the_meta_as_it_was_written(project: Path, policy: str) -> None:
    """A render that finds nothing changed keeps the state's meta object itself."""
    pipeline = _pipeline(project, policy)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    written = state[META]
    pipeline.render(state=state)
    assert state[META] is written


def test_a_due_ttl_check_rewrites_only_the_time(project: Path) -> None:
    """A ttl check that finds nothing changed writes a meta whose records are the JSON written before."""
    pipeline = _pipeline(project, "ttl", ttl=0)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    written = state[META]
    pipeline.render(state=state)
    assert state[META] is not written and state[META]["checked_at"] >= written["checked_at"]
    assert {k: v for k, v in state[META].items() if k != "checked_at"} == {
        k: v for k, v in written.items() if k != "checked_at"
    }
    assert all(a is b for a, b in zip(state[META]["entries"], written["entries"], strict=True))


@pytest.mark.parametrize("policy", ["revalidate", "always"])
def test_an_edit_writes_that_file_entry_alone(project: Path, policy: str) -> None:
    """After one file is edited, the new meta holds the other entries' JSON as written before: only that one is new."""
    pipeline = _pipeline(project, policy)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    before = state[META]["entries"]
    write_atomically(project / "rules" / "r1.md", "rule one, edited")
    pipeline.render(state=state)
    after = state[META]["entries"]
    assert [a is b for a, b in zip(after, before, strict=True)] == [True, False, True, True, True]
    assert after[1]["sha256"] != before[1]["sha256"]


def test_the_meta_in_state_is_replaced_never_edited(project: Path) -> None:
    """A render writes a new meta and new entries; the JSON an earlier turn holds (a checkpoint in memory) stays."""
    pipeline = _pipeline(project)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    kept = json.loads(json.dumps(state[META]))
    earlier = state[META]
    write_atomically(project / "a.md", "alpha, edited")
    pipeline.render(state=state)
    assert state[META] is not earlier
    assert earlier == kept
