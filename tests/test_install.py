"""The install hint: the command in every missing-extra message installs the extra as memconfig was installed."""

from __future__ import annotations

import json
import os
import shlex
import sys
from importlib.metadata import PathDistribution, distributions
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from support.cli import ROOT, memconfig

from memconfig.install import install_command

COMMIT = "7921be1537eac1e97bc40179a57f0349c2aabfcf"
WHEEL = "memconfig-0.1.0-py3-none-any.whl"
PYTHON = shlex.quote(sys.executable)


def _dist(folder: Path, direct_url: dict[str, Any] | None, installer: str = "pip") -> PathDistribution:
    """An installed memconfig's metadata folder, with *direct_url* as its ``direct_url.json`` (PEP 610)."""
    info = folder / "memconfig-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memconfig\nVersion: 0.1.0\n", encoding="utf-8")
    (info / "INSTALLER").write_text(f"{installer}\n", encoding="utf-8")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")
    return PathDistribution(info)


def _argument(command: str) -> str:
    """What the command gives ``pip install`` (after ``pip install`` or ``<python> -m pip install``)."""
    return command.partition(" install ")[2]


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        pytest.param(None, "'memconfig[http]'", id="index"),
        pytest.param({"url": "file:///src/my%20clone", "dir_info": {"editable": True}}, "-e '/src/my clone[http]'",
                     id="editable-clone"),
        pytest.param({"url": "file:///src/clone", "dir_info": {}}, "'/src/clone[http]'", id="local-folder"),
        pytest.param({"url": "file:///src/mono", "dir_info": {}, "subdirectory": "python"}, "'/src/mono/python[http]'",
                     id="folder-subdirectory"),
        pytest.param({"url": f"file:///wheels/{WHEEL}", "archive_info": {"hashes": {"sha256": "00"}}},
                     f"'memconfig[http] @ file:///wheels/{WHEEL}'", id="local-wheel"),
        pytest.param({"url": "https://github.com/team/memconfig.git",
                      "vcs_info": {"vcs": "git", "requested_revision": "main", "commit_id": COMMIT}},
                     f"'memconfig[http] @ git+https://github.com/team/memconfig.git@{COMMIT}'", id="git"),
        pytest.param({"url": "https://bot:hunter2@git.example/memconfig.git", "vcs_info": {"vcs": "git",
                      "commit_id": COMMIT}},
                     f"'memconfig[http] @ git+https://bot@git.example/memconfig.git@{COMMIT}'", id="no-password"),
    ],
)  # fmt: skip
def test_hint_names_what_memconfig_was_installed_from(
    tmp_path: Path, direct_url: dict[str, Any] | None, expected: str
) -> None:
    """Index: the name; a clone: ``-e`` its folder; a folder, wheel or repository: it again, with the extra."""
    command = install_command("http", _dist(tmp_path, direct_url))

    assert _argument(command) == expected
    assert "hunter2" not in command


@pytest.mark.parametrize(
    "direct_url",
    [
        pytest.param(None, id="index"),
        pytest.param({"url": f"file:///wheels/{WHEEL}", "archive_info": {}}, id="local-wheel"),
        pytest.param({"url": "https://github.com/team/memconfig.git", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
                     id="git"),
    ],
)  # fmt: skip
def test_hint_is_a_requirement_pip_reads_with_the_extra(tmp_path: Path, direct_url: dict[str, Any] | None) -> None:
    """What the shell passes to pip is one PEP 508 requirement naming memconfig and the extra."""
    (argument,) = shlex.split(_argument(install_command("s3", _dist(tmp_path, direct_url))))
    requirement = Requirement(argument)

    assert (requirement.name, requirement.extras) == ("memconfig", {"s3"})


def test_run_from_a_source_tree_hints_an_editable_install_of_it() -> None:
    """Not installed at all (the package found on ``sys.path``): ``-e`` the tree it runs from."""
    root = Path(__file__).resolve().parents[1]

    assert _argument(install_command("watch", None)) == f"-e {shlex.quote(f'{root}[watch]')}"


@pytest.mark.parametrize(
    ("installer", "pip"),
    [
        pytest.param("uv", f"uv pip install --python {PYTHON}", id="uv"),
        pytest.param("pip", f"{PYTHON} -m pip install", id="pip"),
    ],
)
def test_environment_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installer: str, pip: str) -> None:
    """No pip in the environment: uv's command when uv installed memconfig (uv makes such environments)."""
    monkeypatch.setitem(sys.modules, "pip", None)  # as when pip is not installed: find_spec("pip") is None

    assert install_command("http", _dist(tmp_path, None, installer)) == f"{pip} 'memconfig[http]'"


def _editable_folder() -> str:
    """The folder the test environment's memconfig is installed from, editable (skips the test otherwise)."""
    # the metadata that says how it was installed: not a memconfig.egg-info a build left in the clone's root
    installed = [d.read_text("direct_url.json") for d in distributions(name="memconfig")]
    origin = json.loads(next((text for text in installed if text), "{}"))
    if not origin.get("dir_info", {}).get("editable"):
        pytest.skip("memconfig is not installed editable here")
    from urllib.request import url2pathname

    return url2pathname(origin["url"].removeprefix("file://"))


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtual environment")
@pytest.mark.parametrize(
    ("activated", "pip"),
    [pytest.param(True, "pip", id="venv-activated"), pytest.param(False, f"{PYTHON} -m pip", id="venv-not-on-path")],
)
def test_cli_missing_extra_names_the_command_for_this_install(tmp_path: Path, activated: bool, pip: str) -> None:
    """``render`` of an http source without aiohttp: the hint is ``pip install -e '<the clone>[http]'``, run by the
    venv's pip when the venv is activated, else by this python (a ``pip`` elsewhere on PATH is another env's)."""
    folder = _editable_folder()
    (tmp_path / "memconfig.yaml").write_text(
        "version: 1\nsources:\n  - http://127.0.0.1:9/AGENTS.md\n", encoding="utf-8"
    )
    scripts = os.path.dirname(sys.executable)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != scripts)
    done = memconfig(
        "render",
        "-c",
        "memconfig.yaml",
        cwd=tmp_path,
        env={"PATH": os.pathsep.join([scripts, path]) if activated else path},
        prelude="import sys; sys.modules['aiohttp'] = None",
    )

    assert done.returncode == 2
    assert f"({pip} install -e {shlex.quote(f'{folder}[http]')})" in done.stderr, done.stderr


def test_cli_run_from_the_clone_root_names_the_clone(tmp_path: Path) -> None:
    """From the clone's root, where the editable build left ``memconfig.egg-info`` (metadata with no record of how
    memconfig was installed, first on ``sys.path``), the hint is still the editable install of the clone."""
    folder = _editable_folder()
    config = tmp_path / "memconfig.yaml"
    config.write_text("version: 1\nsources:\n  - http://127.0.0.1:9/AGENTS.md\n", encoding="utf-8")
    done = memconfig("render", "-c", str(config), cwd=ROOT, prelude="import sys; sys.modules['aiohttp'] = None")

    assert done.returncode == 2
    assert f"-m pip install -e {shlex.quote(f'{folder}[http]')})" in done.stderr, done.stderr
