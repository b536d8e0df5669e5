"""Real folder trees for tests: files written with their folders, in place or as editors save; real git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["git_init", "write", "write_atomically"]


def git_init(folder: Path) -> Path:
    """*folder* (made if need be) as a new, empty git repository; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def write(path: Path, data: str | bytes) -> Path:
    """*data* written to *path* (text as UTF-8, bytes as they are), its folders made first; the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def write_atomically(path: Path, text: str) -> Path:
    """*text* written beside *path* and renamed over it, as editors save: a reader sees the old file or the new one.

    The temporary file is hidden and named for *path* (``.a.md.tmp``), so no glob over ``*.md`` matches it and
    two writers of different files never share one. *path*'s folders are made first; the path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
