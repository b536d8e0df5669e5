"""The logs ``audit`` reads: a FIFO or a device is never opened (exit 2); the caller's pipes are read whole."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import HANG, environment, memconfig

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
