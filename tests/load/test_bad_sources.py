"""Sources that are not plain text files: each is one event with its reason, nothing blocks, the rest load."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.pipelines import events_named, plain_pipeline

from memconfig import SourceError
from memconfig.cli import main


def _skips(logs: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {e["source"]: (e["reason"], e["detail"]) for e in events_named(logs, "source_skipped")}


def _render_within(pipeline: Any, seconds: float = 20) -> tuple[str, list[dict[str, Any]]]:
    """Render in a thread; a render still running after *seconds* is a hang (the test fails, it does not wait)."""
    out: dict[str, Any] = {}

    def go() -> None:
        with capture_logs() as logs:
            out["text"] = pipeline.render()
        out["logs"] = logs

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the render blocked"
    return out["text"], out["logs"]


@pytest.fixture
def odd_files(tmp_path: Path) -> Iterator[Path]:
    """A folder with a good file and one of each kind of file that is not text."""
    (tmp_path / "good.md").write_text("good text\n")
    os.mkfifo(tmp_path / "fifo.md")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "socket.md"))
    (tmp_path / "nul.md").write_bytes(b"text\x00more\n")
    os.symlink(tmp_path / "loop-b.md", tmp_path / "loop-a.md")
    os.symlink(tmp_path / "loop-a.md", tmp_path / "loop-b.md")
    (tmp_path / "folder.md").mkdir()
    try:
        yield tmp_path
    finally:
        server.close()


def test_a_fifo_a_socket_a_device_a_loop_and_a_nul_byte_are_each_skipped_with_their_reason(odd_files: Path) -> None:
    names = ["fifo.md", "socket.md", "/dev/zero", "nul.md", "loop-a.md", "folder.md", "good.md"]
    text, logs = _render_within(plain_pipeline(odd_files, names))

    assert text.strip() == "good text"
    assert _skips(logs) == {
        "fifo.md": ("not_regular_file", "is a FIFO, not a regular file"),
        "socket.md": ("not_regular_file", "is a socket, not a regular file"),
        "/dev/zero": ("not_regular_file", "is a character device, not a regular file"),
        "nul.md": ("binary", "holds a NUL character (at character 4): not text"),
        "loop-a.md": ("symlink_loop", "too many levels of symbolic links"),
        "folder.md": ("is_directory", "is a directory"),
    }
    assert [e["source"] for e in events_named(logs, "source_loaded")] == ["good.md"]


def test_a_glob_that_matches_a_fifo_skips_it_without_blocking(odd_files: Path) -> None:
    text, logs = _render_within(plain_pipeline(odd_files, [{"glob": "*.md"}]))

    assert text.strip() == "good text"
    skips = _skips(logs)
    assert skips["fifo.md"][0] == skips["socket.md"][0] == "not_regular_file"
    assert skips["nul.md"][0] == "binary"


@pytest.mark.parametrize("policy", ["once", "revalidate", "always"])
def test_a_fifo_never_blocks_a_later_turn_and_is_told_once(odd_files: Path, policy: str) -> None:
    pipeline = plain_pipeline(odd_files, ["fifo.md", "good.md"], policy)
    _render_within(pipeline)
    for _ in range(3):
        text, logs = _render_within(pipeline)
        assert text.strip() == "good text"
        assert "fifo.md" not in _skips(logs)  # out for the same reason: logged when it went out


def test_a_required_fifo_fails_the_render_naming_it(odd_files: Path) -> None:
    pipeline = plain_pipeline(odd_files, [{"url": "fifo.md", "required": True}, "good.md"])
    with pytest.raises(SourceError) as caught:
        pipeline.render()
    assert [(f.source, f.reason) for f in caught.value.failures] == [("fifo.md", "not_regular_file")]


def test_sources_command_does_not_block_on_a_fifo(odd_files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = odd_files / "memconfig.yaml"
    config.write_text("version: 1\nsources: [fifo.md, good.md, /dev/zero]\n")
    done: dict[str, int] = {}
    worker = threading.Thread(target=lambda: done.setdefault("code", main(["sources", "-c", str(config)])))
    worker.daemon = True
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "memconfig sources blocked"
    out = capsys.readouterr().out
    assert done["code"] == 0
    assert "not_regular_file" in out and "good.md" in out


def test_a_file_that_may_not_be_read_is_permission_denied(tmp_path: Path) -> None:
    (tmp_path / "locked.md").write_text("x")
    (tmp_path / "locked.md").chmod(0)
    (tmp_path / "good.md").write_text("good")
    config = tmp_path / "memconfig.yaml"
    config.write_text("version: 1\nsources: [locked.md, good.md]\nformatter: {preset: plain}\n")
    command = [sys.executable, "-m", "memconfig", "render", "-c", str(config)]
    if os.geteuid() == 0:  # root reads any file unless it gives up the capabilities that let it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: no way to be denied a read")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "good"), result.stderr
    (skip,) = [json.loads(line) for line in result.stderr.splitlines() if "source_skipped" in line]
    assert (skip["source"], skip["reason"], skip["detail"]) == ("locked.md", "permission_denied", "permission denied")


@pytest.mark.parametrize(
    ("policy", "text", "reason"),
    [
        ("skip", None, "decode_error"),
        ("replace", "caf\ufffd\n", None),
        ("fail", None, "decode_error"),
    ],
)
def test_text_that_is_not_utf8_under_each_policy(tmp_path: Path, policy: str, text: str | None, reason: str) -> None:
    (tmp_path / "latin1.md").write_bytes("café\n".encode("latin-1"))
    (tmp_path / "good.md").write_text("good")
    pipeline = plain_pipeline(tmp_path, ["latin1.md", "good.md"], loader={"on_decode_error": policy})
    with capture_logs() as logs:
        if policy == "fail":
            with pytest.raises(SourceError) as caught:
                pipeline.render()
            assert str(caught.value.failures[0]) == "'latin1.md': decode_error (not valid utf-8 at byte 3)"
            return
        rendered = pipeline.render()
    if text is None:
        assert rendered.strip() == "good"
        assert _skips(logs) == {"latin1.md": ("decode_error", "not valid utf-8 at byte 3")}
    else:
        assert rendered == f"{text.rstrip()}\n\ngood"
        assert _skips(logs) == {}


def test_a_bom_is_stripped_and_utf16_text_with_nul_bytes_is_text(tmp_path: Path) -> None:
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbfwith a BOM\n")
    pipeline = plain_pipeline(tmp_path, ["bom.md"])
    assert pipeline.render() == "with a BOM"
    (tmp_path / "wide.md").write_text("wide text\n", encoding="utf-16-le")
    assert plain_pipeline(tmp_path, ["wide.md"], loader={"encoding": "utf-16-le"}).render() == "wide text"


def test_a_file_over_max_bytes_is_too_large_and_never_read_whole(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 5000)
    (tmp_path / "good.md").write_text("good")
    _, logs = _render_within(plain_pipeline(tmp_path, ["big.md", "good.md"], loader={"max_bytes": 4096}))
    assert _skips(logs) == {"big.md": ("too_large", "larger than loader.max_bytes (4096 bytes)")}


class _Rewriter:
    """Rewrites a file in place (same inode) as fast as it can, alternating two versions of different sizes."""

    def __init__(self, path: Path) -> None:
        self.path, self.stop = path, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        versions = [b"A" * 200_000 + b"\n", b"B" * 100_000 + b"\n"]
        i = 0
        with open(self.path, "r+b", buffering=0) as f:
            while not self.stop.is_set():
                f.seek(0)
                f.truncate()
                f.write(versions[i % 2])
                i += 1

    def __enter__(self) -> _Rewriter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_a_file_rewritten_while_it_is_read_gives_what_it_held_at_one_moment_never_a_mix(tmp_path: Path) -> None:
    path = tmp_path / "busy.md"
    path.write_bytes(b"A" * 200_000 + b"\n")
    pipeline = plain_pipeline(tmp_path, ["busy.md"], "always")
    with _Rewriter(path), capture_logs() as logs:
        texts = [pipeline.render() for _ in range(200)]
    # A writer that is halfway through has written a prefix: that is what the file holds then. Two versions,
    # or a version cut by a truncate, are never glued together.
    assert [len(set(t)) for t in texts if len(set(t)) > 1] == [], "a torn or mixed read went into the prompt"
    assert {e["reason"] for e in events_named(logs, "source_skipped")} <= {"changed_during_read", "empty"}
    assert len(events_named(logs, "prompt_built")) == 200


def test_a_file_of_size_zero_that_holds_text_is_read(tmp_path: Path) -> None:
    # /proc and /sys give their files' size as 0.
    text = plain_pipeline(None, ["/proc/self/status"]).render()
    assert text.startswith("Name:")


def test_a_glob_matching_more_than_max_matches_is_skipped_whole(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"note{i}.md").write_text(f"note {i}")
    (tmp_path / "good.md").write_text("good")
    pipeline = plain_pipeline(tmp_path, [{"glob": "note*.md"}, "good.md"], loader={"max_matches": 5})
    with capture_logs() as logs:
        assert pipeline.render() == "good"
    assert _skips(logs) == {"note*.md": ("too_large", "matched 6 files, more than loader.max_matches (5)")}
    assert plain_pipeline(tmp_path, [{"glob": "note*.md"}], loader={"max_matches": 6}).render().count("note") == 6


def test_a_zip_whose_archive_is_a_fifo_is_skipped_and_the_process_exits(tmp_path: Path) -> None:
    """The archive of a chained URL is checked as a plain path is: a FIFO there is never opened."""
    os.mkfifo(tmp_path / "rules.zip")
    (tmp_path / "good.md").write_text("good")
    config = tmp_path / "memconfig.yaml"
    config.write_text("version: 1\nsources: ['zip://a.md::rules.zip', good.md]\nformatter: {preset: plain}\n")
    done = subprocess.run(
        [sys.executable, "-m", "memconfig", "render", "-c", str(config)], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "good"), done.stderr
    (skip,) = [json.loads(line) for line in done.stderr.splitlines() if "source_skipped" in line]
    assert skip["reason"] == "not_regular_file"
    assert skip["detail"] == f"{tmp_path / 'rules.zip'} is a FIFO, not a regular file"
