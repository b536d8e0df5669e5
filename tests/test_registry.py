"""The open registries: a plugin package installed with pip, ``register()`` from Python, and the errors of a miss.

The example plugin (``tests/plugins/memconfig-example-plugin``) declares an
appender, a processor and a loader as entry points; it is really installed
(``pip install --target``) and used by the CLI from YAML, as a user would.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from support.cli import ROOT, memconfig

import memconfig as package
from memconfig import ConfigError, LoadRequest, LoadResult, Pipeline, Section, Source
from memconfig.append import appender_for
from memconfig.config import Config
from memconfig.registry import appenders, expanders, loaders, processors

PLUGIN = Path(__file__).parent / "plugins" / "memconfig-example-plugin"
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index")
HANG = 300  # seconds: only a hang (or a pip gone wrong) takes this long


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin installed into a folder of its own (no network: local path, no build isolation)."""
    target = tmp_path_factory.mktemp("plugin")
    done = subprocess.run(
        [*PIP_INSTALL, "--target", str(target), str(PLUGIN)],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(target.glob("memconfig_example_plugin-*.dist-info"))
    return target


def _with(target: Path) -> dict[str, str]:
    """The CLI's environment with the plugin's folder after this tree on ``PYTHONPATH``."""
    return {"PYTHONPATH": os.pathsep.join((str(ROOT), str(target)))}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "AGENTS.md").write_text("Run the tests.\n", encoding="utf-8")
    return tmp_path


def _config(project: Path, body: str) -> Path:
    path = project / "memconfig.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_an_installed_plugin_is_used_from_yaml(installed: Path, project: Path) -> None:
    """A config names the plugin's appender, processor and loader protocol; `render` prints what they made."""
    _config(
        project,
        """\
        version: 1
        sources: [AGENTS.md, "notes://style"]
        formatter: {preset: plain, separator: "\\n"}
        processors:
          - name: stamp
            options: {label: team}
        appender: {format: banner}
        """,
    )

    done = memconfig("render", "-c", "memconfig.yaml", "--system", "Be kind.", cwd=project, env=_with(installed))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Be kind.\n== memory ==\n[team] Run the tests.\n[team] Write short sentences."


def test_an_installed_plugin_appender_is_a_format_choice(installed: Path, project: Path) -> None:
    """`--format banner` prints the plugin's shape over a config that names the text appender."""
    _config(project, "version: 1\nsources: [AGENTS.md]\nformatter: {preset: plain}\n")

    done = memconfig("render", "-c", "memconfig.yaml", "--format", "banner", cwd=project, env=_with(installed))

    assert (done.returncode, done.stdout) == (0, "== memory ==\nRun the tests.")


def test_a_name_no_package_registers_lists_the_plugins_choices(installed: Path, project: Path) -> None:
    """With the plugin installed, an unknown processor's error lists the plugin's name beside the built-ins."""
    _config(project, "version: 1\nsources: [AGENTS.md]\nprocessors: [stamps]\n")

    done = memconfig("validate", "-c", "memconfig.yaml", cwd=project, env=_with(installed))

    assert done.returncode == 2
    assert (
        "processors[0].name: unknown processor 'stamps' (did you mean 'stamp'?); "
        "choose one of: stamp, strip_bom, strip_frontmatter, strip_html_comments"
    ) in done.stderr


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        pytest.param(
            "processors: [{name: stamp, options: {label: x}}]",
            "processors[0].name",
            "unknown processor 'stamp'; choose one of: strip_bom, strip_frontmatter, strip_html_comments",
            id="processor",
        ),
        pytest.param(
            "appender: {format: banner}",
            "appender.format",
            "unknown format 'banner'; choose one of: anthropic, json, langchain, openai, text",
            id="appender",
        ),
        pytest.param(
            "sources: ['notes://style']",
            "sources[0].url",
            "unknown protocol 'notes'; is its fsspec package installed? (registered loaders: none)",
            id="loader",
        ),
    ],
)
def test_a_config_naming_what_is_not_registered_exits_2(project: Path, body: str, where: str, message: str) -> None:
    """Without the plugin, naming its processor, appender or protocol is a config error at its key path."""
    _config(project, f"version: 1\n{body}\n")

    done = memconfig("render", "-c", "memconfig.yaml", cwd=project)

    assert (done.returncode, done.stdout) == (2, "")
    assert f"{where}: {message}" in done.stderr


