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
from dataclasses import dataclass

from .cli import ROOT

#: A CSI escape sequence (colour, cursor movement, erase): what a bar is drawn with.
CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@dataclass
class Terminal:
    """What a command run on a pseudo-terminal gave: exit code, stdout (if piped), and the terminal's bytes."""

    returncode: int
    stdout: str
    screen: bytes

    @property
    def text(self) -> str:
        return self.screen.decode("utf-8", "replace")

    def pieces(self) -> list[str]:
        """The terminal's text, escape sequences removed, cut at every line end and carriage return."""
        return [p for p in re.split(r"[\r\n]", CSI.sub("", self.text)) if p.strip()]


def _environ() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCONFIG_")}
    environ.pop("NO_COLOR", None)
    environ.pop("COLUMNS", None)  # the terminal's own size, as set on it, is the width
    environ.pop("LINES", None)
    environ["TERM"] = "xterm-256color"
    return environ


def on_terminal(
    *args: str, stdout_too: bool = False, stdin_too: bool = False, code: str | None = None, columns: int = 120
) -> Terminal:
    """Run ``python -m memconfig ARGS`` (or Python *code*) with stderr on a new pseudo-terminal, *columns* wide.

    *stdin_too*: standard input is the terminal as well (else the null device), as in an interactive shell.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    argv = [sys.executable, "-c", code, *args] if code is not None else [sys.executable, "-m", "memconfig", *args]
    try:
        process = subprocess.Popen(
            argv,
            stdin=slave if stdin_too else subprocess.DEVNULL,
            stdout=slave if stdout_too else subprocess.PIPE,
            stderr=slave,
            cwd=ROOT,
            env=_environ(),
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
        out, _ = process.communicate(timeout=60)
        reader.join(timeout=10)
    finally:
        process.kill()
        os.close(master)
    return Terminal(process.returncode, (out or b"").decode("utf-8"), b"".join(chunks))


def piped(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run it with stdout and stderr on pipes (no terminal)."""
    argv = [sys.executable, "-c", code, *args] if code is not None else [sys.executable, "-m", "memconfig", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, encoding="utf-8", cwd=ROOT, env=_environ(), timeout=60, check=False
    )
