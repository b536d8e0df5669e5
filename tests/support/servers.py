"""Real servers for the remote-source tests, each on loopback in a background thread.

:class:`WebServer` is an aiohttp application whose paths behave as a test sets
them up (serve bytes, fail with a status, answer slowly) and which counts the
requests it gets. :class:`S3Server` is moto's S3 API server with one IAM user
whose keys it enforces, so a wrong secret is refused as AWS would refuse it.
Both pick a free port and are stopped by :meth:`stop`, which waits for their
threads to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from aiohttp import web

__all__ = ["Bucket", "S3Server", "WebServer"]

HOST = "127.0.0.1"


@dataclass
class _Failure:
    status: int
    times: int | None  # None: forever
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


class WebServer:
    """An aiohttp server on ``127.0.0.1``, on its own event loop in a thread.

    Set up paths (without the leading ``/``) with :meth:`serve`, :meth:`fail`,
    :meth:`cut`, :meth:`drop`, :meth:`redirect`, :meth:`delay` and :meth:`then`;
    any other path answers 404, or is passed on to the server set with
    :meth:`forward`. :attr:`hits` counts requests
    per path, :attr:`methods` per method and path; :attr:`auth` records each
    request's ``Authorization`` header; :attr:`peak` is the most requests
    ever in progress at once; :attr:`sent` counts the body bytes written for
    paths served without ``Range`` support. :meth:`kill` stops it as a crash
    would, mid-answer.
    """

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.whole: set[str] = set()  # paths that ignore Range and stream the whole body
        self.compressed: set[str] = set()  # paths gzipped for clients that accept it, as nginx's gzip
        self.failures: dict[str, _Failure] = {}
        self.delays: dict[tuple[str, str | None], float] = {}  # (path, method or None for all): seconds
        self.hooks: dict[tuple[str, str], Callable[[], None]] = {}  # (path, method): run once the answer is made
        self.cuts: dict[str, list[int]] = {}  # path: [bytes sent before hanging up, times left]
        self.drops: dict[str, int | None] = {}  # path: times left to hang up before answering (None: always)
        self.redirects: dict[str, tuple[int, str]] = {}  # path: (status, Location)
        self.upstream: str | None = None  # where paths not set up are passed on (see forward)
        self.hits: Counter[str] = Counter()
        self.methods: Counter[tuple[str, str]] = Counter()
        self.sent: Counter[str] = Counter()
        self.auth: list[str | None] = []
        self.peak = 0  # the most requests ever in progress at once
        self.port = 0
        self._active = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._release: asyncio.Event | None = None
        self._open: set[asyncio.BaseTransport] = set()  # transports of the requests in progress

    def __repr__(self) -> str:
        return f"WebServer(port={self.port}, paths={sorted(self.files)})"

    # -- what the test sets up ----------------------------------------------

    def url(self, path: str) -> str:
        """The ``http://`` URL of *path* on this server."""
        return f"http://{HOST}:{self.port}/{path}"

    def serve(
        self,
        path: str,
        body: bytes | str,
        *,
        etag: str | None = None,
        last_modified: float | None = None,
        ranges: bool = True,
        compress: bool = False,
    ) -> str:
        """Serve *body* at *path*; returns its URL.

        Range requests are honoured as nginx does (416 for a range past the end,
        so for any range of an empty body) unless *ranges* is false: then the whole
        body is streamed in chunks whatever was asked, as by servers that ignore
        ``Range``, and :attr:`sent` counts what was written before the client hung up.
        With *compress*, a client that accepts gzip gets the body gzipped and the
        ETag weakened (``W/"…"``), as nginx's gzip module answers.
        """
        self.files[path] = body.encode() if isinstance(body, str) else body
        for flag, paths in ((not ranges, self.whole), (compress, self.compressed)):
            if flag:
                paths.add(path)
            else:
                paths.discard(path)
        extra = {}
        if etag is not None:
            extra["ETag"] = f'"{etag}"'
        if last_modified is not None:
            extra["Last-Modified"] = formatdate(last_modified, usegmt=True)
        self.headers[path] = extra
        return self.url(path)

    def fail(self, path: str, status: int, times: int | None = None, *, body: str | None = None, **headers: str) -> str:
        """Answer *status* to the first *times* requests for *path* (all, if None), then serve it.

        *headers* are sent with the failure (``Retry_After="3"`` sends ``Retry-After: 3``);
        *body* replaces the default text (an S3 error document, say).
        """
        self.failures[path] = _Failure(status, times, {k.replace("_", "-"): v for k, v in headers.items()}, body)
        return self.url(path)

    def drop(self, path: str, times: int | None = None) -> str:
        """Hang up on the first *times* requests for *path* (all, if None) before answering anything."""
        self.drops[path] = times
        return self.url(path)

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        """Answer every request for *path* with a redirect (*status*) to *location*."""
        self.redirects[path] = (status, location)
        return self.url(path)

    def forward(self, upstream: str | None) -> None:
        """Pass requests for paths not set up here on to *upstream* (``http://host:port``), as a proxy.

        Headers go as they came, ``Host`` included, so a request signed for this
        server (S3's SigV4) verifies upstream. Failures set up here come first:
        put this in front of the S3 server to make it throttle or hang up.
        """
        self.upstream = upstream

    def cut(self, path: str, after: int, times: int = 1) -> str:
        """Hang up on the first *times* requests for *path* after *after* bytes of its body, then serve it."""
        self.cuts[path] = [after, times]
        return self.url(path)

    def delay(self, path: str, seconds: float, method: str | None = None) -> str:
        """Wait *seconds* before answering *path*, or only its *method* requests; cut short when the server stops."""
        self.delays[path, method] = seconds
        return self.url(path)

    def then(self, path: str, method: str, action: Callable[[], None]) -> None:
        """Run *action* on the server's loop once, right after the next *method* answer for *path* is made."""
        self.hooks[path, method] = action

    def reset(self) -> None:
        """Let slow answers finish now, then forget every path and count."""
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._settle(), self._loop).result(10)
        self.files.clear()
        self.headers.clear()
        self.whole.clear()
        self.compressed.clear()
        self.hooks.clear()
        self.sent.clear()
        self.failures.clear()
        self.delays.clear()
        self.cuts.clear()
        self.drops.clear()
        self.redirects.clear()
        self.upstream = None
        self.hits.clear()
        self.methods.clear()
        self.auth.clear()
        self.peak = 0

    def wait_idle(self, timeout: float = 10) -> None:
        """Wait until no request is in progress (a handler may outlive its client)."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(asyncio.wait_for(self._idle(), timeout), self._loop).result()

    # -- the application -----------------------------------------------------

    async def _idle(self) -> None:
        while self._active:
            await asyncio.sleep(0.005)

    async def _settle(self) -> None:
        assert self._release is not None
        self._release.set()
        await self._idle()
        self._release = asyncio.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["path"]
        self.hits[path] += 1
        self.methods[request.method, path] += 1
        self.auth.append(request.headers.get("Authorization"))
        self._active += 1
        self.peak = max(self.peak, self._active)
        transport = request.transport
        if transport is not None:
            self._open.add(transport)
        try:
            return await self._answer(request, path)
        finally:
            self._open.discard(transport)  # type: ignore[arg-type]
            self._active -= 1
            hook = self.hooks.pop((path, request.method), None)
            if hook is not None:
                hook()

    async def _answer(self, request: web.Request, path: str) -> web.StreamResponse:
        seconds = self.delays.get((path, request.method), self.delays.get((path, None)))
        if seconds and self._release is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), seconds)
        if path in self.drops and self.drops[path] != 0:
            times = self.drops[path]
            if times is not None:
                self.drops[path] = times - 1
            assert request.transport is not None
            request.transport.close()  # no status line at all
            return web.Response(status=500)  # never reaches the client
        failure = self.failures.get(path)
        if failure is not None and (failure.times is None or failure.times > 0):
            if failure.times is not None:
                failure.times -= 1
            text = failure.body if failure.body is not None else f"failing with {failure.status}"
            return web.Response(status=failure.status, text=text, headers=failure.headers)
        if path in self.redirects:
            status, location = self.redirects[path]
            return web.Response(status=status, headers={"Location": location})
        body = self.files.get(path)
        if body is None and self.upstream is not None:
            return await self._pass_on(request)
        if body is None:
            return web.Response(status=404, text="not here")
        cut = self.cuts.get(path)
        if cut is not None and cut[1] > 0:
            cut[1] -= 1
            return await self._stream(request, path, body, upto=cut[0])
        if path in self.whole:
            return await self._stream(request, path, body)
        headers = {"Accept-Ranges": "bytes", **self.headers.get(path, {})}
        if path in self.compressed and "gzip" in request.headers.get("Accept-Encoding", ""):
            if "ETag" in headers:
                headers["ETag"] = f"W/{headers['ETag']}"
            headers["Content-Encoding"] = "gzip"
            body = gzip.compress(body)  # and no ranges, as nginx once it compresses
            return web.Response(body=body, headers={**headers, "Content-Length": str(len(body))})
        wanted = request.http_range
        if request.headers.get("Range") and (wanted.start is not None or wanted.stop is not None):
            start, stop, _ = wanted.indices(len(body))
            if start >= len(body):
                return web.Response(status=416, headers={"Content-Range": f"bytes */{len(body)}"})
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(body)}"
            return web.Response(status=206, body=body[start:stop], headers=headers)
        # aiohttp leaves Content-Length out of a HEAD answer for an empty body; servers such as nginx send it.
        return web.Response(body=body, headers={**headers, "Content-Length": str(len(body))})

    async def _pass_on(self, request: web.Request) -> web.Response:
        """The upstream server's answer to *request*, sent on as it is (see :meth:`forward`)."""
        import aiohttp
        from yarl import URL

        hop_by_hop = {"connection", "keep-alive", "transfer-encoding", "content-length"}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in hop_by_hop}
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.request(
                request.method,
                URL(f"{self.upstream}{request.raw_path}", encoded=True),  # as sent: a re-quoted query breaks SigV4
                headers=headers,
                data=await request.read(),
                allow_redirects=False,
            ) as answer,
        ):
            body = await answer.read()
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in hop_by_hop}
            return web.Response(status=answer.status, body=body, headers=kept)

    async def _stream(
        self, request: web.Request, path: str, body: bytes, upto: int | None = None
    ) -> web.StreamResponse:
        """Write *body* in chunks, counting them in :attr:`sent`; hang up after *upto* bytes if given."""
        response = web.StreamResponse(headers=self.headers.get(path, {}))
        response.content_length = len(body)
        await response.prepare(request)
        if request.method == "HEAD":
            return response
        end = len(body) if upto is None else upto
        with contextlib.suppress(ConnectionError):  # the client hung up: stop writing
            for start in range(0, end, 1 << 16):
                chunk = body[start : min(start + (1 << 16), end)]
                await response.write(chunk)
                self.sent[path] += len(chunk)
            if upto is not None:
                assert request.transport is not None
                request.transport.close()  # the body ends before its Content-Length
                return response
            await response.write_eof()
        return response

    # -- lifecycle -------------------------------------------------------------

    def start(self, port: int = 0) -> WebServer:
        """Start listening on *port* (0: a free one); returns once requests are served.

        A stopped server can start again on its old port, as a restarted server would.
        """
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def begin() -> None:
            app = web.Application()
            app.router.add_route("*", "/{path:.*}", self._handle)
            self._release = asyncio.Event()
            self._runner = web.AppRunner(app, shutdown_timeout=0.1, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, HOST, port, reuse_address=True)
            await site.start()
            self.port = self._runner.addresses[0][1]

        failed: list[BaseException] = []

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(begin())
            except BaseException as exc:
                failed.append(exc)
                return
            finally:
                ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="test-web-server", daemon=True)
        self._thread.start()
        if not ready.wait(10) or failed:
            raise RuntimeError("the test web server did not start") from (failed[0] if failed else None)
        return self

    def kill(self) -> None:
        """Stop as a crashed server would: stop listening, hang up on every request in progress, then stop."""
        loop = self._loop
        if loop is None:
            return

        async def crash() -> None:
            assert self._runner is not None
            for site in list(self._runner.sites):
                await site.stop()  # refuses connections from now on
            for transport in list(self._open):
                transport.abort()

        asyncio.run_coroutine_threadsafe(crash(), loop).result(10)
        self.stop()

    def stop(self) -> None:
        """Stop serving, end the thread and close the loop."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def end() -> None:
            assert self._release is not None and self._runner is not None
            self._release.set()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(end(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if thread.is_alive():
            raise RuntimeError("the test web server's thread did not end")
        loop.close()
        self._loop = self._thread = None


class S3Server:
    """moto's S3 API on ``127.0.0.1`` (a free port) in a thread, enforcing one user's keys.

    While it runs, moto checks signatures: requests signed with :attr:`key` and
    :attr:`secret` are allowed everything, any other key or secret is refused.
    """

    region = "us-east-1"

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
        self.endpoint_url = ""
        self.key = ""
        self.secret = ""
        self._auth_before = "inf"
        self._werkzeug_level = logging.NOTSET
        self._stranger: tuple[str, str] | None = None

    def __repr__(self) -> str:
        return f"S3Server(endpoint_url={self.endpoint_url!r})"

    def start(self) -> S3Server:
        """Start the server, create the user, then turn signature checks on."""
        werkzeug = logging.getLogger("werkzeug")  # one line per request otherwise
        self._werkzeug_level = werkzeug.level
        werkzeug.setLevel(logging.ERROR)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        self._auth_before = self._set_auth("inf")
        iam = self._client("iam", "setup", "setup")
        iam.create_user(UserName="memconfig-test")
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="memconfig-test", PolicyName="all", PolicyDocument=json.dumps(policy))
        created = iam.create_access_key(UserName="memconfig-test")["AccessKey"]
        self.key, self.secret = created["AccessKeyId"], created["SecretAccessKey"]
        self._set_auth("0")
        return self

    def stop(self) -> None:
        """Put moto's signature checks back as they were, drop all moto state and stop the thread."""
        try:
            self._set_auth(self._auth_before)
            urllib.request.urlopen(urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")).close()
        finally:
            self._server.stop()
            logging.getLogger("werkzeug").setLevel(self._werkzeug_level)

    def stranger(self) -> dict[str, Any]:
        """s3fs storage options for a second user, whose keys are valid but who may do nothing (AccessDenied)."""
        if self._stranger is None:
            iam = self._client("iam", self.key, self.secret)
            iam.create_user(UserName="memconfig-stranger")
            created = iam.create_access_key(UserName="memconfig-stranger")["AccessKey"]
            self._stranger = (created["AccessKeyId"], created["SecretAccessKey"])
        key, secret = self._stranger
        return self.options(key=key, secret=secret)

    def client(self) -> Any:
        """A boto3 S3 client signed with the allowed user's keys."""
        return self._client("s3", self.key, self.secret)

    def options(self, **overrides: Any) -> dict[str, Any]:
        """s3fs storage options reaching this server as the allowed user."""
        return {
            "endpoint_url": self.endpoint_url,
            "key": self.key,
            "secret": self.secret,
            "client_kwargs": {"region_name": self.region},
            **overrides,
        }

    def _client(self, service: str, key: str, secret: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
        )

    def _set_auth(self, count: str) -> str:
        """Let *count* more requests through unchecked ("inf": all); returns the previous setting."""
        request = urllib.request.Request(
            f"{self.endpoint_url}/moto-api/reset-auth",
            data=count.encode(),
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(request) as response:
            return str(json.load(response)["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"])


@dataclass
class Bucket:
    """A fresh bucket on the S3 server, and how to reach it."""

    server: S3Server
    name: str

    def put(self, key: str, body: str | bytes) -> str:
        """Store *body* at *key*; returns its ``s3://`` URL."""
        data = body.encode() if isinstance(body, str) else body
        self.server.client().put_object(Bucket=self.name, Key=key, Body=data)
        return f"s3://{self.name}/{key}"

    def storage(self) -> dict[str, Any]:
        """A top-level ``storage`` section that reaches the server as its user."""
        return {"s3": self.server.options()}
