"""The state cache: policies, what lives in state, last known good, concurrency."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import plain_pipeline
from support.servers import WebServer
from support.trees import write_atomically as _write

from memconfig import Loader, LoadRequest, LoadResult, Pipeline, SourceError
from memconfig.model import LocalCheck

HANG = 20.0  # seconds a thread waits for another: only a hang takes this long; nothing is timed


def _pipeline(tmp_path: Path, names: Sequence[str], policy: str = "revalidate", **cache: Any) -> Pipeline:
    """The plain pipeline over *names* in *tmp_path*, under ``revalidate`` unless told; *cache*: more cache settings."""
    return plain_pipeline(tmp_path, names, policy, cache=cache)


class CountingLoader:
    """A loader stage that counts what its inner loader actually read."""

    def __init__(self, inner: Loader) -> None:
        self.inner = inner
        self.reads: Counter[str] = Counter()
        self.asked: list[list[str]] = []  # the keys of each call's requests
        self._lock = threading.Lock()

    def _count(self, results: list[LoadResult]) -> list[LoadResult]:
        with self._lock:
            self.reads.update(r.source.key for r in results if r.status == "loaded")
        return results

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        with self._lock:
            self.asked.append([r.source.key for r in requests])
        return self._count(list(self.inner.load(requests)))  # type: ignore[arg-type]

    def changed(self, checks: Sequence[LocalCheck]) -> Sequence[int]:
        """Passed through: a stat-only check reads nothing, so there is nothing to count."""
        return self.inner.changed(checks)  # type: ignore[attr-defined, no-any-return]


class GatedAsyncLoader:
    """A loader stage whose async reads wait for the test to open its gate, as a slow remote source's would.

    ``reading`` is set once a read is under way: from then on it is in flight until ``gate`` is set.
    """

    def __init__(self, inner: Loader) -> None:
        self.inner = inner
        self.reading = threading.Event()
        self.gate = threading.Event()

    async def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        self.reading.set()
        await _until(self.gate.is_set)
        return list(self.inner.load(requests))  # type: ignore[arg-type]


async def _until(check: Callable[[], bool]) -> None:
    """Give the loop to the other tasks until *check* holds; fails only after :data:`HANG`."""
    deadline = time.monotonic() + HANG
    while not check():
        assert time.monotonic() < deadline, "not within HANG"
        await asyncio.sleep(0.001)


def _joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each render's claim on reads another render has in flight (one entry per read it joins), as they come."""
    from memconfig.cache.flights import Flights

    joins: list[int] = []
    real = Flights.claim

    def claim(self: Flights, *args: Any, **kwargs: Any) -> Any:
        made = real(self, *args, **kwargs)
        joins.extend(index for index, _, _ in made.theirs)
        return made

    monkeypatch.setattr(Flights, "claim", claim)
    return joins


def test_once_reads_a_source_once_per_state(tmp_path: Path) -> None:
    """Under `once` an edit is not seen by a state that already loaded, but a new state sees it."""
    _write(tmp_path / "a.md", "v1")
    pipeline = _pipeline(tmp_path, ["a.md"], policy="once")
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "v1"
    _write(tmp_path / "a.md", "v2")
    assert pipeline.render(state=state) == "v1"
    assert pipeline.render(state={}) == "v2"


def test_state_holds_plain_json_in_the_deepagents_shape(tmp_path: Path) -> None:
    """Contents sit under `memory_contents` as {source: text}; everything is JSON-serialisable."""
    _write(tmp_path / "a.md", "alpha")
    state: dict[str, Any] = {}
    _pipeline(tmp_path, ["a.md", "missing.md"]).render(state=state)
    assert state["memory_contents"] == {"a.md": "alpha"}
    assert json.loads(json.dumps(state)) == state
    assert {k: v["reason"] for k, v in state["memory_contents_meta"]["skipped"].items()} == {"missing.md": "not_found"}


