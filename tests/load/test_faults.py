"""Remote sources that fail: each failure is one skip with its reason, every retry is logged, the rest still load.

Every fault is made by a real server on loopback: the aiohttp
:class:`servers.WebServer` (failing statuses, ``Retry-After``, a body cut
short, a hang-up, a stall, redirects, a crash mid-answer), moto's S3 server
(:class:`servers.S3Server`; AccessDenied, NoSuchBucket), the web server in
front of moto as a proxy (throttling, hang-ups), and ports nothing listens
on. Counts are asserted (requests the server saw, events), never wall time.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
import structlog
from support.cli import memconfig
from support.servers import Bucket, WebServer

from memconfig import Pipeline
from memconfig.cli import main
from memconfig.config import Config
from memconfig.sources import build_sources
from memconfig.sources.hosts import host_allowed

FAST = {"backoff": 0.01, "timeout": 5.0, "retries": 2}
HANG = 60  # seconds after which a render counts as hung (only detects hangs; no test waits this long)
TOKEN = "q-Secret-Token-42"
SLOW_DOWN = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
)


# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def other_server() -> Iterator[WebServer]:
    """A second web server: another host:port for redirects to lead to."""
    server = WebServer().start()
    yield server
    server.stop()


@pytest.fixture
def other(other_server: WebServer) -> Iterator[WebServer]:
    other_server.reset()
    yield other_server
    other_server.reset()


@pytest.fixture
def own_web() -> Iterator[WebServer]:
    """A web server of the test's own, which the test may kill."""
    server = WebServer().start()
    yield server
    server.stop()


#: The sockets behind :func:`free_port`'s ports: bound, never listening, for as long as this process runs.
_HELD: list[socket.socket] = []


def free_port() -> int:
    """A loopback port on which nothing listens: connections are refused.

    Its socket stays bound (never listening) until the process ends, so no server of another test or xdist
    worker can be given the port meanwhile (a port released at once could be).
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


@pytest.fixture
def good(tmp_path: Path) -> str:
    """A local source that always loads."""
    path = tmp_path / "good.md"
    path.write_text("the good source\n", encoding="utf-8")
    return str(path)


# -- helpers -------------------------------------------------------------------


def config(sources: list[Any], **extra: Any) -> dict[str, Any]:
    loader = {**FAST, **extra.pop("loader", {})}
    return {"version": 1, "sources": sources, "loader": loader, **extra}


def render(sources: list[Any], **extra: Any) -> str:
    """Render in a thread of its own, failing the test (not hanging it) if it never ends."""
    out: list[str] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(Pipeline.from_config(config(sources, **extra)).render())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    assert not thread.is_alive(), "the render hung"
    if failed:
        raise failed[0]
    return out[0]


def of(logs: list[dict[str, Any]], name: str, source: str | None = None) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name and (source is None or e.get("source") == source)]


def only_skip(logs: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The one ``source_skipped`` of *source*; no other source was skipped."""
    skipped = of(logs, "source_skipped")
    assert [e["source"] for e in skipped] == [source], skipped
    return skipped[0]


# -- one table of faults -------------------------------------------------------


@dataclass
class Fault:
    """A source that fails, what its skip says, and how many tries it had."""

    url: str
    reason: str
    detail: str  # found in the skip's detail
    retried: int  # source_retried events (loader retries: 2)
    requests: Callable[[], int] | None = None  # requests the server saw, if it can count them
    expected_requests: int = 0
    storage: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def source(self, **extra: Any) -> dict[str, Any]:
        return {"url": self.url, **({"storage_options": self.options} if self.options else {}), **extra}


def _http_status(web: WebServer, status: int) -> Fault:
    url = web.fail("bad.md", status)
    return Fault(url, "remote_error", f"HTTP {status}", 2, lambda: web.hits["bad.md"], 3)


def _s3_proxied(web: WebServer, bucket: Bucket, key: str) -> tuple[str, dict[str, Any]]:
    """An S3 URL reached through *web* (in front of moto), and the storage section that does it."""
    url = bucket.put(key, "never read whole")
    web.forward(bucket.server.endpoint_url)
    return url, {"s3": bucket.server.options(endpoint_url=f"http://127.0.0.1:{web.port}")}


