"""One read per file per render, however many sources reach it: a ``url:`` and a glob's match, two spellings, a link.

The cache still decides which source puts the file in the prompt (each other
one is a ``duplicate`` skip, as before); these tests count what the servers
saw, and for local files what the kernel saw (inotify).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.opens import Opens, can_count_opens
from support.pipelines import events_named, plain_pipeline
from support.servers import Bucket, WebServer

from memconfig import Pipeline

FAST = {"backoff": 0.01, "timeout": 2.0, "retries": 2}
_INDEX = '<html><body><a href="a.md">a.md</a> <a href="b.md">b.md</a></body></html>'


@pytest.fixture
def rules(web: WebServer) -> WebServer:
    """The web server with ``rules/a.md`` and ``rules/b.md`` (each with an ETag), and ``rules/`` listing them."""
    web.serve("rules/", _INDEX)
    web.headers["rules/"]["Content-Type"] = "text/html"
    web.serve("rules/a.md", "rule a", etag="a1")
    web.serve("rules/b.md", "rule b", etag="b1")
    return web


def _pipeline(root: Path, sources: list[Any], policy: str = "once", **sections: Any) -> Pipeline:
    return plain_pipeline(root, sources, policy, loader=FAST, **sections)


def _repeats(logs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["source"], e["detail"]) for e in events_named(logs, "source_skipped") if e["reason"] == "duplicate"]


def _a_requests(web: WebServer) -> dict[str, int]:
    return {method: n for (method, path), n in web.methods.items() if path == "rules/a.md"}


def _spelled(url: str) -> str:
    """Another spelling of *url*: the same place (RFC 3986), written otherwise."""
    return url.replace("/rules/a.md", "/rules/x/../%61.md")


@pytest.mark.parametrize("how", ["build", "abuild"])
def test_a_url_and_a_glob_matching_it_get_the_file_once(tmp_path: Path, rules: WebServer, how: str) -> None:
    """One GET of ``a.md``, not two; the glob's match is still the ``duplicate`` of the declared URL."""
    url, glob = rules.url("rules/a.md"), rules.url("rules/*.md")
    pipeline = _pipeline(tmp_path, [url, {"glob": glob}])
    with capture_logs() as logs:
        render = pipeline.build() if how == "build" else asyncio.run(pipeline.abuild())
    assert render.text == "rule a\n\nrule b"
    assert dict(rules.methods) == {("GET", "rules/"): 1, ("GET", "rules/a.md"): 1, ("GET", "rules/b.md"): 1}
    assert _repeats(logs) == [(f"{url} (via {glob})", f"the same file as {url!r}")]


def test_two_spellings_of_one_url_get_it_once(tmp_path: Path, rules: WebServer) -> None:
    """The prompt holds the file once (the second spelling is its ``duplicate``), and it was fetched once."""
    url = rules.url("rules/a.md")
    with capture_logs() as logs:
        render = _pipeline(tmp_path, [url, _spelled(url)]).build()
    assert render.text == "rule a"
    assert _a_requests(rules) == {"GET": 1}
    assert _repeats(logs) == [(_spelled(url), f"the same file as {url!r}")]
    assert [(r.source, r.status, r.reason) for r in render.sources] == [
        (url, "loaded", None),
        (_spelled(url), "skipped", "duplicate"),
    ]


@pytest.mark.parametrize("second", ["glob", "spelling"])
def test_under_revalidate_each_url_is_checked_once_per_render(tmp_path: Path, rules: WebServer, second: str) -> None:
    """A later render sends one HEAD for ``a.md`` (none for its repeat); once it changes, one HEAD and one GET."""
    url = rules.url("rules/a.md")
    other = {"glob": rules.url("rules/*.md")} if second == "glob" else _spelled(url)
    pipeline, state = _pipeline(tmp_path, [url, other], "revalidate"), {}  # type: ignore[var-annotated]
    first = pipeline.render(state=state)
    assert "rule a" in first
    rules.methods.clear()
    assert pipeline.render(state=state) == first
    assert _a_requests(rules) == {"HEAD": 1}
    rules.serve("rules/a.md", "rule a, edited", etag="a2")
    rules.methods.clear()
    with capture_logs() as logs:
        render = pipeline.build(state)
    assert render.text.startswith("rule a, edited")
    assert _a_requests(rules) == {"HEAD": 1, "GET": 1}
    assert _repeats(logs) == []  # still the same repeat: told once, when it became one
    repeat = [r for r in render.sources if r.reason == "duplicate"]
    assert [(r.status, r.detail) for r in repeat] == [("skipped", f"the same file as {url!r}")]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"storage_options": {"headers": {"Authorization": "Bearer team-token"}}}, id="headers"),
        pytest.param({"timeout": 5}, id="timeout"),
    ],
)
def test_a_source_asking_with_other_options_reads_for_itself(
    tmp_path: Path, rules: WebServer, options: dict[str, Any]
) -> None:
    """Other credentials or another timeout: its own request, with its own options; the prompt holds the file once."""
    url = rules.url("rules/a.md")
    with capture_logs() as logs:
        text = _pipeline(tmp_path, [url, {"url": _spelled(url), **options}]).render()
    assert text == "rule a"
    assert _a_requests(rules) == {"GET": 2}
    if "storage_options" in options:
        assert sorted(rules.auth, key=str) == ["Bearer team-token", None]
    assert _repeats(logs) == [(_spelled(url), f"the same file as {url!r}")]


