"""What git ignores among a downward discovery's folders, and while git's answer still holds.

A downward search asks ``git check-ignore`` once per level of folders: a
process each time. So an answer is kept while everything git reads to give it
is as it was, each file by its ``stat`` version: the ``.gitignore`` of every
folder from the repository root down to each folder asked about (the start
folder's ancestors, and every folder between it and the one asked about), the
repository's ``info/exclude`` and ``config``, the system's and the user's git
config, the global ignore file (``core.excludesFile``, as ``git config`` names
it, asked again when a config file changes; by default
``$XDG_CONFIG_HOME/git/ignore``) and the ``GIT_*``, ``HOME`` and
``XDG_CONFIG_HOME`` variables. An unchanged render then costs a ``stat`` per
input and runs no ``git``. Asked every time instead: in a linked worktree or a
submodule (their ``.git`` is a file pointing elsewhere) and with ``GIT_DIR`` or
``GIT_COMMON_DIR`` set (the repository's files are elsewhere).
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections import OrderedDict

__all__ = ["ignored"]

_GIT_TIMEOUT = 10.0
_ANSWERS_KEPT = 256  # git's answers kept (a level of a search each), least recently used dropped first
_EXCLUDES_KEPT = 64  # core.excludesFile answers kept (one per repository and version of its config files)
_ELSEWHERE = ("GIT_DIR", "GIT_COMMON_DIR")  # the repository's own files are not below the folders walked
_CONFIGS = ("/etc/gitconfig", "~/.gitconfig")  # and $XDG_CONFIG_HOME/git/config, $GIT_CONFIG_{SYSTEM,GLOBAL}

_Inputs = tuple[object, ...]
_lock = threading.Lock()  # walks of several renders run on the loader's threads
_answers: OrderedDict[tuple[str, tuple[str, ...]], tuple[_Inputs, frozenset[str]]] = OrderedDict()
_excludes: OrderedDict[tuple[str, _Inputs], tuple[str | None, str | None]] = OrderedDict()  # → (file, set in)


def ignored(start: str, paths: list[str]) -> set[str]:
    """Which of *paths* (folders below *start*) git ignores, asked in *start*; empty when git cannot say.

    When git cannot say (git missing, too slow, not a repository) nothing is ignored.
    """
    key = (start, tuple(paths))
    inputs = _inputs(start, paths)
    with _lock:
        kept = _answers.get(key)
        if kept is not None and inputs is not None and kept[0] == inputs:
            _answers.move_to_end(key)
            return set(kept[1])
    given = "".join(f"{p}/\0" for p in paths)  # a trailing slash: each is matched as a directory
    done = _git(start, "check-ignore", "--stdin", "-z", given=given)
    if done is None:  # asked again next time
        return set()
    answered = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    # 1: nothing ignored; 128: not a repository (a .git appearing changes the inputs)
    found = {path.rstrip("/") for path in answered if path} if done.returncode in (0, 1) else set()
    if inputs is not None and done.returncode in (0, 1, 128):
        with _lock:
            _answers[key] = (inputs, frozenset(found))
            _answers.move_to_end(key)
            while len(_answers) > _ANSWERS_KEPT:
                _answers.popitem(last=False)
    return found


def _inputs(start: str, paths: list[str]) -> _Inputs | None:
    """What git's answer for *paths* below *start* depends on, as ``stat`` versions; ``None``: not known."""
    if any(name in os.environ for name in _ELSEWHERE):
        return None
    ignores: list[object] = []
    git_dir = None
    folder = start
    while True:  # up to the repository root (or the filesystem's, outside a repository)
        git = _version(os.path.join(folder, ".git"))
        if git is not None and not git[0]:
            return None  # a .git file: the repository's own files are elsewhere
        ignores += [git is not None, _version(os.path.join(folder, ".gitignore"))]  # .git: there or not
        if git is not None:
            git_dir = os.path.join(folder, ".git")
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    ignores += [(between, _version(os.path.join(between, ".gitignore"))) for between in _between(start, paths)]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    ignores.append(_version(os.path.join(xdg, "git", "ignore")))  # core.excludesFile's default
    if git_dir is not None:
        ignores.append(_version(os.path.join(git_dir, "info", "exclude")))
    config = _config(git_dir, xdg)
    named = _excludes_file(start, config)
    if named is None:
        return None
    ignores += [_version(path) if path is not None else None for path in named]
    return (config, tuple(ignores))


def _between(start: str, paths: list[str]) -> list[str]:
    """The folders below *start* that hold one of *paths* or lead to one (their ``.gitignore`` rules them)."""
    below = start.rstrip(os.sep) + os.sep
    folders: set[str] = set()
    for path in paths:
        folder = os.path.dirname(path)
        while folder.startswith(below) and folder not in folders:
            folders.add(folder)
            folder = os.path.dirname(folder)
    return sorted(folders)


def _config(git_dir: str | None, xdg: str) -> _Inputs:
    """The git configuration's inputs: the variables git reads it by, and each config file's version."""
    environ = sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_"))
    files = [os.path.expanduser(path) for path in _CONFIGS] + [os.path.join(xdg, "git", "config")]
    files += [os.environ[name] for name in ("GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL") if os.environ.get(name)]
    if git_dir is not None:
        files.append(os.path.join(git_dir, "config"))
    home = (os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME"))
    return (git_dir, tuple(environ), home, tuple((path, _version(path)) for path in files))


def _excludes_file(start: str, config: _Inputs) -> tuple[str | None, str | None] | None:
    """The file ``core.excludesFile`` names and the config file that sets it (``None`` each: not set).

    Asked of ``git config`` once per version of the configuration (*config*),
    so a value set in an included file is read too; ``None``: git cannot say.
    """
    key = (start, config)  # a relative path is read from the folder git runs in
    with _lock:
        kept = _excludes.get(key)
        if kept is not None:
            _excludes.move_to_end(key)
            return kept
    done = _git(start, "config", "--type=path", "--show-origin", "-z", "--get", "core.excludesFile")
    if done is None or done.returncode not in (0, 1):
        return None
    named: tuple[str | None, str | None] = (None, None)
    if done.returncode == 0:
        origin, _, value = done.stdout.decode("utf-8", "surrogateescape").partition("\0")
        value = value.rstrip("\0")
        if value:
            path = value if os.path.isabs(value) else os.path.join(start, value)
            named = (path, origin.removeprefix("file:") if origin.startswith("file:") else None)
    with _lock:
        _excludes[key] = named
        while len(_excludes) > _EXCLUDES_KEPT:
            _excludes.popitem(last=False)
    return named


def _git(start: str, *args: str, given: str = "") -> subprocess.CompletedProcess[bytes] | None:
    """``git -C start ARGS`` with *given* on its input; ``None`` if it could not run (missing, too slow)."""
    try:
        return subprocess.run(
            ["git", "-C", start, *args],
            input=given.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _version(path: str) -> tuple[bool, int, int, int] | None:
    """Whether *path* is a folder, and its inode, size and modification time; ``None`` if it is not there."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (stat.S_ISDIR(info.st_mode), info.st_ino, info.st_size, info.st_mtime_ns)