def test_custom_state_key(tmp_path: Path) -> None:
    """`cache.state_key` names where contents live."""
    _write(tmp_path / "a.md", "alpha")
    state: dict[str, Any] = {}
    _pipeline(tmp_path, ["a.md"], state_key="notes").render(state=state)
    assert state["notes"] == {"a.md": "alpha"}


def test_revalidate_sees_an_edit_on_the_next_render(tmp_path: Path) -> None:
    """An edited file is in the very next prompt, logged as refreshed."""
    _write(tmp_path / "a.md", "v1")
    _write(tmp_path / "b.md", "b")
    pipeline = _pipeline(tmp_path, ["a.md", "b.md"])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "v1\n\nb"
    _write(tmp_path / "a.md", "v2 edited")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "v2 edited\n\nb"
    loaded = [e for e in logs if e["event"] == "source_loaded"]
    assert [(e["source"], e["cache"]) for e in loaded] == [("a.md", "refreshed")]
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert (built["refreshed"], built["cache_hits"], built["memo"]) == (1, 1, False)


def test_revalidate_reads_only_what_a_stat_found_changed(tmp_path: Path) -> None:
    """After one edit, the loader is asked for that file alone; the others were found as held by a stat."""
    for name in ("a.md", "b.md", "c.md"):
        _write(tmp_path / name, name)
    pipeline = _pipeline(tmp_path, ["a.md", "b.md", "c.md", "gone.md"])
    counting = CountingLoader(pipeline.loader)
    pipeline.loader = counting
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    _write(tmp_path / "b.md", "b, edited")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "a.md\n\nb, edited\n\nc.md"
    assert counting.asked[1:] == [["b.md"]]
    [built] = [e for e in logs if e["event"] == "prompt_built"]
    assert (built["revalidated"], built["refreshed"], built["cache_hits"], built["sources_skipped"]) == (4, 1, 2, 1)
    _write(tmp_path / "gone.md", "here now")
    (tmp_path / "a.md").unlink()
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "b, edited\n\nc.md\n\nhere now"
    assert counting.asked[2:] == [["a.md", "gone.md"]]
    assert [(e["event"], e["source"]) for e in logs if e["event"].startswith("source_")] == [
        ("source_skipped", "a.md"),
        ("source_loaded", "gone.md"),
    ]


def test_unchanged_turn_writes_one_line(tmp_path: Path) -> None:
    """A render that finds nothing changed logs only `prompt_built`, with the block from the memo."""
    for name in ("a.md", "b.md"):
        _write(tmp_path / name, name)
    pipeline = _pipeline(tmp_path, ["a.md", "b.md", "gone.md"])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    with capture_logs() as logs:
        pipeline.render(state=state)
    assert [e["event"] for e in logs] == ["prompt_built"]
    assert (logs[0]["cache_hits"], logs[0]["revalidated"], logs[0]["memo"], logs[0]["sources_skipped"]) == (
        2,
        3,
        True,
        1,
    )


def test_resumed_thread_sees_edits(tmp_path: Path) -> None:
    """A state checkpointed as JSON and restored in a new pipeline picks up edits under revalidate."""
    _write(tmp_path / "a.md", "v1")
    state: dict[str, Any] = {}
    _pipeline(tmp_path, ["a.md"]).render(state=state)
    saved = json.dumps(state)
    _write(tmp_path / "a.md", "v2")
    assert _pipeline(tmp_path, ["a.md"]).render(state=json.loads(saved)) == "v2"


def test_ttl_revalidates_only_when_due(tmp_path: Path) -> None:
    """Under `ttl` an edit shows up once the last check is older than `cache.ttl`."""
    _write(tmp_path / "a.md", "v1")
    pipeline = _pipeline(tmp_path, ["a.md"], policy="ttl", ttl=3600)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    _write(tmp_path / "a.md", "v2")
    assert pipeline.render(state=state) == "v1"
    state["memory_contents_meta"]["checked_at"] -= 7200  # an hour passes
    assert pipeline.render(state=state) == "v2"


