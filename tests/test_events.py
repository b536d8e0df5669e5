"""The load log: one event per fact, every field declared in EVENTS, every event tagged with its render."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named as _events
from support.pipelines import plain_pipeline
from support.servers import WebServer
from support.trees import write_atomically as _write

from memconfig import Pipeline, Render, Section, SourceError, events
from memconfig.events import EVENTS, SCHEMA_VERSION, EventSpec

BOOKKEEPING = {"event", "log_level", "render_id"}
FAST = {"backoff": 0.01, "timeout": 5, "retries": 2}


def _pipeline(sources: Sequence[Any], root: Path | None = None, policy: str = "once", **extra: Any) -> Pipeline:
    return plain_pipeline(root, sources, policy, **{"loader": FAST, **extra})


def _by_render(logs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in logs:
        grouped[event["render_id"]].append(event)
    return dict(grouped)


class DropNamed:
    """Leaves out the section with key *key*."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.token = f"drop:{key}"

    def __call__(self, sections: Sequence[Section]) -> Sequence[Section]:
        return [s for s in sections if s.source != self.key]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with two notes and a rules folder."""
    _write(tmp_path / "a.md", "alpha")
    _write(tmp_path / "b.md", "beta")
    _write(tmp_path / "rules" / "one.md", "rule one")
    return tmp_path


# -- the table ----------------------------------------------------------------------------


def test_events_table_is_read_only_and_keyed_by_name() -> None:
    """EVENTS maps each name to its EventSpec, cannot be written, and declares no bookkeeping field."""
    assert isinstance(EVENTS, MappingProxyType)
    assert all(isinstance(spec, EventSpec) and spec.name == name for name, spec in EVENTS.items())
    assert not any(BOOKKEEPING & set(spec.fields) for spec in EVENTS.values())
    with pytest.raises(TypeError):
        EVENTS["other"] = EVENTS["prompt_built"]  # type: ignore[index]


# -- render ids ---------------------------------------------------------------------------


def test_every_event_of_a_render_carries_its_render_id(project: Path) -> None:
    """Each event a build logs carries the render_id the Render reports."""
    with capture_logs() as logs:
        render = _pipeline(["a.md", "missing.md", {"glob": "rules/*.md"}], project).build({})
    assert len(logs) >= 5
    assert {e["render_id"] for e in logs} == {render.render_id}


def test_render_ids_differ_between_renders(project: Path) -> None:
    """Each build, abuild or render has an id of its own, also on the same state."""
    pipeline = _pipeline(["a.md"], project)
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        ids = [
            pipeline.build(state).render_id,
            pipeline.build(state).render_id,
            asyncio.run(pipeline.abuild({})).render_id,
        ]
        pipeline.render(state=state)
    built = [e["render_id"] for e in _events(logs, "prompt_built")]
    assert built[:3] == ids
    assert len(set(built)) == 4


def test_concurrent_threads_have_their_events_told_apart(web: WebServer) -> None:
    """Slow renders in 8 threads, of two configs: each render_id groups exactly its own render's events."""
    urls = [web.serve(f"slow{i}.md", f"text {i}") for i in range(2)]
    for i in range(2):
        web.delay(f"slow{i}.md", 0.3)
    pipelines = [_pipeline([url]) for url in urls]

    def build(n: int) -> tuple[int, Render]:
        return n % 2, pipelines[n % 2].build({})

    with capture_logs() as logs, ThreadPoolExecutor(8) as pool:
        done = list(pool.map(build, range(8)))
    grouped = _by_render(logs)
    assert set(grouped) == {render.render_id for _, render in done}
    for which, render in done:
        events = grouped[render.render_id]
        assert [e["url"] for e in _events(events, "source_loaded")] == [urls[which]]
        [built] = _events(events, "prompt_built")
        assert built["sha256"] == render.sha256