def make_fault(case: str, web: WebServer, bucket: Bucket) -> Fault:
    if case == "http-500":
        return _http_status(web, 500)
    if case == "http-503":
        return _http_status(web, 503)
    if case == "http-connection-refused":
        return Fault(f"http://127.0.0.1:{free_port()}/a.md", "remote_error", "Cannot connect", 2)
    if case == "http-reset-mid-body":
        url = web.cut("bad.md", after=10, times=3)
        web.files["bad.md"] = b"x" * 100
        return Fault(url, "remote_error", "ClientPayloadError", 2, lambda: web.hits["bad.md"], 3)
    if case == "http-hang-up-before-answer":
        url = web.drop("bad.md")
        # aiohttp sends a GET once more on a new connection when one closes before any answer (it may
        # have been a stale kept-alive connection): two requests per attempt.
        return Fault(url, "remote_error", "ServerDisconnected", 2, lambda: web.hits["bad.md"], 6)
    if case == "http-stall":
        url = web.delay("bad.md", 30)
        return Fault(url, "timeout", "no answer within 0.5 s", 0, lambda: web.hits["bad.md"], 1)
    if case == "zip-over-refused-host":
        return Fault(f"zip://a.md::http://127.0.0.1:{free_port()}/x.zip", "remote_error", "Cannot connect", 2)
    if case == "zip-over-stalled-host":  # opened in a worker thread: its requests time out too (no thread is held)
        return Fault("zip://a.md::" + web.delay("x.zip", 30), "timeout", "no answer within 0.5 s", 0)
    if case == "zip-over-http-503":
        url = "zip://a.md::" + web.fail("x.zip", 503)
        return Fault(url, "remote_error", "HTTP 503", 2)
    if case == "s3-access-denied":
        url = bucket.put("a.md", "secret object")
        return Fault(url, "permission_denied", "AccessDenied", 0, storage={"s3": bucket.server.stranger()})
    if case == "s3-no-such-bucket":
        return Fault("s3://no-such-bucket-here/a.md", "not_found", "NoSuchBucket", 0, storage=bucket.storage())
    if case == "s3-throttled":
        url, storage = _s3_proxied(web, bucket, "a.md")
        web.fail(f"{bucket.name}/a.md", 503, body=SLOW_DOWN)
        return Fault(url, "remote_error", "S3 SlowDown", 2, lambda: web.hits[f"{bucket.name}/a.md"], 3, storage)
    if case == "s3-hang-up":
        url, storage = _s3_proxied(web, bucket, "a.md")
        web.drop(f"{bucket.name}/a.md")
        return Fault(url, "remote_error", "", 2, lambda: web.hits[f"{bucket.name}/a.md"], 6, storage)  # as above
    if case == "s3-refused-endpoint":
        storage = {"s3": bucket.server.options(endpoint_url=f"http://127.0.0.1:{free_port()}")}
        return Fault(f"s3://{bucket.name}/a.md", "remote_error", "EndpointConnectionError", 2, storage=storage)
    raise AssertionError(case)


FAULTS = [
    "http-500",
    "http-503",
    "http-connection-refused",
    "http-reset-mid-body",
    "http-hang-up-before-answer",
    "http-stall",
    "zip-over-refused-host",
    "zip-over-stalled-host",
    "zip-over-http-503",
    "s3-access-denied",
    "s3-no-such-bucket",
    "s3-throttled",
    "s3-hang-up",
    "s3-refused-endpoint",
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c) for c in FAULTS])
def test_fault_is_one_skip_with_its_reason_and_every_retry_logged(
    case: str, web: WebServer, bucket: Bucket, good: str, logs: list[dict[str, Any]]
) -> None:
    """The failing source is skipped once with its reason, each retry is logged, the other source loads."""
    fault = make_fault(case, web, bucket)
    source = fault.source(timeout=0.5) if fault.reason == "timeout" else fault.source()
    prompt = render([source, good], storage=fault.storage)

    assert "the good source" in prompt
    skip = only_skip(logs, fault.url)
    assert skip["reason"] == fault.reason
    assert fault.detail in skip["detail"]
    retried = of(logs, "source_retried", fault.url)
    assert [e["attempt"] for e in retried] == list(range(1, fault.retried + 1))
    assert all(e["reason"] == fault.reason and e["delay"] >= 0 and e["detail"] for e in retried)
    if fault.requests is not None:  # one request per attempt: no library retried behind the loader's back
        assert fault.requests() == fault.expected_requests


