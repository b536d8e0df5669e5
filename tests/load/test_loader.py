"""The loader stage on local and in-memory files: results, reasons, order."""

from __future__ import annotations

import asyncio
import datetime
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memconfig import FsspecLoader, LoadRequest, Source
from memconfig.drive import arun
from memconfig.load.fingerprints import fingerprint as _fingerprint
from memconfig.load.fingerprints import local_fingerprint
from memconfig.process import Cleaning


def _source(url: str, key: str | None = None, **kwargs: Any) -> Source:
    return Source(key=key or url, name=key or url, url=url, **kwargs)


def _load(*urls: str, **options: Any) -> list[Any]:
    loader = FsspecLoader(**options)
    return loader.load([LoadRequest(_source(u)) for u in urls])


def test_local_and_memory_files_load_in_request_order(tmp_path: Path, memfs: Any) -> None:
    """Results come back in the order asked, each with bytes, sha256 and content."""
    (tmp_path / "a.md").write_text("local", encoding="utf-8")
    memfs.pipe("/b.md", b"in memory")
    results = _load("memory://b.md", str(tmp_path / "a.md"), f"file://{tmp_path / 'a.md'}")
    assert [r.content for r in results] == ["in memory", "local", "local"]
    assert [r.status for r in results] == ["loaded"] * 3
    assert results[0].bytes == 9 and len(results[0].sha256) == 64


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        pytest.param(lambda d: None, "not_found", id="missing"),
        pytest.param(lambda d: (d / "x.md").mkdir(), "is_directory", id="directory"),
        pytest.param(lambda d: (d / "x.md").write_bytes(b"\xff\xfeoops"), "decode_error", id="not-utf8"),
        pytest.param(lambda d: (d / "x.md").write_bytes(b"x" * 101), "too_large", id="too-large"),
        pytest.param(lambda d: (d / "x.md").write_text("<!-- c -->\n  \n"), "empty", id="comment-only"),
        pytest.param(lambda d: (d / "x.md").write_text(""), "empty", id="empty-file"),
    ],
)
def test_unreadable_files_are_skipped_with_a_reason(tmp_path: Path, setup: Any, reason: str) -> None:
    """Every file that cannot go in becomes a skip with a reason, never an exception."""
    setup(tmp_path)
    [result] = FsspecLoader(max_bytes=100, is_blank=Cleaning().is_blank).load(
        [LoadRequest(_source(str(tmp_path / "x.md")))]
    )
    assert (result.status, result.reason) == ("skipped", reason)
    assert result.detail


def test_memory_directory_is_a_directory(memfs: Any) -> None:
    """A directory on a filesystem without real directories still says is_directory."""
    memfs.pipe("/dir/inner.md", b"x")
    [result] = _load("memory://dir")
    assert result.reason == "is_directory"


@pytest.mark.parametrize(
    ("policy", "status", "content"),
    [
        pytest.param("replace", "loaded", "ok \ufffd", id="replace"),
        pytest.param("skip", "skipped", None, id="skip"),
        pytest.param("fail", "skipped", None, id="fail-is-fatal"),
    ],
)
def test_decode_error_policies(memfs: Any, policy: str, status: str, content: str | None) -> None:
    """Bad bytes are replaced, skipped, or make a fatal skip, as configured."""
    memfs.pipe("/bad.md", b"ok \xff")
    [result] = _load("memory://bad.md", on_decode_error=policy)
    assert (result.status, result.content) == (status, content)
    assert result.fatal is (policy == "fail")


def test_no_more_than_max_bytes_plus_one_is_read(tmp_path: Path) -> None:
    """A huge file is rejected after reading max_bytes + 1 bytes, not all of it."""
    big = tmp_path / "big.md"
    big.write_bytes(b"y" * 10_000_000)
    [result] = _load(str(big), max_bytes=10)
    assert result.reason == "too_large" and "10 bytes" in result.detail


def test_unchanged_fingerprint_is_not_read_again(tmp_path: Path) -> None:
    """A request whose known fingerprint still matches comes back unchanged, without content."""
    path = tmp_path / "a.md"
    path.write_text("v1", encoding="utf-8")
    loader = FsspecLoader()
    [first] = loader.load([LoadRequest(_source(str(path)))])
    [again] = loader.load([LoadRequest(_source(str(path)), first.fingerprint, first.sha256)])
    assert (again.status, again.content, again.sha256) == ("unchanged", None, first.sha256)
    path.write_text("v2 longer", encoding="utf-8")
    [changed] = loader.load([LoadRequest(_source(str(path)), first.fingerprint, first.sha256)])
    assert (changed.status, changed.content) == ("loaded", "v2 longer")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(b"x" * 101, "too_large", id="too-large"),
        pytest.param(b"\xff\xfeoops", "decode_error", id="not-utf8"),
        pytest.param(b"<!-- c -->\n", "empty", id="comment-only"),
        pytest.param(b"", "empty", id="empty-file"),
    ],
)
def test_file_skipped_for_its_content_keeps_its_fingerprint(tmp_path: Path, body: bytes, reason: str) -> None:
    """A file skipped for what it holds carries its fingerprint, so asking again unchanged reads nothing."""
    path = tmp_path / "x.md"
    path.write_bytes(body)
    loader = FsspecLoader(max_bytes=100, is_blank=Cleaning().is_blank)
    [skipped] = loader.load([LoadRequest(_source(str(path)))])
    assert (skipped.status, skipped.reason) == ("skipped", reason)
    assert skipped.fingerprint == local_fingerprint(os.stat(path))
    [again] = loader.load([LoadRequest(_source(str(path)), skipped.fingerprint)])
    assert again.status == "unchanged"


