"""The command line as a user runs it: ``python -m memconfig ARGS`` in a fresh process, for the tests of every part.

The process gets the test's environment less every ``MEMCONFIG_*`` variable (a
developer's own settings would change what the config says), with this tree's
memconfig first on ``PYTHONPATH`` (an installed copy elsewhere never answers
for it). No run may print a traceback: a user's mistake is one line and an
exit code.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

__all__ = ["ROOT", "WAIT", "environment", "eventually", "memconfig", "watching"]

ROOT = Path(__file__).resolve().parents[2]  # tests/support/cli.py: the repository
HANG = 120  # seconds: only a hang takes this long; nothing is timed
WAIT = 20.0  # seconds a long-running command (--watch) is given to show a change: only a hang takes this long


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment without ``MEMCONFIG_*`` variables, *env* added, this tree first on ``PYTHONPATH``."""
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH")) if p)
    environ.update(env or {})
    return environ


def memconfig(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m memconfig ARGS`` in *cwd* (default: the repository), *stdin* its input, *env* added.

    *prelude*: Python run in the process first (``sys.modules['s3fs'] = None``), then the console script.
    """
    if prelude:
        command = [sys.executable, "-c", f"{prelude}\nfrom memconfig.cli import run\nrun()", *args]
    else:
        command = [sys.executable, "-m", "memconfig", *args]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd or ROOT,
        env=environment(env),
        timeout=HANG,
        check=False,
        input=stdin,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "Traceback" not in done.stdout, done.stdout
    return done


def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait for *check* to hold (a watch's write, an event in its log); fails only after :data:`WAIT`."""
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {WAIT} s: {what}")
        time.sleep(0.01)


@contextlib.contextmanager
def watching(cwd: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """``memconfig render -c memconfig.yaml ARGS --watch --log-file log.jsonl`` left running in *cwd*.

    Yields the process and the file its stderr goes to (``stderr.txt`` in *cwd*). At the end
    a process still running gets SIGINT (as Ctrl-C), then is killed if it does not stop; its
    stderr must hold no traceback.
    """
    errors = cwd / "stderr.txt"
    command = [sys.executable, "-m", "memconfig", "render", "-c", "memconfig.yaml", *args, "--watch"]
    with errors.open("w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            [*command, "--log-file", "log.jsonl"], cwd=cwd, env=environment(), stderr=stderr, text=True
        )
    try:
        yield process, errors
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
    assert "Traceback" not in errors.read_text(encoding="utf-8")
