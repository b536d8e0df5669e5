"""Running the CLI as a user does on a terminal: stderr (and stdout) on a real pseudo-terminal, or on pipes."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .cli import ROOT

#: A CSI escape sequence (colour, cursor movement, erase): what a bar is drawn with.
CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
#: A load-log line in console form on a terminal: the time of day (UTC), the level, the event, its fields.
CONSOLE_LINE = re.compile(r"(?P<time>\d\d:\d\d:\d\dZ) \[(?P<level>\w+) *\] (?P<event>\w+) *(?P<fields>.*)")


@dataclass
class Terminal:
    """What a command run on a pseudo-terminal gave: exit code, stdout and stderr (if piped), the terminal's bytes."""

    returncode: int
    stdout: str
    screen: bytes
    stderr: str = ""

    @property
    def text(self) -> str:
        return self.screen.decode("utf-8", "replace")

    def pieces(self) -> list[str]:
        """The terminal's text, escape sequences removed, cut at every line end and carriage return."""
        return [p for p in re.split(r"[\r\n]", CSI.sub("", self.text)) if p.strip()]

    def lines(self) -> list[str]:
        """The terminal's text, escape sequences removed, line by line (a bar's redraws left in)."""
        return CSI.sub("", self.text).replace("\r\n", "\n").split("\n")

    def console_events(self) -> list[re.Match[str]]:
        """Each load-log line in console form (:data:`CONSOLE_LINE`), whole, in order."""
        return [m for m in map(CONSOLE_LINE.fullmatch, self.pieces()) if m is not None]


def _environ(extra: Mapping[str, str] = MappingProxyType({})) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    environ.pop("NO_COLOR", None)
    environ.pop("COLUMNS", None)  # the terminal's own size, as set on it, is the width
    environ.pop("LINES", None)
    environ["TERM"] = "xterm-256color"
    return environ | dict(extra)


def on_terminal(
    *args: str,
    stdout_too: bool = False,
    stdin_too: bool = False,
    stderr_too: bool = True,
    code: str | None = None,
    columns: int = 120,
    env: Mapping[str, str] = MappingProxyType({}),
) -> Terminal:
    """Run ``python -m memconfig ARGS`` (or Python *code*) with stderr on a new pseudo-terminal, *columns* wide.

    *stdin_too*: standard input is the terminal as well (else the null device), as in an interactive shell.
    *stderr_too* false: stderr is a pipe (``2> log``), and only stdout may be the terminal. *env*: variables
    set for the run (``NO_COLOR``, say), over a clean environment.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    argv = [sys.executable, "-c", code, *args] if code is not None else [sys.executable, "-m", "memconfig", *args]
    try:
        process = subprocess.Popen(
            argv,
            stdin=slave if stdin_too else subprocess.DEVNULL,
            stdout=slave if stdout_too else subprocess.PIPE,
            stderr=slave if stderr_too else subprocess.PIPE,
            cwd=ROOT,
            env=_environ(env),
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child's end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        out, err = process.communicate(timeout=60)
        reader.join(timeout=10)
    finally:
        process.kill()
        os.close(master)
    return Terminal(process.returncode, (out or b"").decode("utf-8"), b"".join(chunks), (err or b"").decode("utf-8"))


def piped(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run it with stdout and stderr on pipes (no terminal)."""
    argv = [sys.executable, "-c", code, *args] if code is not None else [sys.executable, "-m", "memconfig", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, encoding="utf-8", cwd=ROOT, env=_environ(), timeout=60, check=False
    )