def test_same_bytes_with_new_fingerprint_are_unchanged(memfs: Any) -> None:
    """Rewriting identical bytes is recognised by the content hash."""
    memfs.pipe("/a.md", b"same")
    loader = FsspecLoader(fingerprints=True)
    [first] = loader.load([LoadRequest(_source("memory://a.md"))])
    memfs.pipe("/a.md", b"same")
    [again] = loader.load([LoadRequest(_source("memory://a.md"), "stale-token", first.sha256)])
    assert again.status == "unchanged"


def _http_date(when: datetime.datetime) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S GMT")


_OLD = datetime.datetime(2001, 1, 1, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("info", "kept"),
    [
        pytest.param(lambda s: {"LastModified": s, "size": 3}, False, id="s3-time-this-second"),
        pytest.param(lambda s: {"LastModified": s - datetime.timedelta(minutes=1)}, True, id="s3-time-a-minute-old"),
        pytest.param(lambda s: {"Last-Modified": _http_date(s)}, False, id="http-date-this-second"),
        pytest.param(lambda s: {"Last-Modified": _http_date(_OLD)}, True, id="http-date-old"),
        pytest.param(lambda s: {"Last-Modified": _http_date(s), "Date": _http_date(_OLD)}, True, id="server-clock"),
        pytest.param(lambda s: {"Last-Modified": _http_date(s), "Date": "not a date"}, False, id="unreadable-date"),
        pytest.param(lambda s: {"mtime": s.timestamp()}, False, id="whole-second-number"),
        pytest.param(lambda s: {"mtime": s.timestamp() + 0.25}, True, id="sub-second-number"),
        pytest.param(
            lambda s: {"updated": (s + datetime.timedelta(milliseconds=250)).isoformat().replace("+00:00", "Z")},
            True,
            id="iso-with-milliseconds",
        ),
        pytest.param(lambda s: {"updated": "yesterday-ish"}, False, id="unreadable-time"),
        pytest.param(lambda s: {"ETag": '"v1"', "Last-Modified": _http_date(s)}, True, id="etag"),
        pytest.param(lambda s: {"hex": "ab12", "mtime": s.timestamp()}, True, id="git-hex"),
    ],
)
def test_whole_second_time_near_the_read_is_no_fingerprint(
    info: Callable[[datetime.datetime], dict[str, Any]], kept: bool
) -> None:
    """A whole-second time within 2 s of the read (by the server's clock if sent) is no token; others are."""
    this_second = datetime.datetime.fromtimestamp(int(time.time()), datetime.UTC)
    assert (_fingerprint(info(this_second)) is not None) is kept


def test_glob_expands_in_sorted_order(memfs: Any) -> None:
    """A glob yields one result per matching file, sorted, each keyed by its own path."""
    for name in ("c", "a", "b"):
        memfs.pipe(f"/rules/{name}.md", name.encode())
    memfs.pipe("/rules/skip.txt", b"no")
    results = FsspecLoader().load([LoadRequest(_source("memory://rules/*.md", glob=True))])
    assert [r.source.key for r in results] == ["memory://rules/a.md", "memory://rules/b.md", "memory://rules/c.md"]
    assert {r.source.parent for r in results} == {"memory://rules/*.md"}


def test_glob_matching_nothing_is_not_found(memfs: Any) -> None:
    """An empty glob is one skip with reason not_found."""
    [result] = FsspecLoader().load([LoadRequest(_source("memory://none/*.md", glob=True))])
    assert (result.source.key, result.reason) == ("memory://none/*.md", "not_found")


def test_local_glob_keys_keep_the_written_prefix(tmp_path: Path) -> None:
    """Matches of `~/…` or relative globs are keyed as the user wrote the folder."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x.md").write_text("x", encoding="utf-8")
    source = Source(key="./r/*.md", name="./r/*.md", url=str(tmp_path / "r" / "*.md"), glob=True)
    [result] = FsspecLoader().load([LoadRequest(source)])
    assert result.source.key == "./r/x.md" and result.content == "x"


def test_aload_gives_the_same_results(tmp_path: Path, memfs: Any) -> None:
    """The async path returns what the sync path does."""
    memfs.pipe("/a.md", b"A")
    requests = [LoadRequest(_source("memory://a.md")), LoadRequest(_source(str(tmp_path / "nope.md")))]
    results = asyncio.run(arun(FsspecLoader().read(requests)))
    assert [(r.status, r.content, r.reason) for r in results] == [("loaded", "A", None), ("skipped", None, "not_found")]


@pytest.mark.parametrize(
    ("token", "version"),
    [
        pytest.param("12:345:678", (12, 345, 678), id="local"),
        pytest.param(None, None, id="none"),
        pytest.param('ETag:"abc"', None, id="etag"),
        pytest.param("mtime:1.5:10:", None, id="remote-time"),
    ],
)
def test_local_version_parses_only_local_fingerprints(token: str | None, version: Any) -> None:
    """A stat-only revalidation compares (inode, size, mtime_ns); any other token never matches a stat."""
    from memconfig.load.fingerprints import local_version

    assert local_version(token) == version