@pytest.mark.parametrize("case", [pytest.param(c, id=c) for c in FAULTS])
def test_required_fault_fails_the_render_naming_the_source(
    case: str,
    web: WebServer,
    bucket: Bucket,
    good: str,
    write_config: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A required source that fails makes ``memconfig render`` exit 1 with one line naming it, no traceback."""
    fault = make_fault(case, web, bucket)
    source = fault.source(required=True, **({"timeout": 0.5} if fault.reason == "timeout" else {}))
    path = write_config(config([source, good], storage=fault.storage))
    capsys.readouterr()
    try:
        code = main(["render", "-c", str(path)])
    finally:
        structlog.reset_defaults()
    out, err = capsys.readouterr()

    assert code == 1
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("memconfig: error") and fault.url in last and fault.reason in last
    assert "Traceback" not in err
    for secret in (bucket.server.secret, *(o.get("secret", "") for o in fault.storage.values())):
        assert not secret or secret not in err


def test_transient_failures_then_success_load_after_logged_retries(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """Two 503s, then the file: it loads, after two ``source_retried`` events."""
    url = web.serve("a.md", "third time lucky")
    web.fail("a.md", 503, times=2)
    assert "third time lucky" in render([url])
    assert [e["attempt"] for e in of(logs, "source_retried", url)] == [1, 2]
    assert not of(logs, "source_skipped")
    assert web.hits["a.md"] == 3


def test_s3_throttling_then_success_loads_after_logged_retries(
    web: WebServer, bucket: Bucket, logs: list[dict[str, Any]]
) -> None:
    """S3 SlowDown twice, then the object: two logged retries, three requests, and it loads."""
    url, storage = _s3_proxied(web, bucket, "a.md")
    web.fail(f"{bucket.name}/a.md", 503, times=2, body=SLOW_DOWN)
    assert "never read whole" in render([url], storage=storage)
    retried = of(logs, "source_retried", url)
    assert [(e["attempt"], e["detail"]) for e in retried] == [(1, "S3 SlowDown"), (2, "S3 SlowDown")]
    assert web.hits[f"{bucket.name}/a.md"] == 3


def test_s3_revalidation_head_is_tried_once_per_attempt(
    web: WebServer, bucket: Bucket, logs: list[dict[str, Any]]
) -> None:
    """Under ``revalidate``, throttled S3: each of the three attempts is one HEAD and one GET; the last copy stays."""
    url, storage = _s3_proxied(web, bucket, "a.md")
    key = f"{bucket.name}/a.md"
    pipeline = Pipeline.from_config(config([url], storage=storage, cache={"policy": "revalidate"}))
    assert "never read whole" in pipeline.render()
    web.methods.clear()
    web.fail(key, 503, body=SLOW_DOWN)

    assert "never read whole" in pipeline.render()
    assert (web.methods["HEAD", key], web.methods["GET", key]) == (3, 3)  # s3fs alone tries a HEAD five times
    assert [e["attempt"] for e in of(logs, "source_retried", url)] == [1, 2]
    assert of(logs, "source_stale", url)[0]["detail"] == "S3 SlowDown"


# -- Retry-After ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry_after", "timeout", "delay", "says"),
    [
        pytest.param("1", 5.0, 1.0, "Retry-After 1 s", id="seconds"),
        pytest.param("3600", 1.0, 1.0, "Retry-After 3600 s, capped at the source's timeout (1 s)", id="seconds-capped"),
        pytest.param(lambda: formatdate(time.time() + 3600, usegmt=True), 1.0, 1.0, "capped", id="http-date-capped"),
        pytest.param(lambda: formatdate(time.time() - 3600, usegmt=True), 5.0, 0.0, "Retry-After 0 s", id="date-past"),
    ],
)
def test_retry_after_is_the_delay(
    web: WebServer, logs: list[dict[str, Any]], retry_after: Any, timeout: float, delay: float, says: str
) -> None:
    """429 with ``Retry-After`` (seconds or an HTTP-date) waits as asked, never longer than the source's timeout."""
    value = retry_after() if callable(retry_after) else retry_after
    url = web.serve("a.md", "after waiting")
    web.fail("a.md", 429, times=1, Retry_After=value)
    assert "after waiting" in render([{"url": url, "timeout": timeout}])
    [retried] = of(logs, "source_retried", url)
    assert retried["delay"] == delay
    assert says in retried["detail"] and retried["detail"].startswith("HTTP 429")


# -- a server killed mid-run -------------------------------------------------------


def test_server_killed_between_renders(own_web: WebServer, good: str, logs: list[dict[str, Any]]) -> None:
    """Killed after a render: the next render keeps the last good copy (``source_stale``); a fresh state skips it."""
    url = own_web.serve("a.md", "served before the crash")
    pipeline = Pipeline.from_config(config([url, good], cache={"policy": "always"}))
    assert "served before the crash" in pipeline.render()
    own_web.kill()

    assert "served before the crash" in pipeline.render()
    [stale] = of(logs, "source_stale", url)
    assert stale["reason"] == "remote_error"
    assert not of(logs, "source_skipped")

    logs.clear()
    prompt = render([url, good])
    assert "the good source" in prompt and "crash" not in prompt
    assert only_skip(logs, url)["reason"] == "remote_error"
    assert len(of(logs, "source_retried", url)) == 2


def test_server_killed_during_a_render(own_web: WebServer, good: str, logs: list[dict[str, Any]]) -> None:
    """Killed while answering: the request fails, the retries find nothing listening, the render goes on."""
    url = own_web.serve("a.md", "never sent")
    own_web.delay("a.md", 30)
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(render([url, good])), daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG
    while own_web.hits["a.md"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    own_web.kill()
    thread.join(HANG)

    assert done and "the good source" in done[0] and "never sent" not in done[0]
    skip = only_skip(logs, url)
    assert skip["reason"] == "remote_error"
    assert [e["attempt"] for e in of(logs, "source_retried", url)] == [1, 2]
    assert own_web.hits["a.md"] == 1  # the retries were refused: nothing listened any more


def test_process_exits_soon_after_a_zip_over_a_stalled_host(
    own_web: WebServer, write_config: Callable[..., Path]
) -> None:
    """``memconfig render`` over a stalled zip host ends (exit 0, a ``timeout`` skip) instead of waiting at exit.

    The zip is opened in a worker thread, which the loader cannot cancel; each
    HTTP request it sends stops at the source's timeout, so the thread ends and
    the interpreter can exit (aiohttp alone waits five minutes).
    """
    url = "zip://a.md::" + own_web.delay("x.zip", 600)
    path = write_config(config([{"url": url, "timeout": 0.5}]))
    done = memconfig("render", "-c", str(path))
    assert done.returncode == 0, done.stderr
    [skip] = [e for e in map(json.loads, done.stderr.splitlines()) if e["event"] == "source_skipped"]
    assert skip["reason"] == "timeout"


# -- zip over HTTP: unreachable is not "not found" ---------------------------------


def test_zip_over_http_real_not_founds_stay_not_found(
    web: WebServer, tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """A missing member of a reachable zip, and a zip the server does not have (404), are ``not_found``."""
    import zipfile

    bundle = tmp_path / "b.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("a.md", "member a")
    zipped = web.serve("b.zip", bundle.read_bytes())
    missing_member = f"zip://absent.md::{zipped}"
    missing_zip = f"zip://a.md::{web.url('absent.zip')}"
    prompt = render([f"zip://a.md::{zipped}", missing_member, missing_zip])
    assert "member a" in prompt
    found = {e["source"]: e for e in of(logs, "source_skipped")}
    assert {k: e["reason"] for k, e in found.items()} == {missing_member: "not_found", missing_zip: "not_found"}
    assert "404" in found[missing_zip]["detail"]
    assert not of(logs, "source_retried")


# -- S3: what the loader hands botocore -------------------------------------------------


def test_s3_gets_no_botocore_retries_and_the_source_timeout() -> None:
    """botocore is told not to retry and to wait no longer than the source's timeout; the user can override both."""
    storage = {"s3": {"endpoint_url": "http://s3.local"}}
    data = {
        "version": 1,
        "storage": storage,
        "loader": {"timeout": 7},
        "sources": [
            "s3://b/a.md",
            {"url": "s3://b/c.md", "timeout": 3},
            {"url": "s3://b/d.md", "storage_options": {"config_kwargs": {"retries": {"max_attempts": 4}}}},
        ],
    }
    default, own_timeout, overridden = build_sources(Config.from_mapping(data))
    assert default.storage_options["config_kwargs"] == {
        "connect_timeout": 7,
        "read_timeout": 7,
        "retries": {"max_attempts": 0, "mode": "standard"},
    }
    assert own_timeout.storage_options["config_kwargs"]["read_timeout"] == 3
    assert overridden.storage_options["config_kwargs"]["retries"] == {"max_attempts": 4, "mode": "standard"}
    assert overridden.storage_options["endpoint_url"] == "http://s3.local"


def test_s3_refused_endpoint_is_tried_by_the_loader_alone(bucket: Bucket, logs: list[dict[str, Any]]) -> None:
    """An unreachable S3 endpoint: the loader's own attempts, each logged, with its own backoff as the delays."""
    url = f"s3://{bucket.name}/a.md"
    storage = {"s3": bucket.server.options(endpoint_url=f"http://127.0.0.1:{free_port()}")}
    render([url], storage=storage, loader={"backoff": 0.05, "retries": 3})
    retried = of(logs, "source_retried", url)
    assert [e["attempt"] for e in retried] == [1, 2, 3]
    assert all(e["delay"] <= 0.05 * 2**i for i, e in enumerate(retried))  # the loader's backoff, nothing added
    assert only_skip(logs, url)["reason"] == "remote_error"


# -- redirects and loader.allowed_hosts ---------------------------------------------


@pytest.mark.parametrize(
    ("url", "allowed", "expected"),
    [
        pytest.param("https://docs.example.com/a", ["docs.example.com"], True, id="exact"),
        pytest.param("https://DOCS.example.com./a", ["docs.example.com"], True, id="case-and-trailing-dot"),
        pytest.param("https://evil.com/a", ["docs.example.com"], False, id="other-host"),
        pytest.param("https://a.b.example.com/a", ["*.example.com"], True, id="subdomain"),
        pytest.param("https://example.com/a", ["*.example.com"], False, id="wildcard-not-apex"),
        pytest.param("https://badexample.com/a", ["*.example.com"], False, id="wildcard-needs-a-dot"),
        pytest.param("https://example.com.evil.net/a", ["example.com"], False, id="suffix-is-another-host"),
        pytest.param("http://h:8080/a", ["h:8080"], True, id="port"),
        pytest.param("http://h:8081/a", ["h:8080"], False, id="other-port"),
        pytest.param("https://h/a", ["h:443"], True, id="default-port"),
        pytest.param("http://h:9/a", ["h"], True, id="no-port-any-port"),
        pytest.param("http://[::1]:8080/a", ["[::1]:8080"], True, id="ipv6-port"),
        pytest.param("http://[::1]:8080/a", ["::1"], True, id="ipv6-bare"),
        pytest.param("http://user:pw@h/a", ["h"], True, id="user-info-is-not-the-host"),
        pytest.param("http://h@evil.com/a", ["h"], False, id="user-info-is-not-the-host-either"),
    ],
)
def test_host_patterns(url: str, allowed: list[str], expected: bool) -> None:
    """Exact hosts, ``*.domain`` for subdomains (not the domain), an optional port."""
    assert host_allowed(url, allowed) is expected


def test_redirect_within_allowed_hosts_is_followed(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A redirect to a path on an allowed host is followed and the target loads."""
    web.serve("new.md", "moved here")
    url = web.redirect("old.md", "/new.md")
    assert "moved here" in render([url], loader={"allowed_hosts": ["127.0.0.1"]})
    assert web.hits["new.md"] == 1


@pytest.mark.parametrize("spelling", [pytest.param("port", id="other-port"), pytest.param("name", id="other-name")])
def test_redirect_to_a_host_not_allowed_is_not_followed(
    web: WebServer, other: WebServer, good: str, logs: list[dict[str, Any]], spelling: str
) -> None:
    """A redirect off the allow-list: ``host_not_allowed`` naming the host (not the query); no request reaches it."""
    other.serve("x.md", "must not be read")
    host = f"127.0.0.1:{other.port}" if spelling == "port" else f"localhost:{other.port}"
    url = web.redirect("a.md", f"http://{host}/x.md?token={TOKEN}")
    allowed = [f"127.0.0.1:{web.port}"] if spelling == "port" else ["127.0.0.1"]
    prompt = render([url, good], loader={"allowed_hosts": allowed})

    assert "must not be read" not in prompt and "the good source" in prompt
    skip = only_skip(logs, url)
    assert skip["reason"] == "host_not_allowed"
    assert host in skip["detail"] and "redirect" in skip["detail"]
    assert TOKEN not in str(logs) and "x.md" not in skip["detail"]
    assert other.hits["x.md"] == 0
    assert not of(logs, "source_retried")


def test_redirect_off_the_list_is_refused_on_the_fingerprint_head_too(
    web: WebServer, other: WebServer, logs: list[dict[str, Any]]
) -> None:
    """Under ``revalidate``, a source redirecting off the list leaves the prompt; neither HEAD nor GET gets there."""
    url = web.serve("a.md", "first version", etag="v1")
    other.serve("x.md", "must not be read", etag="v2")
    pipeline = Pipeline.from_config(
        config([url], cache={"policy": "revalidate"}, loader={"allowed_hosts": [f"127.0.0.1:{web.port}"]})
    )
    assert "first version" in pipeline.render()
    web.redirect("a.md", other.url("x.md"))

    assert "first version" not in pipeline.render()  # a refusal is not a failure that may pass: no stale copy
    assert web.methods["HEAD", "a.md"] == 1
    assert other.hits["x.md"] == 0
    skip = of(logs, "source_skipped", url)[-1]
    assert skip["reason"] == "host_not_allowed" and f"127.0.0.1:{other.port}" in skip["detail"]


def test_zip_over_http_redirect_off_the_list_is_refused(
    web: WebServer, other: WebServer, tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    """A zip whose URL redirects off the list is ``host_not_allowed`` (not ``not_found``); nothing reaches the host."""
    import zipfile

    bundle = tmp_path / "b.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("a.md", "member a")
    other.serve("b.zip", bundle.read_bytes())
    url = "zip://a.md::" + web.redirect("b.zip", other.url("b.zip"))
    render([url], loader={"allowed_hosts": [f"127.0.0.1:{web.port}"]})
    assert only_skip(logs, url)["reason"] == "host_not_allowed"
    assert other.hits["b.zip"] == 0


def test_source_host_not_allowed_is_skipped_before_any_request(
    web: WebServer, write_config: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A source whose own host is off the list is never requested; required, it fails the render (exit 1)."""
    url = web.serve("a.md", "not to be read")
    path = write_config(config([{"url": url, "required": True}], loader={"allowed_hosts": ["docs.example.com"]}))
    try:
        code = main(["render", "-c", str(path)])
    finally:
        structlog.reset_defaults()
    err = capsys.readouterr().err
    assert code == 1 and "host_not_allowed" in err.splitlines()[-1] and url in err.splitlines()[-1]
    assert web.hits["a.md"] == 0


def test_redirects_without_an_allow_list_are_followed(web: WebServer, other: WebServer) -> None:
    """With no ``allowed_hosts``, a redirect to another host is followed, as before."""
    other.serve("x.md", "over there")
    assert "over there" in render([web.redirect("a.md", other.url("x.md"))])


def test_credentials_do_not_follow_a_redirect_to_another_host(web: WebServer, other: WebServer) -> None:
    """Basic auth from the URL and an ``Authorization`` header are not sent to the host a redirect leads to."""
    other.serve("x.md", "over there")
    web.redirect("a.md", other.url("x.md"))
    headers = {"headers": {"Authorization": f"Bearer {TOKEN}"}}
    assert "over there" in render([f"http://reader:pw-{TOKEN}@127.0.0.1:{web.port}/a.md"])
    assert "over there" in render([{"url": web.url("a.md"), "storage_options": headers}])
    assert len(web.auth) == len(other.auth) == 2
    assert web.auth and all(a is not None for a in web.auth)
    assert other.auth and all(a is None for a in other.auth)


def test_redirect_loop_is_too_many_redirects(web: WebServer, logs: list[dict[str, Any]]) -> None:
    """A redirect loop ends after ten hops as ``remote_error`` "too many redirects", not retried."""
    url = web.redirect("loop.md", "/loop.md")
    render([url], loader={"allowed_hosts": ["127.0.0.1"]})
    skip = only_skip(logs, url)
    assert skip["reason"] == "remote_error" and "too many redirects" in skip["detail"]
    assert web.hits["loop.md"] == 10
    assert not of(logs, "source_retried")