def test_always_rereads_everything(tmp_path: Path) -> None:
    """Under `always` every render reads every source; unchanged bytes still count as hits."""
    _write(tmp_path / "a.md", "a")
    pipeline = _pipeline(tmp_path, ["a.md"], policy="always")
    counting = CountingLoader(pipeline.loader)
    pipeline.loader = counting
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    _write(tmp_path / "a.md", "b")
    assert pipeline.render(state=state) == "b"
    assert counting.reads["a.md"] == 2


def test_deleted_source_leaves_the_prompt(tmp_path: Path) -> None:
    """A file deleted for real is skipped as not_found and its content is gone."""
    _write(tmp_path / "a.md", "a")
    _write(tmp_path / "b.md", "b")
    pipeline = _pipeline(tmp_path, ["a.md", "b.md"])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    (tmp_path / "a.md").unlink()
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "b"
    assert [(e["source"], e["reason"]) for e in logs if e["event"] == "source_skipped"] == [("a.md", "not_found")]
    assert "a.md" not in state["memory_contents"]


def test_glob_picks_up_new_and_removed_matches(tmp_path: Path) -> None:
    """Under revalidate a glob is expanded again: new files join, removed ones leave with a skip."""
    rules = tmp_path / "rules"
    rules.mkdir()
    _write(rules / "a.md", "a")
    pipeline = _pipeline(tmp_path, [{"glob": "rules/*.md"}])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "a"
    _write(rules / "b.md", "b")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "a\n\nb"
    [expanded] = [e for e in logs if e["event"] == "source_expanded"]
    assert (expanded["count"], expanded["matches"]) == (2, ["rules/a.md", "rules/b.md"])
    (rules / "a.md").unlink()
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "b"
    assert ("rules/a.md", "not_found") in [(e["source"], e["reason"]) for e in logs if e["event"] == "source_skipped"]


def test_concurrent_renders_after_a_change_fetch_once(tmp_path: Path) -> None:
    """50 threads rendering after an edit, each with its own state, cause one read of the changed file."""
    _write(tmp_path / "a.md", "v1")
    _write(tmp_path / "b.md", "b")
    pipeline = _pipeline(tmp_path, ["a.md", "b.md"])
    counting = CountingLoader(pipeline.loader)
    pipeline.loader = counting
    states: list[dict[str, Any]] = [{} for _ in range(50)]
    for state in states:
        pipeline.render(state=state)
    assert counting.reads == Counter({"a.md": 1, "b.md": 1})
    _write(tmp_path / "a.md", "v2")
    barrier = threading.Barrier(50)
    outputs: list[str] = []

    def render(state: dict[str, Any]) -> None:
        barrier.wait()
        outputs.append(pipeline.render(state=state))

    threads = [threading.Thread(target=render, args=(s,)) for s in states]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outputs == ["v2\n\nb"] * 50
    assert counting.reads == Counter({"a.md": 2, "b.md": 1})


def test_concurrent_tasks_share_one_fetch(tmp_path: Path) -> None:
    """50 asyncio tasks rendering at once on a cold state read each file once."""
    _write(tmp_path / "a.md", "a")
    pipeline = _pipeline(tmp_path, ["a.md"])
    counting = CountingLoader(pipeline.loader)
    pipeline.loader = counting

    async def main() -> list[str]:
        return await asyncio.gather(*(pipeline.arender(state={}) for _ in range(50)))

    assert asyncio.run(main()) == ["a"] * 50
    assert counting.reads["a.md"] == 1