def test_concurrent_tasks_have_their_events_told_apart(web: WebServer) -> None:
    """Two asyncio tasks rendering slow sources at once, over different states, log under different ids."""
    urls = [web.serve(f"t{i}.md", f"task {i}") for i in range(2)]
    for i in range(2):
        web.delay(f"t{i}.md", 0.3)
    pipelines = [_pipeline([url]) for url in urls]

    async def main() -> list[Render]:
        return await asyncio.gather(*(p.abuild({}) for p in pipelines))

    with capture_logs() as logs:
        renders = asyncio.run(main())
    assert web.peak == 2  # the reads were in flight together
    grouped = _by_render(logs)
    assert len({r.render_id for r in renders}) == 2
    for url, render in zip(urls, renders, strict=True):
        events = grouped[render.render_id]
        assert [(e["event"], e.get("url")) for e in events] == [
            ("source_loaded", url),
            ("prompt_manifest", None),
            ("prompt_built", None),
        ]


def test_renders_sharing_one_read_each_log_their_own_events(web: WebServer) -> None:
    """Tasks of one pipeline whose reads are shared still each log the source and their prompt (the block's
    manifest once, by the render that made it)."""
    url = web.serve("shared.md", "shared")
    web.delay("shared.md", 0.3)
    pipeline = _pipeline([url])

    async def main() -> list[Render]:
        return await asyncio.gather(*(pipeline.abuild({}) for _ in range(3)))

    with capture_logs() as logs:
        renders = asyncio.run(main())
    assert web.hits["shared.md"] == 1
    grouped = _by_render(logs)
    for render in renders:
        assert [e["event"] for e in grouped[render.render_id] if e["event"] != "prompt_manifest"] == [
            "source_loaded",
            "prompt_built",
        ]
    assert len([e for e in logs if e["event"] == "prompt_manifest"]) == 1


# -- fields and levels ----------------------------------------------------------------------


def test_every_event_has_exactly_its_declared_fields(project: Path, web: WebServer) -> None:
    """Whatever happens, each event's keys (besides event, log_level, render_id) are its EventSpec's fields."""
    remote = web.serve("flaky.md", "remote text")
    web.fail("flaky.md", 503, times=1)
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "base_dir": str(project),
            "sources": [
                "a.md",
                "b.md",
                "missing.md",
                {"glob": "rules/*.md"},
                remote,
                {"url": "long.md", "max_chars": 100},
                "closes.md",
                {"glob": "cursor/*.mdc", "rules": "frontmatter"},
            ],
            "loader": FAST,
            "cache": {"policy": "revalidate"},
            "formatter": {"preset": "plain", "template": "<memory>\n{agent_memory}\n</memory>"},
        },
        processors=[DropNamed("b.md")],  # long.md is cut by its own max_chars; closes.md's </memory> is escaped
    )
    _write(project / "long.md", "a line of forty characters, more or less\n" * 3)
    _write(project / "closes.md", "early </memory> end")
    _write(project / "cursor" / "bad.mdc", "---\nalwaysApply: yes please\n---\nbad frontmatter")  # invalid
    _write(project / "cursor" / "ts.mdc", "---\nglobs: src/**/*.ts\n---\nno path in play")  # not applicable
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        pipeline.build(state)  # loaded, skipped, expanded, dropped, truncated, escaped, retried, built
        web.fail("flaky.md", 503)
        pipeline.build(state)  # stale
        with pytest.raises(SourceError):
            _pipeline([{"url": "gone.md", "required": True}], project).build({})  # failed
        _write(project / "found" / "AGENTS.override.md", " \n")  # passed over: blank
        (project / "found" / "AGENTS.md").write_bytes(b"bad \xff byte")  # taken, its bad byte replaced
        _write(project / "found" / "x" / "y" / "AGENTS.md", "deep")  # below the one folder searched: limited
        found = {
            "names": ["AGENTS.override.md", "AGENTS.md"],
            "from": "found",
            "root_markers": [],
            "down": {"max_dirs": 1},
        }
        discovery = {"sources": [{"discover": found}], "loader": {"on_decode_error": "replace"}}
        Pipeline.from_config({"version": 1, "base_dir": str(project), **discovery}).build({})  # searched, passed, cut
        watched = {"version": 1, "sources": ["memory://unwatched.md"], "cache": {"policy": "watch"}}
        Pipeline.from_config(watched).build({})  # unwatched (a remote source under watch)
        for written in (True, False):  # render -o FILE's (tests/cli/test_output_file.py runs the command)
            events.output_file(written, "AGENTS.md", "text", 1, "0" * 64, "render-1")
        events.output_failed("AGENTS.md", "text", 1, "0" * 64, "AGENTS.md: No space left on device", "render-1")
    assert {e["event"] for e in logs} == set(EVENTS)
    for event in logs:
        assert set(event) - BOOKKEEPING == set(EVENTS[event["event"]].fields), event["event"]
        spec_level = EVENTS[event["event"]].level
        if spec_level != "by reason":
            assert event["log_level"] == spec_level, event["event"]


