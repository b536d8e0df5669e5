"""Headless Chromium for tests that open a page: the DOM after it loaded, and a screenshot.

Chromium is driven through its command line only (``--dump-dom``,
``--screenshot``), so the tests need no browser-driving library. Each run gets a
fresh profile in the test's own folder, so runs at once share nothing and none
of them reads the user's. ``.ci/run`` installs Debian's ``chromium`` when it is
missing; where none can be had, :func:`chromium_or_skip` skips the test and says
so.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The names a Chromium goes by on PATH, in the order they are tried (``MEMCONFIG_CHROMIUM`` first).
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Long enough for a cold start on a busy 2-core machine; a hung browser fails the test instead of hanging it.
TIMEOUT_S = 120
_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI containers run as root, where Chromium's sandbox will not start
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a container's /dev/shm is often too small
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
)


@dataclass(frozen=True)
class Chromium:
    """A Chromium executable, run headless once per call."""

    executable: str

    def version(self) -> str:
        """What ``--version`` prints (for a skip or a failure message)."""
        done = subprocess.run(
            [self.executable, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        return done.stdout.strip()

    def dump_dom(self, page: Path) -> str:
        """The page's DOM serialized after it loaded (and after any script it has ran)."""
        return self._run(page, "--dump-dom").stdout

    def screenshot(self, page: Path, out: Path, width: int = 1200, height: int = 1600) -> Path:
        """A PNG of the page in a ``width`` x ``height`` window, written to ``out``."""
        out = out.resolve()
        out.unlink(missing_ok=True)
        self._run(page, f"--screenshot={out}", f"--window-size={width},{height}")
        if not out.is_file():
            raise AssertionError(f"{self.executable} wrote no screenshot to {out}")
        return out

    def _run(self, page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
            done = subprocess.run(
                [self.executable, *_FLAGS, f"--user-data-dir={profile}", *flags, page.resolve().as_uri()],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
                env={**os.environ, "HOME": profile},
            )
        if done.returncode != 0:
            raise AssertionError(f"{self.executable} exited {done.returncode}: {done.stderr[-2000:]}")
        return done


def find_chromium() -> Chromium | None:
    """The first Chromium found: ``$MEMCONFIG_CHROMIUM``, then :data:`CANDIDATES` on PATH."""
    names = [os.environ.get("MEMCONFIG_CHROMIUM", ""), *CANDIDATES]
    for name in filter(None, names):
        found = shutil.which(name)
        if found:
            return Chromium(found)
    return None


def chromium_or_skip() -> Chromium:
    """The Chromium to use, or skip the test saying that none could be had (and how to get one)."""
    found = find_chromium()
    if found is None:
        pytest.skip(
            f"no Chromium on PATH (tried {', '.join(CANDIDATES)}): install Debian's chromium package "
            "(.ci/run does) or set MEMCONFIG_CHROMIUM to a Chromium or Chrome executable"
        )
    return found


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its header (and a check that it is a PNG)."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    return width, height