def test_many_threads_never_see_a_mixed_prompt(tmp_path: Path) -> None:
    """32 threads x 1,000 renders while files change: no exception, every section a whole version."""
    names = [f"f{i}.md" for i in range(4)]
    for name in names:
        _write(tmp_path / name, f"{name}:0:" + "x" * 50)
    pipeline = _pipeline(tmp_path, names)
    shared: dict[str, Any] = {}
    errors: list[BaseException] = []
    stop = threading.Event()
    seen: set[str] = set()

    def writer() -> None:
        version = 0
        while not stop.is_set():
            version += 1
            for name in names:
                _write(tmp_path / name, f"{name}:{version}:" + "x" * (50 + version % 7))

    def reader(own_state: bool) -> None:
        state: dict[str, Any] = {} if own_state else shared
        try:
            for _ in range(1000):
                prompt = pipeline.render(state=state)
                sections = prompt.split("\n\n")
                assert len(sections) == len(names)
                for name, section in zip(names, sections, strict=True):
                    head, version, tail = section.split(":")
                    assert head == name and tail == "x" * (50 + int(version) % 7)
                seen.add(prompt)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    background = threading.Thread(target=writer)
    background.start()
    threads = [threading.Thread(target=reader, args=(i % 2 == 0,)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    background.join()
    assert errors == []
    assert len(seen) > 1  # the files really changed under the readers


# -- last known good, against a real HTTP server -----------------------------------

FAST = {"timeout": 2, "retries": 0, "backoff": 0.01}


@pytest.fixture
def web() -> Iterator[WebServer]:
    """An aiohttp server on 127.0.0.1 for one test (tests here stop and restart it)."""
    server = WebServer().start()
    yield server
    server.stop()


def _remote(urls: list[Any], policy: str = "revalidate") -> Pipeline:
    return Pipeline.from_config(
        {"version": 1, "sources": urls, "loader": FAST, "cache": {"policy": policy}, "formatter": {"preset": "plain"}}
    )


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def test_killed_server_keeps_last_good_copy_until_it_returns(web: WebServer) -> None:
    """Server down after a first render: the source stays (logged stale); back up: loaded again."""
    url = web.serve("rules.md", "team rules", etag="v1")
    local = web.serve("other.md", "other")
    pipeline = _remote([url, {"url": local, "required": False}])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "team rules\n\nother"
    port = web.port
    web.stop()
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "team rules\n\nother"
    stale = _events(logs, "source_stale")
    assert [(e["source"], e["reason"]) for e in stale] == [(url, "remote_error"), (local, "remote_error")]
    assert "Connect" in stale[0]["detail"]
    assert _events(logs, "prompt_built")[0]["stale"] == 2
    web.start(port)
    web.serve("rules.md", "team rules", etag="v1")
    web.serve("other.md", "other")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "team rules\n\nother"
    assert [(e["source"], e["cache"]) for e in _events(logs, "source_loaded")] == [
        (url, "refreshed"),
        (local, "refreshed"),
    ]
    with capture_logs() as logs:
        pipeline.render(state=state)
    assert [e["event"] for e in logs] == ["prompt_built"]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(503, "remote_error", id="5xx"),
        pytest.param(429, "remote_error", id="throttled"),
        pytest.param(403, "permission_denied", id="permission-flapping"),
    ],
)
def test_transient_failure_on_revalidation_is_stale(web: WebServer, status: int, reason: str) -> None:
    """A failing refresh keeps the last good content and says why."""
    url = web.serve("a.md", "good copy")
    pipeline = _remote([url])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    web.fail("a.md", status)
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "good copy"
    [stale] = _events(logs, "source_stale")
    assert (stale["reason"], str(status) in stale["detail"]) == (reason, True)


def test_timeout_on_revalidation_is_stale(web: WebServer) -> None:
    """A refresh that times out keeps the last good content."""
    url = web.serve("slow.md", "good copy")
    pipeline = Pipeline.from_config(
        {"version": 1, "sources": [{"url": url, "timeout": 0.3}], "loader": FAST, "cache": {"policy": "always"}}
    )
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    web.delay("slow.md", 2)
    with capture_logs() as logs:
        assert "good copy" in pipeline.render(state=state)
    assert [e["reason"] for e in _events(logs, "source_stale")] == ["timeout"]