def test_a_retry_is_made_once_for_every_source_waiting_on_the_read(tmp_path: Path, web: WebServer) -> None:
    """A 503 then a good answer: two requests in all, one ``source_retried`` (the reading source's)."""
    url = web.serve("rules/a.md", "flaky rules")
    web.fail("rules/a.md", 503, times=1)
    with capture_logs() as logs:
        text = _pipeline(tmp_path, [url, _spelled(url)]).render()
    assert text == "flaky rules"
    assert web.hits["rules/a.md"] == 2
    assert [e["source"] for e in events_named(logs, "source_retried")] == [url]


def test_a_missing_file_is_asked_for_once_and_each_source_says_so(tmp_path: Path, web: WebServer) -> None:
    """A 404 shared by two spellings: one request, and each source its own ``not_found`` skip."""
    url = web.url("rules/a.md")
    with capture_logs() as logs:
        assert _pipeline(tmp_path, [url, _spelled(url)]).render() == ""
    assert web.hits["rules/a.md"] == 1
    skipped = events_named(logs, "source_skipped")
    assert [(e["source"], e["reason"]) for e in skipped] == [(url, "not_found"), (_spelled(url), "not_found")]


def test_an_s3_url_and_a_glob_matching_it_get_the_object_once(tmp_path: Path, web: WebServer, bucket: Bucket) -> None:
    """Through a counting proxy in front of moto: one GET of the object per render, then one HEAD under revalidate."""
    url = bucket.put("rules/a.md", "s3 rule a")
    bucket.put("rules/b.md", "s3 rule b")
    web.forward(bucket.server.endpoint_url)
    storage = {"s3": bucket.server.options(endpoint_url=f"http://127.0.0.1:{web.port}")}
    glob = f"s3://{bucket.name}/rules/*.md"
    pipeline, state = _pipeline(tmp_path, [url, {"glob": glob}], "revalidate", storage=storage), {}  # type: ignore[var-annotated]
    with capture_logs() as logs:
        assert pipeline.render(state=state) == "s3 rule a\n\ns3 rule b"
    a = f"{bucket.name}/rules/a.md"
    assert (web.methods["GET", a], web.methods["HEAD", a]) == (1, 0)
    assert _repeats(logs) == [(f"{url} (via {glob})", f"the same file as {url!r}")]
    web.methods.clear()
    assert pipeline.render(state=state) == "s3 rule a\n\ns3 rule b"
    assert (web.methods["GET", a], web.methods["HEAD", a]) == (0, 1)


@pytest.mark.skipif(not can_count_opens(), reason="counts opens with inotify (Linux)")
@pytest.mark.parametrize(
    "sources",
    [
        pytest.param(["a.md", {"glob": "*.md"}], id="url-and-glob"),
        pytest.param(["a.md", "link-to-a.md"], id="symlink"),
        pytest.param(["a.md", "./a.md"], id="spelling"),
    ],
)
def test_a_local_file_several_sources_reach_is_opened_once_per_render(tmp_path: Path, sources: list[Any]) -> None:
    """Each path is checked on its own; the file is opened once when read, and not at all while unchanged."""
    (tmp_path / "a.md").write_text("local rule a")
    (tmp_path / "b.md").write_text("local rule b")
    os.symlink(tmp_path / "a.md", tmp_path / "link-to-a.md")
    pipeline, state = _pipeline(tmp_path, sources, "revalidate"), {}  # type: ignore[var-annotated]
    with Opens(tmp_path / "a.md") as opens, capture_logs() as logs:
        assert pipeline.render(state=state).startswith("local rule a")
        assert opens.count() == 1
        assert pipeline.render(state=state).startswith("local rule a")
        assert opens.count() == 0
        (tmp_path / "a.md").write_text("local rule a, edited")
        opens.count()  # the edit's own
        assert pipeline.render(state=state).startswith("local rule a, edited")
        assert opens.count() == 1
    assert _repeats(logs)  # the repeats are told as before