def test_prompt_built_carries_the_schema_version(project: Path) -> None:
    """`prompt_built` has `schema` == SCHEMA_VERSION, and its sha256 and chars are the Render's."""
    with capture_logs() as logs:
        render = _pipeline(["a.md"], project).build({})
    [built] = _events(logs, "prompt_built")
    assert built["schema"] == SCHEMA_VERSION
    assert (built["sha256"], built["chars"]) == (render.sha256, len(render.text))


def test_failed_render_logs_one_prompt_failed_naming_every_missing_source(project: Path) -> None:
    """Two required sources missing: one `prompt_failed` listing both, no `prompt_built`, a SourceError with both."""
    pipeline = _pipeline([{"url": "m1.md", "required": True}, "a.md", {"url": "m2.md", "required": True}], project)
    with capture_logs() as logs, pytest.raises(SourceError) as caught:
        pipeline.build({})
    assert _events(logs, "prompt_built") == []
    [failed] = _events(logs, "prompt_failed")
    assert failed["log_level"] == "error"
    assert failed["schema"] == SCHEMA_VERSION
    assert [(f["source"], f["reason"]) for f in failed["failures"]] == [("m1.md", "not_found"), ("m2.md", "not_found")]
    assert all(set(f) == {"source", "name", "url", "reason", "detail"} for f in failed["failures"])
    assert (failed["sources_loaded"], failed["sources_skipped"]) == (1, 2)
    assert [(f.source, f.reason) for f in caught.value.failures] == [("m1.md", "not_found"), ("m2.md", "not_found")]
    message = str(caught.value)
    assert "m1.md" in message and "m2.md" in message
    assert len({e["render_id"] for e in logs}) == 1


