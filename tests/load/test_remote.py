"""Remote sources against real servers and real artifacts: HTTP, S3, zip, git, globs, errors and secrets.

Every server here is real and on loopback: an aiohttp application
(:class:`servers.WebServer`) and moto's S3 API server (:class:`servers.S3Server`),
each started and stopped by a fixture. Zip bundles are made with :mod:`zipfile`,
git repositories with the ``git`` command. Nothing in fsspec, aiohttp or boto
is mocked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from support.cli import memconfig
from support.servers import Bucket, WebServer

from memconfig import ConfigError, FsspecLoader, LoadRequest, Pipeline, Source, SourceError, load_config
from memconfig.cli import main
from memconfig.drive import arun
from memconfig.install import install_hint
from memconfig.sources import build_sources

FAST = {"backoff": 0.01, "timeout": 2.0, "retries": 2}


# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def web_server() -> Iterator[WebServer]:
    """One aiohttp server for the module; :func:`web` resets it per test."""
    server = WebServer().start()
    yield server
    server.stop()
    assert_closed(server.port)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A real zip file holding ``AGENTS.md`` and ``rules/{AGENTS,a,b}.md``."""
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("AGENTS.md", "bundle top level")
        archive.writestr("rules/AGENTS.md", "bundle rules")
        archive.writestr("rules/b.md", "bundle b")
        archive.writestr("rules/a.md", "bundle a")
    return path


@dataclass
class Repo:
    path: Path
    first: str  # the first commit, tagged v1
    git: Callable[..., str]

    def commit(self, text: str) -> None:
        """Commit a new AGENTS.md on ``main``."""
        (self.path / "AGENTS.md").write_text(text, encoding="utf-8")
        self.git("commit", "-q", "-a", "-m", text.strip())


@pytest.fixture
def git_repo(tmp_path: Path) -> Repo:
    """A git repository made with the git CLI: two commits of AGENTS.md, the first tagged ``v1``."""
    path = tmp_path / "repo"
    path.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(path), "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    (path / "AGENTS.md").write_text("version one\n", encoding="utf-8")
    git("add", "AGENTS.md")
    git("commit", "-q", "-m", "one")
    git("tag", "v1")
    repo = Repo(path, git("rev-parse", "HEAD"), git)
    repo.commit("version two\n")
    return repo


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Cli]:
    """Run the command line in this process (the function the console script calls); faster than a subprocess."""

    def run(*args: str) -> Cli:
        capsys.readouterr()
        try:
            code = main(list(args))
        finally:
            structlog.reset_defaults()  # the CLI configures structlog for the process
        out, err = capsys.readouterr()
        return Cli(code, out, err)

    return run


# -- helpers -------------------------------------------------------------------


def assert_closed(port: int) -> None:
    """Nothing answers on *port* any more."""
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def render(sources: list[Any], **config: Any) -> str:
    """Render a config with these sources and fast loader settings (overridable)."""
    loader = {**FAST, **config.pop("loader", {})}
    return Pipeline.from_config({"version": 1, "sources": sources, "loader": loader, **config}).render()


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def one(logs: list[dict[str, Any]], name: str, source: str) -> dict[str, Any]:
    """The single event *name* about *source*."""
    found = [e for e in logs if e["event"] == name and e["source"] == source]
    assert len(found) == 1, (name, source, logs)
    return found[0]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Cli:
    code: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON log lines on stderr (every line that is not the final error line)."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return [json.loads(line) for line in lines if not line.startswith("memconfig: error")]


def run_cli(*args: str, prelude: str = "") -> Cli:
    """Run ``python -m memconfig ARGS`` as a user would (after *prelude*, Python run first)."""
    done = memconfig(*args, prelude=prelude)
    return Cli(done.returncode, done.stdout, done.stderr)


# -- HTTP ----------------------------------------------------------------------