def test_no_entry_point_is_read_for_a_config_of_built_ins() -> None:
    """Importing memconfig, rendering with its own stages, and `memconfig render --format json` never read
    memconfig's entry-point groups (fsspec reads its own at import)."""
    code = textwrap.dedent(
        """
        import importlib.metadata
        everyone = importlib.metadata.entry_points
        def refuse(**kwargs):
            if str(kwargs.get("group", "")).startswith("memconfig."):
                raise AssertionError(f"entry points read: {kwargs}")
            return everyone(**kwargs)  # fsspec reads its own at import
        importlib.metadata.entry_points = refuse
        import memconfig
        from memconfig.cli import main
        memconfig.Pipeline.from_yaml("configs/example.yaml").render(system="S")
        memconfig.APPENDERS["text"], memconfig.EXPANDERS["glob"], "json" in memconfig.APPENDERS
        assert main(["render", "-c", "configs/example.yaml", "--format", "json", "-o", "-"]) == 0
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=HANG)

    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "ok"), done.stderr
    assert "entry points read" not in done.stderr


class Upper:
    """A processor registered from Python: capitals, after an optional mark."""

    def __init__(self, mark: str = "") -> None:
        self.mark = mark

    @classmethod
    def from_config(cls, options: dict[str, Any]) -> Upper:
        return cls(**options)

    @property
    def token(self) -> str:
        return f"upper:{self.mark}"

    def __call__(self, sections: Sequence[Section]) -> list[Section]:
        return [s.with_text(self.mark + s.text.upper()) for s in sections]


class Table:
    """A loader registered from Python for ``table://KEY``."""

    rows: ClassVar[dict[str, str]] = {"rules": "keep it simple"}

    @classmethod
    def from_config(cls, settings: Any) -> Table:
        return cls()

    def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:
        found = [(r.source, self.rows[r.source.url.partition("://")[2]]) for r in requests]
        return [LoadResult(s, "loaded", text, sha256=hashlib.sha256(text.encode()).hexdigest()) for s, text in found]


@pytest.fixture
def registered() -> Iterator[None]:
    """`upper` (a processor, the class itself) and `table` (a loader, by its import path) registered for one test."""
    package.register("processors", "upper", Upper)
    package.register("loaders", "table", f"{__name__}:Table")
    yield
    processors.unregister("upper")
    loaders.unregister("table")


@pytest.mark.usefixtures("registered")
def test_register_from_python_makes_a_name_a_config_may_use(project: Path) -> None:
    """A processor and a loader registered with `memconfig.register` are named by a config and used."""
    config = {
        "version": 1,
        "base_dir": str(project),
        "sources": ["AGENTS.md", "table://rules"],
        "formatter": {"preset": "plain", "separator": " | "},
        "processors": [{"name": "upper", "options": {"mark": "!"}}],
    }

    text = Pipeline.from_config(config).render()

    assert text == "!RUN THE TESTS. | !KEEP IT SIMPLE"
    assert "upper" in package.PROCESSORS and "table" in package.LOADERS


@pytest.mark.usefixtures("registered")
def test_a_named_processor_is_in_the_chain_under_its_name_before_the_callers_own(project: Path) -> None:
    """A config's processor runs after the built-in cleaning and escaping, before the caller's; the chain names it."""
    config = {"version": 1, "base_dir": str(project), "sources": ["AGENTS.md"], "processors": ["upper"]}

    pipeline = Pipeline.from_config(config, processors=[Upper("?")])

    assert pipeline.processors.names == ("bom", "html_comments", "escaping", "upper", "Upper")
    assert "upper=upper:" in repr(pipeline)
    assert "\n?RUN THE TESTS.\n" in pipeline.build().text


@pytest.mark.usefixtures("registered")
def test_a_name_registered_twice_needs_clobber() -> None:
    """Registering a taken name is refused unless `clobber=True`, which replaces the entry."""
    with pytest.raises(ValueError, match="processor 'upper' is registered already"):
        package.register("processors", "upper", Upper)

    package.register("processors", "upper", f"{__name__}:Upper", clobber=True)

    assert processors.entry("upper").target == f"{__name__}:Upper"


@pytest.mark.usefixtures("registered")
def test_options_a_processor_refuses_are_a_config_error_at_their_key_path(project: Path) -> None:
    """`from_config` refusing the options fails the pipeline's build, naming `processors[0].options`."""
    config = {"version": 1, "base_dir": str(project), "processors": [{"name": "upper", "options": {"loud": True}}]}

    with pytest.raises(ConfigError, match=r"processors\[0\]\.options: 'upper': .*loud") as caught:
        Pipeline.from_config(config)
    assert caught.value.exit_code == 2


def test_an_unknown_appender_lists_the_registered_ones() -> None:
    """`appender_for` of an unregistered name lists every registered one, a Python registration included."""
    package.register("appenders", "shout", "shouting.nowhere:Shout", errtxt="pip install shouting")
    try:
        with pytest.raises(ConfigError, match=r"unknown output format 'yell'; choose one of: .*shout, text"):
            appender_for("yell", Config(version=1))
        with pytest.raises(ConfigError, match=r"output format 'shout' needs a package .* \(pip install shouting\)"):
            appender_for("shout", Config(version=1))
    finally:
        appenders.unregister("shout")


class Listing:
    """An expander registered from Python: a listing file's lines are the sources it stands for."""

    via = "listing"

    def expand(self, source: Source) -> list[Source]:
        fs, path = source.open_fs()
        return [source.derived(url, url, url, self.via, None) for url in fs.cat_file(path).decode().split()]


@pytest.fixture
def listing() -> Iterator[None]:
    """`listing` registered as an expander (an object) for one test, and the files it lists."""
    memory = fsspec.filesystem("memory")
    memory.pipe("/lists/team.txt", b"memory://team/a.md\nmemory://team/b.md\n")
    memory.pipe("/team/a.md", b"alpha")
    memory.pipe("/team/b.md", b"beta")
    package.register("expanders", "listing", Listing())
    yield
    expanders.unregister("listing")


@pytest.mark.usefixtures("listing")
def test_a_source_names_a_registered_expander() -> None:
    """`expander: listing` on a source expands its URL with that expander; its children name it as `via`."""
    config = {
        "version": 1,
        "sources": [{"url": "memory://lists/team.txt", "expander": "listing"}],
        "formatter": {"preset": "plain"},
    }

    render = Pipeline.from_config(config).build()

    assert render.text == "alpha\n\nbeta"
    children = [(r.source, r.status, r.parent, r.via) for r in render.sources if r.parent is not None]
    assert children == [
        ("memory://team/a.md", "loaded", "memory://lists/team.txt", "listing"),
        ("memory://team/b.md", "loaded", "memory://lists/team.txt", "listing"),
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param(
            {"url": "x.txt", "expander": "listings"},
            "unknown expander 'listings'; choose one of: discover, glob",
            id="unknown",
        ),
        pytest.param({"url": "*.md", "expander": "glob"}, "write 'glob:' instead of 'url:'", id="shaped"),
    ],
)
def test_an_expander_nothing_registers_is_a_config_error(source: dict[str, str], message: str) -> None:
    """A source naming an unregistered expander (or one its shape chooses) fails at `sources[0].expander`."""
    with pytest.raises(ConfigError) as caught:
        Config.from_mapping({"version": 1, "sources": [source]})

    assert [(p.path, message in p.message) for p in caught.value.problems] == [("sources[0].expander", True)]


class AsyncTable(Table):
    """The same table, read with ``async def load``."""

    async def load(self, requests: Sequence[LoadRequest]) -> list[LoadResult]:  # type: ignore[override]
        return Table.load(self, requests)


@pytest.mark.parametrize("driver", ["build", "abuild"])
def test_a_registered_async_loader_reads_its_protocol_under_both_drivers(project: Path, driver: str) -> None:
    """A loader of a protocol with `async def load` is awaited by `abuild` and run to the end by `build`."""
    package.register("loaders", "atable", AsyncTable)
    try:
        config = {"version": 1, "base_dir": str(project), "sources": ["AGENTS.md", "atable://rules"]}
        pipeline = Pipeline.from_config({**config, "formatter": {"preset": "plain"}})
        render = pipeline.build() if driver == "build" else asyncio.run(pipeline.abuild())
    finally:
        loaders.unregister("atable")

    assert render.text == "Run the tests.\n\nkeep it simple"
    assert [(r.source, r.status) for r in render.sources] == [("AGENTS.md", "loaded"), ("atable://rules", "loaded")]