def test_deleted_remote_source_leaves_the_prompt(web: WebServer) -> None:
    """A 404 after a good load is a real deletion: skipped as not_found, gone from the prompt."""
    url = web.serve("a.md", "soon gone")
    keep = web.serve("b.md", "stays")
    pipeline = _remote([url, keep])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    del web.files["a.md"]
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "stays"
    assert [(e["source"], e["reason"]) for e in _events(logs, "source_skipped")] == [(url, "not_found")]


def test_required_source_fails_only_without_a_good_copy(web: WebServer) -> None:
    """A stale required source still renders (even for a new state); with no copy anywhere it fails."""
    url = web.serve("must.md", "must have")
    pipeline = _remote([{"url": url, "required": True}])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    web.fail("must.md", 503)
    assert pipeline.render(state=state) == "must have"
    assert pipeline.render(state={}) == "must have"  # the process still holds the last good copy
    with pytest.raises(SourceError, match=r"must\.md.*remote_error"):
        _remote([{"url": url, "required": True}]).render(state={})


def test_server_without_validators_is_compared_by_content(web: WebServer) -> None:
    """With no ETag or Last-Modified, revalidation reads the body and compares hashes."""
    url = web.serve("plain.md", "same words")
    pipeline = _remote([url])
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "same words"
    assert [e["event"] for e in logs] == ["prompt_built"]
    assert logs[0]["cache_hits"] == 1
    web.serve("plain.md", "new words")
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "new words"
    assert [e["cache"] for e in _events(logs, "source_loaded")] == ["refreshed"]


def test_revalidated_http_sources_are_checked_concurrently(web: WebServer) -> None:
    """Checking 20 unchanged sources takes about one round trip, not twenty."""
    urls = [web.serve(f"f{i}.md", f"file {i}", etag=f"e{i}") for i in range(20)]
    for i in range(20):
        web.delay(f"f{i}.md", 0.2)
    pipeline = _remote(urls)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    web.peak = 0
    pipeline.render(state=state)
    assert web.peak == 20


@pytest.mark.parametrize("policy", ["once", "revalidate"])
def test_editing_the_config_reaches_a_loaded_state(tmp_path: Path, policy: str) -> None:
    """A source added to or removed from the YAML shows up for a state loaded under the old config."""
    for name in ("a.md", "b.md"):
        _write(tmp_path / name, name)
    state: dict[str, Any] = {}
    assert _pipeline(tmp_path, ["a.md"], policy=policy).render(state=state) == "a.md"
    with capture_logs() as logs:
        assert _pipeline(tmp_path, ["a.md", "b.md"], policy=policy).render(state=state) == "a.md\n\nb.md"
    loaded = [(e["source"], e["cache"]) for e in logs if e["event"] == "source_loaded"]
    assert loaded == [("a.md", "hit"), ("b.md", "miss")]  # a new configuration reads everything once
    assert _pipeline(tmp_path, ["b.md"], policy=policy).render(state=state) == "b.md"
    assert state["memory_contents"] == {"b.md": "b.md"}


def test_renamed_or_newly_required_source_reaches_a_loaded_state(tmp_path: Path) -> None:
    """Under `once`, a name changed in the YAML shows in the next prompt; a newly required missing file fails it."""
    _write(tmp_path / "a.md", "alpha")

    def pipeline(name: str, required: bool) -> Pipeline:
        sources = [{"url": "a.md", "name": name}, {"url": "missing.md", "required": required}]
        return Pipeline.from_config(
            {"version": 1, "base_dir": str(tmp_path), "sources": sources, "formatter": {"preset": "markdown"}}
        )

    state: dict[str, Any] = {}
    assert pipeline("Old name", False).render(state=state) == "## Old name\n\nalpha"
    state = json.loads(json.dumps(state))
    assert pipeline("New name", False).render(state=state) == "## New name\n\nalpha"
    with pytest.raises(SourceError, match=r"missing\.md"):
        pipeline("New name", True).render(state=state)