def test_required_source_failing_fatally_is_listed_once(project: Path) -> None:
    """A required source with a fatal decode error is one failure, in `prompt_failed` and in the SourceError."""
    (project / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    pipeline = _pipeline(
        [{"url": "bad.md", "required": True}, "a.md"], project, loader={**FAST, "on_decode_error": "fail"}
    )
    with capture_logs() as logs, pytest.raises(SourceError) as caught:
        pipeline.build({})
    [failed] = _events(logs, "prompt_failed")
    assert [(f["source"], f["reason"]) for f in failed["failures"]] == [("bad.md", "decode_error")]
    assert [(f.source, f.reason) for f in caught.value.failures] == [("bad.md", "decode_error")]
    assert str(caught.value).startswith("source 'bad.md' was not loaded")


@pytest.mark.parametrize(
    ("source", "setup", "reason", "level"),
    [
        pytest.param("nowhere.md", None, "not_found", "info", id="optional-not-found"),
        pytest.param("notes/*.md", None, "not_found", "warning", id="a-url-that-looks-like-a-glob"),
        pytest.param({"url": "nowhere.md", "required": True}, None, "not_found", "warning", id="required-not-found"),
        pytest.param("bad.md", b"\xff\xfe not utf-8", "decode_error", "warning", id="decode-error"),
        pytest.param("big.md", b"x" * 64, "too_large", "warning", id="too-large"),
        pytest.param("folder", "dir", "is_directory", "warning", id="is-directory"),
        pytest.param("blank.md", b"  \n\n", "empty", "warning", id="empty"),
    ],
)
def test_skip_levels_follow_the_reason(tmp_path: Path, source: Any, setup: Any, reason: str, level: str) -> None:
    """Optional and not found is info; a required source, or any other reason, is a warning."""
    key = source if isinstance(source, str) else source["url"]
    if setup == "dir":
        (tmp_path / key).mkdir()
    elif setup is not None:
        (tmp_path / key).write_bytes(setup)
    pipeline = _pipeline([source], tmp_path, loader={**FAST, "max_bytes": 32})
    with capture_logs() as logs:
        try:
            pipeline.build({})
        except SourceError:
            assert isinstance(source, dict)
    [skipped] = _events(logs, "source_skipped")
    assert (skipped["source"], skipped["reason"], skipped["log_level"]) == (key, reason, level)


def test_a_missing_url_that_looks_like_a_glob_is_one_warning_saying_so(tmp_path: Path) -> None:
    """`notes/*.md` as a `url:`: its `source_skipped` (a warning) and its record carry the hint, logged once."""
    _write(tmp_path / "notes" / "a.md", "a note")
    pipeline = _pipeline(["notes/*.md"], tmp_path)
    state: dict[str, Any] = {}
    with capture_logs() as logs:
        render = pipeline.build(state)
        pipeline.build(state)
    detail = "no such file; looks like a glob: write `glob:` instead of `url:` to match files"
    [skipped] = _events(logs, "source_skipped")
    assert {k: skipped[k] for k in ("source", "reason", "detail", "required", "log_level")} == {
        "source": "notes/*.md",
        "reason": "not_found",
        "detail": detail,
        "required": False,
        "log_level": "warning",
    }
    assert [(r.source, r.reason, r.detail) for r in render.sources] == [("notes/*.md", "not_found", detail)]


def test_stale_source_is_a_warning(web: WebServer) -> None:
    """A refresh that fails keeps the content and logs `source_stale` at warning, with the content's hash."""
    url = web.serve("team.md", "team rules")
    pipeline = _pipeline([url], policy="revalidate", loader={**FAST, "retries": 0})
    state: dict[str, Any] = {}
    first = pipeline.build(state)
    web.fail("team.md", 503)
    with capture_logs() as logs:
        assert pipeline.build(state).text == "team rules"
    [stale] = _events(logs, "source_stale")
    assert (stale["source"], stale["reason"], stale["log_level"]) == (url, "remote_error", "warning")
    assert stale["sha256"] == first.sources[0].sha256


@pytest.mark.parametrize("use_async", [pytest.param(False, id="build"), pytest.param(True, id="abuild")])
def test_transient_failure_is_retried_once_then_loaded(web: WebServer, use_async: bool) -> None:
    """A 503 then a 200: one `source_retried` (attempt 1, with reason and delay), then `source_loaded`."""
    url = web.fail("flaky.md", 503, times=1)
    web.serve("flaky.md", "finally")
    pipeline = _pipeline([url])
    with capture_logs() as logs:
        render = asyncio.run(pipeline.abuild({})) if use_async else pipeline.build({})
    assert render.text == "finally"
    assert [e["event"] for e in logs] == ["source_retried", "source_loaded", "prompt_manifest", "prompt_built"]
    retried = logs[0]
    assert (retried["source"], retried["attempt"], retried["reason"]) == (url, 1, "remote_error")
    assert "503" in retried["detail"]
    assert 0 <= retried["delay"] <= FAST["backoff"]
    assert retried["log_level"] == "warning"
    assert {e["render_id"] for e in logs} == {render.render_id}
    assert web.hits["flaky.md"] == 2