def test_http_source_loads_with_size_and_hash(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """An http:// source goes into the prompt and logs source_loaded with its bytes, sha256 and URL."""
    url = web.serve("AGENTS.md", "served over http")
    prompt = render([url])
    assert f"{url}\n\nserved over http" in prompt
    event = one(logs, "source_loaded", url)
    assert event["url"] == url
    assert event["bytes"] == len("served over http")
    assert event["sha256"] == sha256("served over http")
    assert web.hits["AGENTS.md"] == 1


@pytest.mark.parametrize(
    ("status", "reason", "detail", "hits"),
    [
        pytest.param(404, "not_found", "", 1, id="404-not-found-not-retried"),
        pytest.param(410, "not_found", "", 1, id="410-not-found-not-retried"),
        pytest.param(401, "permission_denied", "401", 1, id="401-denied-not-retried"),
        pytest.param(403, "permission_denied", "403", 1, id="403-denied-not-retried"),
        pytest.param(500, "remote_error", "HTTP 500", 3, id="500-persistent-retried-then-skipped"),
        pytest.param(503, "remote_error", "HTTP 503", 3, id="503-persistent-retried-then-skipped"),
        pytest.param(429, "remote_error", "HTTP 429", 3, id="429-persistent-retried-then-skipped"),
    ],
)
def test_http_failure_is_skipped_with_reason(
    web: WebServer, logs: list[dict[str, Any]], status: int, reason: str, detail: str, hits: int
) -> None:
    """A failing HTTP answer maps to its skip reason; only 5xx and 429 are retried (retries: 2)."""
    web.serve("bad.md", "never served")
    bad = web.fail("bad.md", status)
    good = web.serve("good.md", "still here")
    prompt = render([bad, good])
    event = one(logs, "source_skipped", bad)
    assert event["reason"] == reason
    assert detail in event["detail"]
    assert web.hits["bad.md"] == hits
    assert "still here" in prompt
    assert "never served" not in prompt


@pytest.mark.parametrize(
    ("status", "times"),
    [
        pytest.param(500, 2, id="500-twice"),
        pytest.param(502, 1, id="502-once"),
        pytest.param(503, 2, id="503-twice"),
        pytest.param(429, 1, id="429-once"),
    ],
)
def test_transient_http_failure_is_retried_then_loaded(
    web: WebServer, logs: list[dict[str, Any]], status: int, times: int
) -> None:
    """A transient failure (5xx, 429) is retried with backoff and the source then loads."""
    url = web.serve("flaky.md", "got there")
    web.fail("flaky.md", status, times=times)
    assert "got there" in render([url])
    assert web.hits["flaky.md"] == times + 1
    assert one(logs, "source_loaded", url)["bytes"] == len("got there")
    assert not events(logs, "source_skipped")


@pytest.mark.parametrize(
    ("times", "hits"),
    [pytest.param(1, 2, id="cut-once-retried-then-loaded"), pytest.param(3, 3, id="cut-every-time")],
)
def test_body_cut_short_is_transient(web: WebServer, logs: list[dict[str, Any]], times: int, hits: int) -> None:
    """A body that ends before its Content-Length is a transient ``remote_error``: retried (retries: 2)."""
    url = web.serve("cut.md", "whole text " * 100)
    web.cut("cut.md", after=100, times=times)
    prompt = render([url])
    loaded = times <= FAST["retries"]
    assert web.hits["cut.md"] == hits
    assert ("whole text" in prompt) is loaded
    if not loaded:
        event = one(logs, "source_skipped", url)
        assert (event["reason"], "ClientPayloadError" in event["detail"]) == ("remote_error", True)


def test_per_source_retries_override_the_default(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A source's own ``retries: 0`` makes one attempt even where the loader default would retry."""
    url = web.fail("down.md", 503)
    render([{"url": url, "retries": 0}], loader={"retries": 5})
    assert web.hits["down.md"] == 1
    assert one(logs, "source_skipped", url)["reason"] == "remote_error"


def test_timeout_skips_the_slow_source_and_keeps_the_rest(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A source slower than its timeout is skipped as ``timeout``; the others load, and nothing waits for it."""
    slow = web.serve("slow.md", "too late")
    web.delay("slow.md", 5)
    before = web.serve("before.md", "before text")
    after = web.serve("after.md", "after text")
    started = time.perf_counter()
    prompt = render([before, {"url": slow, "timeout": 0.2}, after])
    assert time.perf_counter() - started < 1.5
    event = one(logs, "source_skipped", slow)
    assert event["reason"] == "timeout"
    assert "0.2" in event["detail"]
    assert "before text" in prompt and "after text" in prompt
    assert "too late" not in prompt
    assert len(events(logs, "source_loaded")) == 2


def test_connection_refused_is_remote_error(closed_port: int, web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A port with nothing listening gives ``remote_error`` and does not spoil the other sources."""
    dead = f"http://127.0.0.1:{closed_port}/AGENTS.md"
    good = web.serve("good.md", "good text")
    prompt = render([dead, good])
    event = one(logs, "source_skipped", dead)
    assert event["reason"] == "remote_error"
    assert "connect" in event["detail"].lower()
    assert "good text" in prompt


def test_output_follows_config_order_not_finish_order(
    web: WebServer, memfs: Any, tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """Sections and events come in config order even when the first source answers last."""
    first = web.serve("first.md", "CONTENT-1")
    web.delay("first.md", 0.15)
    memfs.pipe("/second.md", b"CONTENT-2")
    local = tmp_path / "third.md"
    local.write_text("CONTENT-3", encoding="utf-8")
    fourth = web.serve("fourth.md", "CONTENT-4")
    sources = [first, "memory://second.md", str(local), fourth]
    prompt = render(sources)
    positions = [prompt.index(f"CONTENT-{i}") for i in range(1, 5)]
    assert positions == sorted(positions)
    loaded = events(logs, "source_loaded")
    assert [e["source"] for e in loaded] == sources
    assert loaded[0]["duration_ms"] > loaded[3]["duration_ms"]  # the first really did finish last


def test_http_sources_are_fetched_concurrently(web: WebServer) -> None:
    """Eight sources that each take 0.15 s load in about one request's time, not eight."""
    urls = [web.serve(f"c{i}.md", f"concurrent {i}") for i in range(8)]
    for i in range(8):
        web.delay(f"c{i}.md", 0.15)
    started = time.perf_counter()
    prompt = render(urls)
    assert time.perf_counter() - started < 0.6  # one after another: 1.2 s
    assert all(f"concurrent {i}" in prompt for i in range(8))
    assert web.peak == 8


def test_arender_keeps_the_callers_event_loop_running(web: WebServer) -> None:
    """``await arender()`` on slow HTTP sources lets the caller's other tasks run meanwhile."""
    urls = [web.serve(f"a{i}.md", f"awaited {i}") for i in range(3)]
    for i in range(3):
        web.delay(f"a{i}.md", 0.2)
    pipeline = Pipeline.from_config({"version": 1, "sources": urls, "loader": FAST})

    async def run() -> tuple[str, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        prompt = await pipeline.arender()
        ticker.cancel()
        return prompt, ticks

    prompt, ticks = asyncio.run(run())
    assert all(f"awaited {i}" in prompt for i in range(3))
    assert ticks >= 5  # a blocked loop would not tick at all


def test_http_source_over_max_bytes_is_too_large(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A remote file larger than ``loader.max_bytes`` is skipped as ``too_large``."""
    url = web.serve("big.md", "x" * 5000)
    render([url], loader={"max_bytes": 1000})
    assert one(logs, "source_skipped", url)["reason"] == "too_large"


@pytest.mark.parametrize("concurrency", [pytest.param(1, id="one"), pytest.param(3, id="three")])
def test_loader_concurrency_caps_requests_in_flight(web: WebServer, concurrency: int) -> None:
    """``loader.concurrency`` is the most requests the server ever sees at once."""
    urls = [web.serve(f"cap{i}.md", f"capped {i}") for i in range(5)]
    for i in range(5):  # long enough for the first requests to overlap, short enough for one at a time
        web.delay(f"cap{i}.md", 0.1 if concurrency > 1 else 0.01)
    prompt = render(urls, loader={"concurrency": concurrency})
    assert all(f"capped {i}" in prompt for i in range(5))
    assert web.peak == concurrency


@pytest.mark.parametrize("how", [pytest.param("threads", id="threads"), pytest.param("tasks", id="tasks")])
def test_loader_concurrency_caps_requests_across_concurrent_passes(web: WebServer, how: str) -> None:
    """``loader.concurrency`` caps requests in flight across all passes sharing a loader, not in each pass."""
    urls = [web.serve(f"pass{i}.md", f"pass {i}") for i in range(8)]
    for i in range(8):
        web.delay(f"pass{i}.md", 0.02)
    loader = FsspecLoader(concurrency=1)
    passes = [[LoadRequest(Source(key=u, name=u, url=u)) for u in urls[i : i + 2]] for i in range(0, 8, 2)]
    if how == "threads":
        with ThreadPoolExecutor(len(passes)) as pool:
            done = list(pool.map(loader.load, passes))
    else:

        async def run() -> list[list[Any]]:
            return list(await asyncio.gather(*(arun(loader.read(p)) for p in passes)))

        done = asyncio.run(run())
    assert [r.content for results in done for r in results] == [f"pass {i}" for i in range(8)]
    assert web.peak == 1


@pytest.mark.parametrize(
    "validator",
    [pytest.param({"etag": "v1"}, id="etag"), pytest.param({"last_modified": 1_700_000_000.0}, id="last-modified")],
)
def test_revalidation_checks_headers_not_body(web: WebServer, validator: dict[str, Any]) -> None:
    """Under ``revalidate``, an unchanged ETag or Last-Modified costs a HEAD and no GET; a change is read."""
    url = web.serve("v.md", "first version", **validator)
    pipeline = Pipeline.from_config({"version": 1, "sources": [url], "loader": FAST, "cache": {"policy": "revalidate"}})
    state: dict[str, Any] = {}
    assert "first version" in pipeline.render(state=state)
    web.methods.clear()
    assert "first version" in pipeline.render(state=state)
    assert web.methods["GET", "v.md"] == 0
    assert web.methods["HEAD", "v.md"] == 1
    changed = {"etag": "v2"} if "etag" in validator else {"last_modified": 1_800_000_000.0}
    web.serve("v.md", "second version", **changed)
    assert "second version" in pipeline.render(state=state)


def revalidating(url: str, **config: Any) -> Pipeline:
    """A pipeline of one source under the ``revalidate`` policy, with fast loader settings."""
    return Pipeline.from_config(
        {"version": 1, "sources": [url], "loader": FAST, "cache": {"policy": "revalidate"}, **config}
    )


def test_edit_during_the_first_read_is_seen_next_render(web: WebServer) -> None:
    """A file edited right after its first GET is answered is read again next render, not kept under the new ETag."""
    url = web.serve("race.md", "old rules", etag="v1")
    web.delay("race.md", 0.5, method="HEAD")  # a HEAD sent beside the GET would see the edit
    web.then("race.md", "GET", lambda: web.serve("race.md", "new rules", etag="v2"))
    pipeline, state = revalidating(url), {}
    assert "old rules" in pipeline.render(state=state)
    assert (web.methods["GET", "race.md"], web.methods["HEAD", "race.md"]) == (1, 0)
    web.delay("race.md", 0, method="HEAD")
    assert "new rules" in pipeline.render(state=state)


def test_compressing_server_is_revalidated_with_one_head(web: WebServer) -> None:
    """A server that gzips and weakens its ETag: the stored ETag is the one HEAD sends, so no GET follows."""
    url = web.serve("gz.md", "compressible rules " * 100, etag="v1", compress=True)
    pipeline, state = revalidating(url), {}
    assert "compressible rules" in pipeline.render(state=state)
    web.methods.clear()
    assert "compressible rules" in pipeline.render(state=state)
    assert (web.methods["HEAD", "gz.md"], web.methods["GET", "gz.md"]) == (1, 0)


def test_same_second_edit_behind_last_modified_is_seen(web: WebServer) -> None:
    """A Last-Modified of the read's own second is no fingerprint, so a same-size edit in that second still shows."""
    now = time.time()
    url = web.serve("racy.md", "rule: use tabs", last_modified=now)
    pipeline, state = revalidating(url), {}
    assert "use tabs" in pipeline.render(state=state)
    web.serve("racy.md", "rule: use SPCS", last_modified=now)
    assert "use SPCS" in pipeline.render(state=state)


@pytest.mark.parametrize(
    ("headers", "fingerprint"),
    [
        pytest.param({"last_modified": -60}, "Last-Modified:", id="last-modified-a-minute-old"),
        pytest.param({"last_modified": 0, "etag": "v1"}, 'ETag:"v1"', id="etag-beside-a-recent-last-modified"),
    ],
)
def test_old_last_modified_or_etag_stays_a_fingerprint(
    web: WebServer, headers: dict[str, Any], fingerprint: str
) -> None:
    """A Last-Modified older than the read by seconds, or any ETag, is kept: an unchanged check costs one HEAD."""
    headers = {k: time.time() + v if k == "last_modified" else v for k, v in headers.items()}
    url = web.serve("kept.md", "kept rules", **headers)
    source = Source(key=url, name=url, url=url, retries=0)
    loader = FsspecLoader(fingerprints=True)
    [first] = loader.load([LoadRequest(source)])
    assert first.fingerprint is not None and first.fingerprint.startswith(fingerprint)
    web.methods.clear()
    [again] = loader.load([LoadRequest(source, first.fingerprint, first.sha256)])
    assert again.status == "unchanged"
    assert (web.methods["HEAD", "kept.md"], web.methods["GET", "kept.md"]) == (1, 0)


def test_user_info_is_sent_as_basic_auth(web: WebServer) -> None:
    """``http://user:pass@host`` reaches the server as HTTP basic auth."""
    url = web.serve("private.md", "private text").replace("http://", "http://reader:opensesame@")
    assert "private text" in render([url])
    assert web.auth == ["Basic cmVhZGVyOm9wZW5zZXNhbWU="]


# -- S3 ------------------------------------------------------------------------


def test_s3_source_loads_through_storage_section(bucket: Bucket, logs: list[dict[str, Any]]) -> None:
    """An s3:// source reads from the S3 API server set in ``storage: {s3: ...}``."""
    url = bucket.put("AGENTS.md", "from the bucket")
    prompt = render([url], storage=bucket.storage())
    assert f"{url}\n\nfrom the bucket" in prompt
    event = one(logs, "source_loaded", url)
    assert event["bytes"] == len("from the bucket")
    assert event["sha256"] == sha256("from the bucket")


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("storage", id="top-level-storage"),
        pytest.param("storage_options", id="per-source-storage-options"),
        pytest.param("merged", id="endpoint-in-storage-keys-per-source"),
        pytest.param("credentials_file", id="credentials-file-entry"),
        pytest.param("env", id="env-interpolation"),
    ],
)
def test_s3_credentials_reach_the_server(
    bucket: Bucket, write_config: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Keys given in any supported place (storage, per source, credentials file, ${VAR}) are used."""
    server = bucket.server
    url = bucket.put("AGENTS.md", "authorised")
    endpoint = {"endpoint_url": server.endpoint_url, "client_kwargs": {"region_name": server.region}}
    keys = {"key": server.key, "secret": server.secret}
    source: dict[str, Any] = {"url": url}
    config: dict[str, Any] = {"version": 1, "loader": FAST}
    if how == "storage":
        config["storage"] = {"s3": {**endpoint, **keys}}
    elif how == "storage_options":
        source["storage_options"] = {**endpoint, **keys}
    elif how == "merged":
        config["storage"] = {"s3": endpoint}
        source["storage_options"] = keys
    elif how == "credentials_file":
        config["storage"] = {"s3": endpoint}
        config["credentials_file"] = "secrets/creds.yaml"
        source["credentials"] = "team_s3"
        (tmp_path / "secrets").mkdir()
        write_config({"team_s3": keys}, "secrets/creds.yaml")
    else:
        monkeypatch.setenv("TEST_S3_KEY", server.key)
        monkeypatch.setenv("TEST_S3_SECRET", server.secret)
        config["storage"] = {"s3": {**endpoint, "key": "${TEST_S3_KEY}", "secret": "${TEST_S3_SECRET}"}}
    config["sources"] = [source]
    path = write_config(config)
    if how in ("credentials_file", "env"):
        assert server.secret not in path.read_text(encoding="utf-8")
    assert "authorised" in Pipeline.from_yaml(path).render()


@pytest.mark.parametrize(
    ("case", "reason", "code"),
    [
        pytest.param("missing-key", "not_found", "NoSuchKey", id="no-such-key"),
        pytest.param("missing-bucket", "not_found", "NoSuchBucket", id="no-such-bucket"),
        pytest.param("wrong-secret", "permission_denied", "SignatureDoesNotMatch", id="wrong-secret"),
        pytest.param("unknown-key", "permission_denied", "InvalidAccessKeyId", id="unknown-access-key"),
    ],
)
def test_s3_failure_is_skipped_with_reason(
    bucket: Bucket, logs: list[dict[str, Any]], case: str, reason: str, code: str
) -> None:
    """S3 NoSuchKey/NoSuchBucket map to ``not_found``, refused keys to ``permission_denied``."""
    good = bucket.put("good.md", "good object")
    bad: dict[str, Any] = {"url": bucket.put("bad.md", "bad object")}
    if case == "missing-key":
        bad["url"] = f"s3://{bucket.name}/absent.md"
    elif case == "missing-bucket":
        bad["url"] = "s3://no-such-bucket-here/AGENTS.md"
    elif case == "wrong-secret":
        bad["storage_options"] = {"secret": "not-the-right-secret"}
    else:
        bad["storage_options"] = {"key": "AKIANOTAKNOWNKEY0000"}
    prompt = render([bad, good], storage=bucket.storage())
    event = one(logs, "source_skipped", bad["url"])
    assert event["reason"] == reason
    assert code in event["detail"]
    assert "good object" in prompt
    assert "bad object" not in prompt


# -- what a read brings back: empty, too large, at most max_bytes + 1 -------------


@pytest.fixture(params=[pytest.param("http", id="http"), pytest.param("s3", id="s3")])
def remote(request: pytest.FixtureRequest) -> Callable[..., tuple[str, dict[str, Any]]]:
    """Put a file on the HTTP server (Range honoured, as nginx) or in a bucket; gives its URL and config extras."""

    def put(name: str, body: str | bytes, **headers: Any) -> tuple[str, dict[str, Any]]:
        if request.param == "http":
            return request.getfixturevalue("web").serve(name, body, **headers), {}
        bucket: Bucket = request.getfixturevalue("bucket")
        return bucket.put(name, body), {"storage": bucket.storage()}

    return put


def test_empty_remote_file_is_skipped_as_empty(
    remote: Callable[..., tuple[str, dict[str, Any]]], logs: list[dict[str, Any]]
) -> None:
    """A 0-byte remote file is ``empty``, not the ``remote_error`` a byte range of it gets (HTTP 416, InvalidRange)."""
    url, extra = remote("empty.md", b"")
    assert "(No memory loaded)" in render([{"url": url, "retries": 0}], **extra)
    event = one(logs, "source_skipped", url)
    assert event["reason"] == "empty"


def test_emptied_remote_file_leaves_the_prompt(
    remote: Callable[..., tuple[str, dict[str, Any]]], logs: list[dict[str, Any]]
) -> None:
    """Under ``revalidate``, a remote file emptied between renders leaves the prompt as ``empty``, not as stale."""
    url, extra = remote("emptied.md", "old rules")
    config = {"version": 1, "sources": [url], "loader": FAST, "cache": {"policy": "revalidate"}, **extra}
    pipeline = Pipeline.from_config(config)
    state: dict[str, Any] = {}
    assert "old rules" in pipeline.render(state=state)
    remote("emptied.md", b"")
    assert "old rules" not in pipeline.render(state=state)
    assert one(logs, "source_skipped", url)["reason"] == "empty"
    assert not events(logs, "source_stale")


def test_remote_file_over_max_bytes_is_too_large(
    remote: Callable[..., tuple[str, dict[str, Any]]], logs: list[dict[str, Any]]
) -> None:
    """A remote file one byte over ``loader.max_bytes`` is ``too_large``; one exactly at it loads."""
    over, extra = remote("over.md", "x" * 1001)
    at, _ = remote("at.md", "y" * 1000)
    prompt = render([over, at], loader={"max_bytes": 1000}, **extra)
    assert one(logs, "source_skipped", over)["reason"] == "too_large"
    assert one(logs, "source_loaded", at)["bytes"] == 1000
    assert "y" * 1000 in prompt


def test_cold_read_fingerprint_is_the_etag_the_read_came_with(
    remote: Callable[..., tuple[str, dict[str, Any]]],
) -> None:
    """Under fingerprinting, a cold read is one GET whose own ETag is stored with its text, and edits are seen."""
    etag = hashlib.md5(b"first text").hexdigest()  # what S3 makes of a single-part object
    url, extra = remote("fp.md", "first text", etag=etag)
    source = Source(key=url, name=url, url=url, retries=0, storage_options=extra.get("storage", {}).get("s3", {}))
    loader = FsspecLoader(fingerprints=True)
    [first] = loader.load([LoadRequest(source)])
    assert (first.content, first.fingerprint) == ("first text", f'ETag:"{etag}"')
    remote("fp.md", "second text", etag="other")
    [again] = loader.load([LoadRequest(source, first.fingerprint, first.sha256)])
    assert again.content == "second text"
    assert again.fingerprint not in (None, first.fingerprint)


def test_server_ignoring_range_sends_no_more_than_is_read(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """Against a server that sends whole bodies whatever the Range, the read stops after max_bytes + 1 bytes."""
    body = b"x" * (64 << 20)
    big = web.serve("huge.md", body, ranges=False)
    small = web.serve("small.md", "small and whole", ranges=False)
    prompt = render([big, small], loader={"max_bytes": 1024})
    assert one(logs, "source_skipped", big)["reason"] == "too_large"
    assert "small and whole" in prompt
    web.wait_idle()
    assert web.sent["huge.md"] < len(body) // 4  # the client hung up; reading it all would take every byte
    assert web.sent["small.md"] == len("small and whole")


def test_http_storage_options_headers_reach_the_server(web: WebServer) -> None:
    """Request headers in an HTTP source's ``storage_options`` are sent with the read."""
    url = web.serve("headers.md", "with headers")
    source = {"url": url, "storage_options": {"headers": {"Authorization": "Bearer team-token"}}}
    assert "with headers" in render([source])
    assert web.auth == ["Bearer team-token"]


def test_s3_pinned_object_version_is_read(bucket: Bucket, logs: list[dict[str, Any]]) -> None:
    """With ``version_aware``, ``?versionId=`` reads that version, not the latest; an empty object is still empty."""
    client = bucket.server.client()
    client.put_bucket_versioning(Bucket=bucket.name, VersioningConfiguration={"Status": "Enabled"})
    first = client.put_object(Bucket=bucket.name, Key="AGENTS.md", Body=b"version one")["VersionId"]
    latest = bucket.put("AGENTS.md", "version two")
    pinned = f"{latest}?versionId={first}"
    empty = bucket.put("empty.md", b"")
    storage = {"s3": bucket.server.options(version_aware=True)}
    prompt = render([pinned, latest, empty], storage=storage)
    assert f"{pinned}\n\nversion one" in prompt
    assert f"{latest}\n\nversion two" in prompt
    assert one(logs, "source_skipped", empty)["reason"] == "empty"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("x" * 101, "too_large", id="too-large"),
        pytest.param(b"\xff\xfeoops", "decode_error", id="not-utf8"),
        pytest.param(b"", "empty", id="empty"),
    ],
)
def test_remote_file_skipped_for_its_content_keeps_its_fingerprint(
    web: WebServer, body: str | bytes, reason: str
) -> None:
    """A remote file skipped for what it holds carries its ETag fingerprint; asking again unchanged costs no GET."""
    url = web.serve("skip.md", body, etag="v1")
    source = Source(key=url, name=url, url=url, retries=0)
    loader = FsspecLoader(max_bytes=100, fingerprints=True)
    [skipped] = loader.load([LoadRequest(source)])
    assert (skipped.status, skipped.reason, skipped.fingerprint) == ("skipped", reason, 'ETag:"v1"')
    web.methods.clear()
    [again] = loader.load([LoadRequest(source, skipped.fingerprint)])
    assert again.status == "unchanged"
    assert (web.methods["HEAD", "skip.md"], web.methods["GET", "skip.md"]) == (1, 0)


# -- globs ---------------------------------------------------------------------


def test_s3_glob_expands_sorted_and_logs_the_expansion(bucket: Bucket, logs: list[dict[str, Any]]) -> None:
    """``{glob: s3://bucket/rules/*.md}`` loads its matches in sorted order and logs source_expanded."""
    for key in ("rules/c.md", "rules/a.md", "rules/b.md", "rules/notes.txt", "rules/deep/d.md", "other/e.md"):
        bucket.put(key, f"object {key}")
    pattern = f"s3://{bucket.name}/rules/*.md"
    prompt = render([{"glob": pattern}], storage=bucket.storage())
    matches = [f"s3://{bucket.name}/rules/{n}.md" for n in "abc"]
    expanded = one(logs, "source_expanded", pattern)
    assert expanded["count"] == 3
    assert expanded["matches"] == matches
    assert [e["source"] for e in events(logs, "source_loaded")] == matches
    positions = [prompt.index(f"object rules/{n}.md") for n in "abc"]
    assert positions == sorted(positions)
    assert "notes.txt" not in prompt and "deep/d.md" not in prompt and "other/e.md" not in prompt


@pytest.mark.parametrize("policy", [pytest.param("always", id="always"), pytest.param("revalidate", id="revalidate")])
def test_s3_glob_sees_objects_added_and_changed_between_renders(bucket: Bucket, policy: str) -> None:
    """A later render lists the bucket again: s3fs's cached listing hides neither a new nor a changed object."""
    bucket.put("rules/a.md", "a first")
    pipeline = Pipeline.from_config(
        {
            "version": 1,
            "sources": [f"s3://{bucket.name}/rules/a.md", {"glob": f"s3://{bucket.name}/rules/*.md"}],
            "loader": FAST,
            "storage": bucket.storage(),
            "cache": {"policy": policy},
        }
    )
    state: dict[str, Any] = {}
    assert "a first" in pipeline.render(state=state)
    bucket.put("rules/b.md", "b added")
    bucket.put("rules/a.md", "a changed")
    prompt = pipeline.render(state=state)
    assert "b added" in prompt
    assert "a changed" in prompt and "a first" not in prompt


def test_local_glob_expands_sorted_with_keys_as_written(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    """A local glob expands in sorted order; each match's key keeps the pattern's relative form."""
    rules = tmp_path / "rules"
    rules.mkdir()
    for name in ("zeta.md", "alpha.md", "mid.md", "skip.txt"):
        (rules / name).write_text(f"text of {name}", encoding="utf-8")
    prompt = render([{"glob": "rules/*.md"}], base_dir=str(tmp_path))
    matches = ["rules/alpha.md", "rules/mid.md", "rules/zeta.md"]
    expanded = one(logs, "source_expanded", "rules/*.md")
    assert (expanded["count"], expanded["matches"]) == (3, matches)
    assert [e["source"] for e in events(logs, "source_loaded")] == matches
    assert prompt.index("rules/alpha.md\n\ntext of alpha.md") < prompt.index("rules/zeta.md\n\ntext of zeta.md")


def test_zip_glob_over_http_expands_inside_the_bundle(web: WebServer, bundle: Path, logs: list[dict[str, Any]]) -> None:
    """A glob inside a remote zip (``zip://rules/*.md::http://...``) expands in sorted order."""
    remote = web.serve("bundle.zip", bundle.read_bytes())
    pattern = f"zip://rules/*.md::{remote}"
    prompt = render([{"glob": pattern}])
    keys = [f"zip://rules/{n}::{remote}" for n in ("AGENTS.md", "a.md", "b.md")]
    assert one(logs, "source_expanded", pattern)["matches"] == keys
    assert prompt.index("bundle rules") < prompt.index("bundle a") < prompt.index("bundle b")


@pytest.mark.parametrize(
    "where", [pytest.param("s3", id="s3"), pytest.param("local", id="local"), pytest.param("memory", id="memory")]
)
def test_glob_matching_nothing_is_not_found(
    where: str, request: pytest.FixtureRequest, tmp_path: Path, memfs: Any, logs: list[dict[str, Any]]
) -> None:
    """A glob that matches no file is one source_skipped with reason ``not_found``."""
    config: dict[str, Any] = {}
    if where == "s3":
        bucket: Bucket = request.getfixturevalue("bucket")
        bucket.put("rules/a.txt", "not markdown")
        pattern = f"s3://{bucket.name}/rules/*.md"
        config["storage"] = bucket.storage()
    elif where == "local":
        pattern = f"{tmp_path}/nothing/*.md"
    else:
        memfs.pipe("/rules/a.txt", b"not markdown")
        pattern = "memory://rules/*.md"
    prompt = render([{"glob": pattern}], **config)
    event = one(logs, "source_skipped", pattern)
    assert event["reason"] == "not_found"
    assert "glob" in event["detail"]
    assert not events(logs, "source_expanded")
    assert "(No memory loaded)" in prompt


# -- zip -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "chain",
    [
        pytest.param("{abs}", id="absolute-path"),
        pytest.param("file://{abs}", id="file-url"),
        pytest.param("bundle.zip", id="relative-to-base-dir"),
    ],
)
def test_zip_member_loads_through_a_chained_url(bundle: Path, logs: list[dict[str, Any]], chain: str) -> None:
    """``zip://rules/AGENTS.md::<bundle>`` reads one member of a real zip file."""
    url = "zip://rules/AGENTS.md::" + chain.format(abs=bundle)
    prompt = render([url], base_dir=str(bundle.parent))
    assert f"{url}\n\nbundle rules" in prompt
    assert one(logs, "source_loaded", url)["sha256"] == sha256("bundle rules")


def test_zip_member_loads_from_a_remote_bundle(web: WebServer, bundle: Path, logs: list[dict[str, Any]]) -> None:
    """``zip://AGENTS.md::http://...`` reads a member of a zip served over HTTP."""
    url = "zip://AGENTS.md::" + web.serve("bundle.zip", bundle.read_bytes())
    assert "bundle top level" in render([url])
    assert one(logs, "source_loaded", url)["bytes"] == len("bundle top level")


def test_zip_missing_member_is_not_found(bundle: Path, logs: list[dict[str, Any]]) -> None:
    """A member that is not in the bundle is ``not_found``."""
    url = f"zip://absent.md::{bundle}"
    render([url])
    assert one(logs, "source_skipped", url)["reason"] == "not_found"


# -- git -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        pytest.param("v1", "version one", id="tag"),
        pytest.param("{first}", "version one", id="first-commit"),
        pytest.param("main", "version two", id="branch-head"),
    ],
)
def test_git_source_reads_the_pinned_ref(git_repo: Repo, logs: list[dict[str, Any]], ref: str, expected: str) -> None:
    """``git://<repo>:<ref>@AGENTS.md`` gives the file at that ref, whatever was committed after."""
    url = f"git://{git_repo.path}:{ref.format(first=git_repo.first)}@AGENTS.md"
    prompt = render([url])
    assert f"{url}\n\n{expected}" in prompt
    assert one(logs, "source_loaded", url)["sha256"] == sha256(expected + "\n")


def test_git_pin_holds_while_the_branch_moves(git_repo: Repo) -> None:
    """Re-reading on every render, a source pinned to a tag keeps its content while one on the branch follows it."""
    pinned, head = f"git://{git_repo.path}:v1@AGENTS.md", f"git://{git_repo.path}:main@AGENTS.md"
    pipeline = Pipeline.from_config(
        {"version": 1, "sources": [pinned, head], "loader": FAST, "cache": {"policy": "always"}}
    )
    assert f"{pinned}\n\nversion one" in pipeline.render() and f"{head}\n\nversion two" in pipeline.render()
    git_repo.commit("version three\n")
    prompt = pipeline.render()
    assert f"{pinned}\n\nversion one" in prompt
    assert f"{head}\n\nversion three" in prompt


@pytest.mark.parametrize(
    ("where", "detail"),
    [
        pytest.param("v1@absent.md", "no such file", id="file-absent-at-ref"),
        pytest.param("v9@AGENTS.md", "no such git ref", id="ref-absent"),
    ],
)
def test_git_missing_file_or_ref_is_not_found(
    git_repo: Repo, logs: list[dict[str, Any]], where: str, detail: str
) -> None:
    """A path absent at the pinned ref, or a ref the repository lacks, is ``not_found``."""
    url = f"git://{git_repo.path}:{where}"
    render([url])
    event = one(logs, "source_skipped", url)
    assert (event["reason"], detail in event["detail"]) == ("not_found", True)


# -- everything at once, as the CLI runs it ---------------------------------------


def test_mixed_config_renders_every_good_source_and_one_line_per_failure(
    web: WebServer, bucket: Bucket, bundle: Path, git_repo: Repo, write_config: Callable[..., Path], tmp_path: Path
) -> None:
    """One config mixing local, HTTP, S3, zip and git: the good sources render in order, each failure is one line."""
    (tmp_path / "local.md").write_text("LOCAL", encoding="utf-8")
    slow = web.serve("slow.md", "SLOW")
    web.delay("slow.md", 5)
    sources = [
        "local.md",
        web.serve("AGENTS.md", "HTTP"),
        bucket.put("AGENTS.md", "S3"),
        f"zip://rules/AGENTS.md::{bundle}",
        f"git://{git_repo.path}:v1@AGENTS.md",
        web.fail("down.md", 503),
        web.url("missing.md"),
        {"url": slow, "timeout": 0.2},
    ]
    config = write_config(
        {"version": 1, "sources": sources, "loader": {**FAST, "retries": 1}, "storage": bucket.storage()}
    )
    cli = run_cli("render", "-c", str(config))
    assert cli.code == 0, cli.stderr
    wanted = ["LOCAL", "HTTP", "S3", "bundle rules", "version one"]
    positions = [cli.stdout.index(f"\n\n{text}\n") for text in wanted]
    assert positions == sorted(positions)
    skipped = {e["source"]: e for e in cli.events if e["event"] == "source_skipped"}
    assert {k: e["reason"] for k, e in skipped.items()} == {
        web.url("down.md"): "remote_error",
        web.url("missing.md"): "not_found",
        slow: "timeout",
    }
    assert "503" in skipped[web.url("down.md")]["detail"]
    assert len([e for e in cli.events if e["event"] == "source_skipped"]) == 3
    assert len([e for e in cli.events if e["event"] == "source_loaded"]) == 5
    assert [e["event"] for e in cli.events][-1] == "prompt_built"


# -- protocols that are not installed ----------------------------------------------


@pytest.mark.parametrize("command", [pytest.param("validate", id="validate"), pytest.param("render", id="render")])
def test_unknown_or_uninstalled_protocol_is_a_config_error(
    write_config: Callable[..., Path], cli: Callable[..., Cli], command: str
) -> None:
    """A URL whose filesystem is unknown or not installed makes validate and render exit 2 naming its key path."""
    config = write_config(
        {
            "version": 1,
            "sources": ["local.md", "foo://bucket/AGENTS.md", {"glob": "gcs://bucket/rules/*.md"}],
        }
    )
    done = cli(command, "-c", str(config))
    assert done.code == 2
    assert done.stdout == ""
    assert "sources[1].url" in done.stderr and "foo" in done.stderr
    assert "sources[2].glob" in done.stderr and "gcs" in done.stderr
    assert "sources[0]" not in done.stderr


@pytest.mark.parametrize("command", [pytest.param("validate", id="validate"), pytest.param("render", id="render")])
def test_missing_extra_names_the_extra_to_install(write_config: Callable[..., Path], command: str) -> None:
    """With aiohttp and s3fs unimportable (as when not installed), the error names the commands that install them."""
    config = write_config(
        {"version": 1, "sources": ["http://127.0.0.1:9/AGENTS.md", {"glob": "s3://bucket/rules/*.md"}]}
    )
    # A None entry in sys.modules makes ``import`` raise ImportError, exactly as an absent package does.
    cli = run_cli(command, "-c", str(config), prelude="import sys; sys.modules['aiohttp'] = sys.modules['s3fs'] = None")
    assert cli.code == 2, cli.stderr
    assert "sources[0].url" in cli.stderr and install_hint("http") in cli.stderr
    assert "sources[1].glob" in cli.stderr and install_hint("s3") in cli.stderr
    assert "Traceback" not in cli.stderr


# -- secrets ---------------------------------------------------------------------

PASSWORD = "Sup3rS3cret-pw"
SIGNATURE = "a1b2c3d4e5f6a7b8c9d0"
TOKEN = "tok-5e6f7a8b9c"
WRONG_SECRET = "Wr0ngS3cretValue-xyz"


@dataclass
class Planted:
    """A config on disk whose sources carry every kind of secret, and the secrets to look for."""

    path: Path
    needles: tuple[str, ...]
    failing: str  # the masked key of the source that answers 404 (required if asked)


@pytest.fixture
def planted(
    web: WebServer, bucket: Bucket, bundle: Path, closed_port: int, write_config: Callable[..., Path]
) -> Callable[..., Planted]:
    """Write a config that plants a URL password, S3 keys and signed-URL tokens in loaded and failing sources."""

    def plant(*, required: bool = False) -> Planted:
        server = bucket.server
        host = f"127.0.0.1:{web.port}"
        web.serve("signed.md", "signed content")
        web.serve("bundle.zip", bundle.read_bytes())
        bucket.put("AGENTS.md", "bucket content")
        write_config({"team_s3": {"key": server.key, "secret": server.secret}}, "creds.yaml")
        missing = f"http://reader:{PASSWORD}@{host}/missing.md?sig={SIGNATURE}&token={TOKEN}"
        sources: list[Any] = [
            f"http://reader:{PASSWORD}@{host}/signed.md?X-Amz-Signature={SIGNATURE}&token={TOKEN}",
            {"url": f"s3://{bucket.name}/AGENTS.md", "credentials": "team_s3"},
            {"url": f"s3://{bucket.name}/other.md", "storage_options": {"key": server.key, "secret": WRONG_SECRET}},
            {"url": missing, "required": required},
            f"http://reader:{PASSWORD}@127.0.0.1:{closed_port}/AGENTS.md?token={TOKEN}",
            {"glob": f"zip://*.md::http://reader:{PASSWORD}@{host}/bundle.zip?token={TOKEN}"},
        ]
        path = write_config(
            {
                "version": 1,
                "credentials_file": "creds.yaml",
                "storage": {"s3": {"endpoint_url": server.endpoint_url, "client_kwargs": {"region_name": "us-east-1"}}},
                "loader": {**FAST, "retries": 0},
                "sources": sources,
            }
        )
        needles = (PASSWORD, SIGNATURE, TOKEN, server.key, server.secret, WRONG_SECRET)
        return Planted(path, needles, f"http://***@{host}/missing.md?sig=***&token=***")

    return plant


def assert_clean(text: str, needles: tuple[str, ...]) -> None:
    leaked = [n for n in needles if n in text]
    assert not leaked, f"secrets leaked: {leaked}"


def test_secrets_never_in_events_or_prompt(planted: Callable[..., Planted], logs: list[dict[str, Any]]) -> None:
    """No planted password, S3 key or URL token appears in any event or in the rendered prompt."""
    setup = planted()
    prompt = Pipeline.from_yaml(setup.path).render()
    assert "signed content" in prompt and "bucket content" in prompt and "bundle top level" in prompt
    reasons = sorted(e["reason"] for e in events(logs, "source_skipped"))
    assert reasons == ["not_found", "permission_denied", "remote_error"]
    assert events(logs, "source_expanded")
    assert_clean(json.dumps(logs), setup.needles)
    assert_clean(prompt, setup.needles)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("validate", id="validate"),
        pytest.param("sources", id="sources"),
        pytest.param("render", id="render"),
    ],
)
def test_secrets_never_in_cli_output(planted: Callable[..., Planted], cli: Callable[..., Cli], command: str) -> None:
    """``validate``, ``sources`` and ``render`` print no planted secret on stdout or in their JSON log lines."""
    setup = planted()
    done = cli(command, "-c", str(setup.path))
    assert done.code == 0, done.stderr
    if command != "validate":
        logged = done.events
        assert {e["event"] for e in logged} >= {"source_loaded", "source_skipped"}
        assert_clean(json.dumps(logged), setup.needles)
    if command == "sources":
        assert setup.failing in done.stdout
    assert_clean(done.stdout, setup.needles)
    assert_clean(done.stderr, setup.needles)


