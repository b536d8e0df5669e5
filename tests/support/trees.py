"""Real folder trees for tests: files written with their folders, and real git repositories (``git init``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_init", "write"]


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
