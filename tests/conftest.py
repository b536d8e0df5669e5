"""Shared fixtures: an in-memory filesystem, a way to write configs, the test servers and the captured log."""

from __future__ import annotations

import compileall
import itertools
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
import structlog
import yaml
from support.cli import ROOT
from support.servers import Bucket, S3Server, WebServer

# Bytecode is written and used, as Python does by default, even where PYTHONDONTWRITEBYTECODE is set
# (benchmarks/startup.py does the same): the suite starts some 600 `python -m memconfig` processes, each of
# which would compile memconfig from source (a quarter of its start-up CPU), and each xdist worker would
# rewrite and compile every test module again. The files go to the usual __pycache__ folders (git ignores them).
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """Once per run (the xdist controller, or the only process): memconfig's bytecode, for every child to read."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(ROOT / "memconfig", quiet=2)  # a read-only tree: nothing written, nothing said


@pytest.fixture
def memfs() -> Iterator[Any]:
    """fsspec's memory filesystem, emptied before and after the test."""
    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    yield fs
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a config mapping (or raw YAML text) to ``tmp_path/memconfig.yaml``."""

    def write(data: dict[str, Any] | str, name: str = "memconfig.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def _structlog_unconfigured() -> Iterator[None]:
    """Each test starts and ends with structlog unconfigured, as a library user's process does."""
    import structlog

    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="module")
def web_server() -> Iterator[WebServer]:
    """One aiohttp server on 127.0.0.1 for the module; :func:`web` resets it per test."""
    server = WebServer().start()
    yield server
    server.stop()


@pytest.fixture
def web(web_server: WebServer) -> Iterator[WebServer]:
    """The aiohttp server with no paths set up and all counts at zero."""
    web_server.reset()
    yield web_server
    web_server.reset()


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 API server for the module, enforcing its one user's keys."""
    server = S3Server().start()
    yield server
    server.stop()


_bucket_numbers = itertools.count()


@pytest.fixture
def bucket(s3_server: S3Server) -> Bucket:
    """A bucket of its own for each test, so no test sees another's objects."""
    name = f"memconfig-{next(_bucket_numbers)}"
    s3_server.client().create_bucket(Bucket=name)
    return Bucket(s3_server, name)


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """The structlog events of the test, as dicts; structlog is unconfigured again afterwards."""
    with structlog.testing.capture_logs() as captured:
        yield captured
    # capture_logs leaves structlog marked as configured (and printing to stdout).
    structlog.reset_defaults()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port on which nothing listens: connections to it are refused.

    The socket stays bound (never listening) until the test ends, so no server of another test or xdist
    worker can be given the port meanwhile.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture
def free_port() -> int:
    """A loopback port free for a server the test starts itself (the system's choice of an unused one)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