def test_fatal_decode_error_fails_every_render_until_fixed(tmp_path: Path) -> None:
    """`on_decode_error: fail` fails each render under `once`, not just the first; fixing the file ends it."""
    (tmp_path / "bad.md").write_bytes(b"\xff")
    pipeline = Pipeline.from_config(
        {"version": 1, "base_dir": str(tmp_path), "sources": ["bad.md"], "loader": {"on_decode_error": "fail"}}
    )
    state: dict[str, Any] = {}
    for _ in range(2):
        with pytest.raises(SourceError, match="decode_error"):
            pipeline.render(state=state)
    _write(tmp_path / "bad.md", "fixed")
    assert "fixed" in pipeline.render(state=state)


def test_slower_pass_never_puts_back_an_older_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass that read v2 but merges after a later pass stored v3 leaves v3 in place."""
    from memconfig.cache import PolicyCache

    path = tmp_path / "a.md"
    _write(path, "v1")
    pipeline = _pipeline(tmp_path, ["a.md"], policy="ttl", ttl=3600)
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    _write(path, "v2 longer")
    state["memory_contents_meta"]["checked_at"] = 0  # due for a check
    real = PolicyCache._merge
    read, merge = threading.Event(), threading.Event()

    def late_merge(self: PolicyCache, *args: Any) -> Any:
        if threading.current_thread().name == "slow":  # descheduled between its read and its merge
            read.set()
            assert merge.wait(HANG)
        return real(self, *args)

    monkeypatch.setattr(PolicyCache, "_merge", late_merge)
    slow = threading.Thread(target=lambda: pipeline.render(state=state), name="slow")
    slow.start()
    assert read.wait(HANG)  # the slow pass has read v2
    _write(path, "v3 the newest")
    state["memory_contents_meta"]["checked_at"] = 0
    assert pipeline.render(state=state) == "v3 the newest"
    merge.set()  # only now does the slow pass merge its v2
    slow.join()
    assert state["memory_contents"] == {"a.md": "v3 the newest"}
    assert pipeline.render(state=state) == "v3 the newest"


def test_cancelled_render_does_not_fail_the_renders_sharing_its_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling the task that reads a source leaves the tasks waiting for that read to finish on their own."""
    _write(tmp_path / "a.md", "alpha")
    pipeline = _pipeline(tmp_path, ["a.md"])
    gated = GatedAsyncLoader(pipeline.loader)
    pipeline.loader = gated
    joins = _joins(monkeypatch)

    async def main() -> str:
        reader = asyncio.create_task(pipeline.arender(state={}))
        await _until(gated.reading.is_set)  # the reader's read is in flight
        waiter = asyncio.create_task(pipeline.arender(state={}))
        await _until(lambda: len(joins) == 1)  # the waiter waits for that read
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        gated.gate.set()
        return await waiter

    assert asyncio.run(main()) == "alpha"


def test_sync_render_inside_an_event_loop_does_not_wait_on_that_loop(tmp_path: Path) -> None:
    """A blocking render called from async code while a task of the same loop reads the source still returns."""
    _write(tmp_path / "a.md", "alpha")
    pipeline = _pipeline(tmp_path, ["a.md"])
    gated = GatedAsyncLoader(pipeline.loader)
    pipeline.loader = gated

    async def main() -> tuple[str, str]:
        task = asyncio.create_task(pipeline.arender(state={}))
        await _until(gated.reading.is_set)  # the task's read is in flight, and stays so while this loop is blocked
        gated.gate.set()
        blocking = pipeline.render(state={})  # would wait forever for the task it blocks
        return blocking, await task

    assert asyncio.run(asyncio.wait_for(main(), 10)) == ("alpha", "alpha")