def test_secrets_never_in_required_source_errors(planted: Callable[..., Planted], cli: Callable[..., Cli]) -> None:
    """A failing required source's error names it with credentials masked, in Python and in the CLI."""
    setup = planted(required=True)
    with pytest.raises(SourceError) as caught:
        Pipeline.from_yaml(setup.path).render()
    assert caught.value.source == setup.failing
    assert caught.value.reason == "not_found"
    assert_clean(str(caught.value), setup.needles)
    assert_clean(repr(caught.value), setup.needles)
    done = cli("render", "-c", str(setup.path))
    assert done.code == 1
    assert setup.failing in done.stderr
    assert_clean(done.stdout + done.stderr, setup.needles)


def test_secrets_never_in_reprs(planted: Callable[..., Planted]) -> None:
    """``repr`` of the config, its sources, the pipeline and its stages, and load results shows no secret."""
    setup = planted()
    config = load_config(setup.path)
    pipeline = Pipeline.from_config(config)
    results = pipeline.load()
    assert {r.status for r in results} == {"loaded", "skipped"}
    shown = [config, *build_sources(config), pipeline, pipeline.loader, pipeline.cache, *results]
    for thing in shown:
        assert_clean(repr(thing), setup.needles)
        assert_clean(str(thing), setup.needles)


