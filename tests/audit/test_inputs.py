"""The logs ``audit`` reads, and the page it writes: a FIFO, a device or a link is never opened (exit 2); the
caller's pipes are read whole."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support.cli import HANG, environment, memconfig

from memconfig.audit.inputs import log_inputs
from memconfig.audit.read import read_audit

NOT_OPENED = "not a regular file: not opened (it could block, or never end)"


def _line(render: str, stamp: str, source: str) -> str:
    return json.dumps(
        {
            "event": "source_loaded",
            "render_id": render,
            "source": source,
            "url": source,
            "status": "loaded",
            "chars": 5,
            "sha256": "0" * 64,
            "timestamp": stamp,
            "level": "info",
            "host": "h",
            "pid": 1,
        }
    )


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    (tmp_path / "older.jsonl").write_text(
        "\n".join(_line(f"r{i}", f"2026-01-0{i + 1}T00:00:00Z", "a.md") for i in range(3)) + "\n"
    )
    (tmp_path / "newer.jsonl").write_text(
        "\n".join(_line(f"s{i}", f"2026-02-0{i + 1}T00:00:00Z", "b.md") for i in range(4)) + "\n"
    )
    return tmp_path


def _inputs(stdout: str) -> list[dict[str, Any]]:
    return list(json.loads(stdout)["inputs"])


def test_a_fifo_matched_by_a_glob_is_refused_not_waited_on(logs: Path) -> None:
    os.mkfifo(logs / "pipe.jsonl")
    done = memconfig("audit", str(logs / "*.jsonl"), cwd=logs)
    assert done.returncode == 2
    assert done.stderr.strip() == f"memconfig: error: {logs / 'pipe.jsonl'} is a FIFO, {NOT_OPENED}"


def test_a_device_named_as_a_log_is_refused(logs: Path) -> None:
    done = memconfig("audit", "/dev/zero", cwd=logs)
    assert done.returncode == 2
    assert done.stderr.strip() == f"memconfig: error: /dev/zero is a character device, {NOT_OPENED}"


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = environment(None)
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=cwd, env=environ, timeout=HANG, check=False
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_two_process_substitutions_are_both_read_whole(logs: Path) -> None:
    audit = f"{sys.executable} -m memconfig audit --format json"
    done = _bash(f"{audit} <(cat newer.jsonl) <(cat older.jsonl)", logs)
    assert done.returncode == 0, done.stderr
    inputs = _inputs(done.stdout)
    assert [i["lines"] for i in inputs] == [3, 4]  # ordered by time: the older pipe first, neither used up
    assert json.loads(done.stdout)["renders_total"] == 7


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_a_pipe_beside_a_file_loses_none_of_its_lines(logs: Path) -> None:
    done = _bash(f"{sys.executable} -m memconfig audit --format json <(cat newer.jsonl) older.jsonl", logs)
    assert done.returncode == 0, done.stderr
    inputs = _inputs(done.stdout)
    assert (inputs[0]["name"], inputs[0]["lines"]) == ("older.jsonl", 3)
    assert inputs[1]["lines"] == 4


def test_standard_input_takes_its_place_in_time(logs: Path) -> None:
    newer = (logs / "newer.jsonl").read_text()
    done = memconfig("audit", "--format", "json", "-", "older.jsonl", cwd=logs, stdin=newer)
    assert done.returncode == 0, done.stderr
    assert [(i["name"], i["lines"]) for i in _inputs(done.stdout)] == [("older.jsonl", 3), ("<stdin>", 4)]


def test_a_single_pipe_is_read_as_it_comes_not_copied(logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard input as the only log needs no first look (nothing to order): read once, never copied to disk."""
    newer = (logs / "newer.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(newer)))))

    def no_copy(*args: object, **kwargs: object) -> None:
        raise AssertionError("a single pipe was copied to a temporary file")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_copy)
    found = log_inputs(["-"])
    assert [(log.name, log.head) for log in found] == [("<stdin>", None)]  # read once: no head to take first
    assert read_audit(found).renders_total == 4


@pytest.mark.parametrize("planted", ["fifo", "live-link", "dangling-link"])
def test_an_html_page_over_a_fifo_or_a_link_is_refused_before_any_log_is_read(logs: Path, planted: str) -> None:
    """--html naming a FIFO (it would wait for a reader) or a link (its target would be replaced): exit 2,
    as -o says it; the link and its target as they were."""
    page = logs / "report.html"
    target = logs / "elsewhere" / ".bashrc"
    target.parent.mkdir()
    if planted == "fifo":
        os.mkfifo(page)
        why = f"is a FIFO, {NOT_OPENED}"
    else:
        if planted == "live-link":
            target.write_text("export PATH=/usr/bin\n", encoding="utf-8")
        page.symlink_to(target)
        why = (
            f"is a symbolic link (to {target}): memconfig does not write through links; "
            "write to the file itself, or remove the link"
        )
    done = memconfig("audit", "older.jsonl", "--html", str(page), cwd=logs)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == f"memconfig: error: --html {page} {why}"
    if planted != "fifo":
        assert page.is_symlink() and os.readlink(page) == str(target)
    assert sorted(os.listdir(target.parent)) == ([".bashrc"] if planted == "live-link" else [])
    if planted == "live-link":
        assert target.read_text(encoding="utf-8") == "export PATH=/usr/bin\n"