def test_unchanged_turn_reads_nothing_even_with_a_skipped_file(tmp_path: Path) -> None:
    """Under `revalidate`, an empty file that stays as it is is not read again turn after turn."""
    _write(tmp_path / "a.md", "alpha")
    _write(tmp_path / "template.md", "  \n\n")
    pipeline = _pipeline(tmp_path, ["a.md", "template.md", "missing.md"])
    counting = CountingLoader(pipeline.loader)
    calls: list[int] = []
    inner_load = counting.load
    counting.load = lambda requests: (calls.append(len(requests)), inner_load(requests))[1]  # type: ignore[method-assign]
    pipeline.loader = counting
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    calls.clear()
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "alpha"
    assert calls == []
    assert [e["event"] for e in logs] == ["prompt_built"]
    _write(tmp_path / "template.md", "now filled in")
    assert pipeline.render(state=state) == "alpha\n\nnow filled in"


# -- what the state says, kept true ---------------------------------------------


def test_key_deleted_from_contents_is_read_again(tmp_path: Path) -> None:
    """Deleting a source's key from `memory_contents` (deepagents' way to force a reload) reloads it."""
    _write(tmp_path / "a.md", "v1")
    pipeline = _pipeline(tmp_path, ["a.md"], policy="once")
    state: dict[str, Any] = {}
    pipeline.render(state=state)
    _write(tmp_path / "a.md", "v2")
    del state["memory_contents"]["a.md"]
    assert pipeline.render(state=state) == "v2"


def test_adopted_deepagents_state_expands_its_globs(tmp_path: Path) -> None:
    """A state written without meta still gets its glob sources expanded and loaded under `once`."""
    (tmp_path / "rules").mkdir()
    _write(tmp_path / "rules" / "r.md", "rule")
    _write(tmp_path / "a.md", "alpha")
    state: dict[str, Any] = {"memory_contents": {"a.md": "alpha"}}
    assert _pipeline(tmp_path, ["a.md", {"glob": "rules/*.md"}], policy="once").render(state=state) == "alpha\n\nrule"


def test_changing_comment_stripping_reaches_a_loaded_state(tmp_path: Path) -> None:
    """A comment-only file left out as empty comes in once the config stops stripping comments."""
    _write(tmp_path / "notes.md", "<!-- only a comment -->")

    def pipeline(strip: bool) -> Pipeline:
        formatter = {"preset": "plain", "strip_html_comments": strip}
        return Pipeline.from_config(
            {"version": 1, "base_dir": str(tmp_path), "sources": ["notes.md"], "formatter": formatter}
        )

    state: dict[str, Any] = {}
    assert pipeline(True).render(state=state) == ""
    assert pipeline(False).render(state=state) == "<!-- only a comment -->"


def test_stamps_from_another_process_do_not_hide_edits(tmp_path: Path) -> None:
    """A checkpoint written on a host whose clock ran ahead still sees the next edit."""
    _write(tmp_path / "a.md", "v1")
    state: dict[str, Any] = {}
    _pipeline(tmp_path, ["a.md"]).render(state=state)
    for entry in state["memory_contents_meta"]["entries"]:
        entry["read"] = ["another-host", 1e12]
    restored = json.loads(json.dumps(state))
    _write(tmp_path / "a.md", "v2 edited")
    assert _pipeline(tmp_path, ["a.md"]).render(state=restored) == "v2 edited"


def test_glob_match_also_listed_on_its_own_appears_once(tmp_path: Path) -> None:
    """A file named by a source and matched by a glob is in the prompt once; deleting it breaks nothing."""
    (tmp_path / "rules").mkdir()
    _write(tmp_path / "rules" / "a.md", "a")
    _write(tmp_path / "rules" / "b.md", "b")
    pipeline = _pipeline(tmp_path, ["rules/a.md", {"glob": "rules/*.md"}])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "a\n\nb"
    (tmp_path / "rules" / "a.md").unlink()
    assert pipeline.render(state=state) == "b"


def test_removed_source_no_longer_counts_as_skipped(tmp_path: Path) -> None:
    """After a missing source is taken out of the YAML, `prompt_built` stops counting it."""
    _write(tmp_path / "a.md", "a")
    state: dict[str, Any] = {}
    _pipeline(tmp_path, ["a.md", "missing.md"]).render(state=state)
    with capture_logs() as logs:
        _pipeline(tmp_path, ["a.md"]).render(state=state)
    assert _events(logs, "prompt_built")[0]["sources_skipped"] == 0