@pytest.mark.parametrize(
    "written",
    [pytest.param("Pass@Word-9tail", id="raw-at-sign"), pytest.param("Pass%40Word-9tail", id="percent-encoded")],
)
def test_password_holding_an_at_sign_is_masked_whole(
    web: WebServer, logs: list[dict[str, Any]], cli: Callable[..., Cli], write_config: Callable[..., Path], written: str
) -> None:
    """A password with an ``@`` (as aiohttp accepts it) is sent whole and masked whole, not up to its first ``@``."""
    url = web.serve("at.md", "at content").replace("http://", f"http://reader:{written}@")
    assert "at content" in render([url])
    assert web.auth == ["Basic cmVhZGVyOlBhc3NAV29yZC05dGFpbA=="]  # reader:Pass@Word-9tail
    needles = ("Word-9tail", "Pass@", "Pass%40")
    assert_clean(json.dumps(logs), needles)
    done = cli("sources", "-c", str(write_config({"version": 1, "sources": [url]})))
    assert done.code == 0
    assert "loaded" in done.stdout
    assert_clean(done.stdout + done.stderr, needles)


@pytest.mark.parametrize(
    ("sources", "where"),
    [
        pytest.param(["{url}", "{url}"], "sources[1]", id="repeated-source"),
        pytest.param(["foo://reader:{pw}@host/x.md?token={token}"], "sources[0].url", id="unknown-protocol"),
        pytest.param([{"url": "{url}", "credentials": "absent"}], "sources[0].credentials", id="credentials-no-file"),
    ],
)
def test_secrets_never_in_config_errors(write_config: Callable[..., Path], sources: list[Any], where: str) -> None:
    """A config error about a source that holds credentials names its key path and does not echo them."""
    url = f"http://reader:{PASSWORD}@127.0.0.1:9/x.md?token={TOKEN}"

    def fill(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: fill(v) for k, v in item.items()}
        return item.format(url=url, pw=PASSWORD, token=TOKEN)

    path = write_config({"version": 1, "sources": [fill(s) for s in sources]})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.format_message()
    assert where in message
    assert_clean(message, (PASSWORD, TOKEN))
    assert_clean(repr(caught.value), (PASSWORD, TOKEN))


def test_remote_loading_writes_nothing_to_stdout(web: WebServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Loading remote sources, found or not, writes nothing to stdout when logging is not configured."""
    structlog.reset_defaults()
    url = web.serve("quiet.md", "quiet text")
    assert "quiet text" in render([url, web.url("absent.md")])
    assert capsys.readouterr().out == ""
