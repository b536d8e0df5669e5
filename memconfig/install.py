"""What to run to install one of memconfig's extras, for the way this memconfig was installed.

Every message about a missing extra ends with :func:`install_hint`'s
command. ``pip install 'memconfig[http]'`` only works for a copy installed
from a package index; a copy installed from a clone needs the clone's folder
(``pip install -e '/src/memconfig[http]'``), one installed from a wheel or a
Git URL needs that wheel or URL again. Which one it was, the installer wrote
down in the distribution's ``direct_url.json`` (PEP 610): no such file means
an index; ``dir_info`` a folder (``editable`` for ``pip install -e``);
``archive_info`` a wheel or an sdist; ``vcs_info`` a repository, at the commit
installed. A copy run from a source tree that was never installed gets the
editable command for that tree.

The pip named is the running interpreter's: plain ``pip`` when the ``pip``
first on ``PATH`` is this virtual environment's own, otherwise
``<this python> -m pip``, so a line copied from the message installs into the
environment that needs the package; a ``uv`` environment without pip gets
``uv pip install --python <this python>``. Nothing is read until a message
needs it, and then once.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import Distribution

__all__ = ["install_command", "install_hint"]

_DISTRIBUTION = "memconfig"


@functools.cache
def install_hint(extra: str) -> str:
    """The command that installs memconfig's *extra* (``http``, ``s3``, ``watch`` …) as this memconfig was installed."""
    return install_command(extra, _installed())


def install_command(extra: str, installed: Distribution | None) -> str:
    """The command that installs *extra* for the *installed* distribution (``None``: run from a source tree)."""
    return f"{_pip_install(installed)} {_requirement(extra, installed)}"


def _installed() -> Distribution | None:
    """memconfig's installed distribution, or ``None`` (run from a folder on ``sys.path``).

    Run from a clone's root, the first ``memconfig`` metadata on ``sys.path`` is
    the ``memconfig.egg-info`` that setuptools leaves in the tree when it builds
    an editable install: not an install, and it has no ``direct_url.json``. The
    one that says how memconfig was installed is in site-packages, so metadata
    in the source tree itself is passed over.
    """
    from importlib import metadata

    tree = _source_tree()
    for found in metadata.distributions(name=_DISTRIBUTION):
        folder = getattr(found, "_path", None)  # PathDistribution's; no public name for it
        if tree is not None and folder is not None and _same_folder(os.path.dirname(os.path.abspath(folder)), tree):
            continue  # the build's by-product beside the package, not what installed it
        return found
    return None


def _requirement(extra: str, installed: Distribution | None) -> str:
    """What ``pip install`` is given: the folder, wheel, repository or index name memconfig came from, with *extra*."""
    import shlex

    origin = _direct_url(installed)
    if origin is None:
        tree = _source_tree() if installed is None else None
        return f"-e {shlex.quote(f'{tree}[{extra}]')}" if tree else shlex.quote(f"{_DISTRIBUTION}[{extra}]")
    url = _without_password(str(origin.get("url", "")))
    subdirectory = str(origin.get("subdirectory") or "")
    folder, vcs = origin.get("dir_info"), origin.get("vcs_info")
    if isinstance(folder, dict) and url.startswith("file:"):
        path = os.path.join(_local_path(url), subdirectory) if subdirectory else _local_path(url)
        named = shlex.quote(f"{path}[{extra}]")
        return f"-e {named}" if folder.get("editable") else named
    if not url:
        return shlex.quote(f"{_DISTRIBUTION}[{extra}]")
    if isinstance(vcs, dict):  # the repository at the commit installed
        kind = str(vcs.get("vcs", "git"))
        url = (url if url.startswith(f"{kind}+") else f"{kind}+{url}") + (
            f"@{vcs['commit_id']}" if vcs.get("commit_id") else ""
        )
    if subdirectory:
        url += f"#subdirectory={subdirectory}"
    return shlex.quote(f"{_DISTRIBUTION}[{extra}] @ {url}")  # a wheel, an sdist, a repository


def _direct_url(installed: Distribution | None) -> dict[str, Any] | None:
    """The distribution's ``direct_url.json`` (PEP 610), or ``None`` (none: installed from an index)."""
    import json

    text = installed.read_text("direct_url.json") if installed is not None else None
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _local_path(url: str) -> str:
    """The path of a ``file:`` URL."""
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    parts = urlsplit(url)
    return (
        url2pathname(parts.path) if parts.netloc in ("", "localhost") else url2pathname(f"//{parts.netloc}{parts.path}")
    )


def _without_password(url: str) -> str:
    """*url* without a password in it (installers should not record one; a message never shows one)."""
    scheme, found, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    user, at, netloc = host.rpartition("@")
    if not found or not at or ":" not in user:
        return url
    return f"{scheme}://{user.partition(':')[0]}@{netloc}{slash}{path}"


def _source_tree() -> str | None:
    """The source tree this memconfig runs from (its ``pyproject.toml`` beside the package), or ``None``."""
    tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return tree if os.path.isfile(os.path.join(tree, "pyproject.toml")) else None


def _pip_install(installed: Distribution | None) -> str:
    """``pip install`` for the running interpreter: plain ``pip`` when that is the one on ``PATH``, else by path."""
    import importlib.util
    import shlex
    import shutil
    import sysconfig

    python = shlex.quote(sys.executable or "python")
    if importlib.util.find_spec("pip") is None and _installer(installed) == "uv":
        return f"uv pip install --python {python}"  # uv makes environments without pip
    found = shutil.which("pip")
    if found and sys.prefix != sys.base_prefix and _same_folder(os.path.dirname(found), sysconfig.get_path("scripts")):
        return "pip install"  # the virtual environment's own pip (its bin folder is first on PATH: activated)
    return f"{python} -m pip install"


def _installer(installed: Distribution | None) -> str:
    """What installed memconfig, as its ``INSTALLER`` file says (``pip``, ``uv`` …), or ``""``."""
    text = installed.read_text("INSTALLER") if installed is not None else None
    return (text or "").strip()


def _same_folder(one: str, other: str) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False