def test_cancelled_owner_hands_its_read_to_one_waiter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the task reading for ten others is cancelled, one of them reads; not all ten."""
    _write(tmp_path / "a.md", "alpha")
    pipeline = _pipeline(tmp_path, ["a.md"])
    counting = CountingLoader(pipeline.loader)
    gated = GatedAsyncLoader(counting)
    pipeline.loader = gated
    joins = _joins(monkeypatch)

    async def main() -> list[str]:
        owner = asyncio.create_task(pipeline.arender(state={}))
        await _until(gated.reading.is_set)  # the owner's read is in flight
        waiters = [asyncio.create_task(pipeline.arender(state={})) for _ in range(10)]
        await _until(lambda: len(joins) == 10)  # the ten wait for it
        owner.cancel()
        await _until(lambda: len(joins) == 19)  # one took the read over, the nine others wait for that one's
        gated.gate.set()
        return await asyncio.gather(*waiters)

    assert asyncio.run(main()) == ["alpha"] * 10
    assert counting.reads["a.md"] == 1


def test_repointed_source_does_not_keep_the_old_locations_text(web: WebServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """If `${VAR}` moves a source to a failing URL, the text from its old URL is not served as last good."""
    web.serve("tenant-a.md", "tenant A rules")
    web.fail("tenant-b.md", 503)
    config = {"version": 1, "sources": ["${RULES_URL}"], "loader": FAST, "formatter": {"preset": "plain"}}
    state: dict[str, Any] = {}
    monkeypatch.setenv("RULES_URL", web.url("tenant-a.md"))
    assert Pipeline.from_config(config).render(state=state) == "tenant A rules"
    monkeypatch.setenv("RULES_URL", web.url("tenant-b.md"))
    with capture_logs() as logs:
        assert Pipeline.from_config(config).render(state=state) == ""
    assert [e["reason"] for e in _events(logs, "source_skipped")] == ["remote_error"]


def test_rotated_signed_url_does_not_force_a_reread(web: WebServer) -> None:
    """Under `once`, a new signature in a source's URL (same masked form) keeps the loaded state as it is."""
    web.serve("signed.md", "signed content")
    state: dict[str, Any] = {}

    def pipeline(signature: str) -> Pipeline:
        return _remote([web.url(f"signed.md?X-Amz-Signature={signature}")], policy="once")

    assert pipeline("first").render(state=state) == "signed content"
    web.methods.clear()
    assert pipeline("second").render(state=state) == "signed content"
    assert sum(web.methods.values()) == 0
    assert "first" not in json.dumps(state) and "second" not in json.dumps(state)


def test_remote_file_left_out_as_empty_is_not_downloaded_again(web: WebServer) -> None:
    """An empty remote file with an ETag costs a HEAD per revalidation, not a GET."""
    empty = web.serve("empty.md", "", etag="e1")
    full = web.serve("full.md", "full", etag="f1")
    pipeline = _remote([empty, full])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "full"
    web.methods.clear()
    for _ in range(3):
        assert pipeline.render(state=state) == "full"
    assert web.methods["GET", "empty.md"] == 0


def test_fingerprint_found_later_is_used_for_every_state(web: WebServer) -> None:
    """A file read too soon after its edit to trust its Last-Modified is checked with a HEAD once that settles."""
    url = web.serve("fresh.md", "just edited", last_modified=time.time())
    pipeline = _remote([url])
    state: dict[str, Any] = {}
    assert pipeline.render(state=state) == "just edited"
    time.sleep(2.2)  # the Last-Modified is now old enough to tell same-second edits apart
    assert pipeline.render(state=state) == "just edited"
    web.methods.clear()
    for target in (state, {}):
        assert pipeline.render(state=target) == "just edited"
    assert (web.methods["GET", "fresh.md"], web.methods["HEAD", "fresh.md"]) == (0, 2)
