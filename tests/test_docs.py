"""The documentation site: ``mkdocs build --strict`` passes, and its reference pages are made from the code.

The configuration, event and command-line references are generated at build time by ``tools/docs_hooks.py``
from the config schema, ``memconfig.events.EVENTS`` and the command line's parser: these tests build the site
and read its pages, and call the generators directly.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.cli import ROOT

from memconfig.config.schema import Config
from memconfig.events import EVENTS
from memconfig.model import SkipReason

README = ROOT / "README.md"
HOOKS = ROOT / "tools" / "docs_hooks.py"
REFERENCE = ("reference/configuration.md", "reference/events.md", "reference/cli.md")


def _hooks() -> ModuleType:
    """``tools/docs_hooks.py``, loaded as MkDocs loads a hook: by its path."""
    spec = importlib.util.spec_from_file_location("docs_hooks", HOOKS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``mkdocs build --strict -f mkdocs.yml`` writes it, into a folder of the test's."""
    folder = tmp_path_factory.mktemp("site")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMCONFIG_")}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH")) if p)
    environ["NO_MKDOCS_2_WARNING"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return folder


def _page(site: Path, uri: str) -> str:
    """A built page's text, tags removed (``reference/events.md`` is ``reference/events/index.html``)."""
    page = site / uri.removesuffix(".md") / "index.html"
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_site_builds_strict(site: Path) -> None:
    """``mkdocs build --strict`` passes (no broken link or anchor, no page left out of the nav), every page built."""
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    for page in [*pages, *(uri.removesuffix(".md") for uri in REFERENCE)]:
        built = site / ("" if page == "index" else page) / "index.html"
        assert built.is_file(), f"{page} was not built"


def test_reference_pages_are_generated_not_committed() -> None:
    """The three reference pages exist only in the built site: no copy under docs/ can go stale."""
    for uri in REFERENCE:
        assert not (ROOT / "docs" / uri).exists(), f"docs/{uri} is generated at build time; do not commit it"
    assert set(_hooks().PAGES) == set(REFERENCE)


def test_configuration_reference_names_every_key(site: Path) -> None:
    """Every top-level key of the schema is in the built configuration reference, with its nested keys."""
    page = _page(site, "reference/configuration.md")
    for key in Config.model_fields:
        assert re.search(rf"(?m)^{re.escape(key)}\b", page), f"top-level key {key!r} missing"
    for nested in ("sources[].url", "sources[].discover.down.max_dirs", "loader.timeout", "formatter.budget.policy"):
        assert nested in page
    assert "once · revalidate · ttl · always · watch" in page  # an enum's choices


def test_event_reference_names_every_event(site: Path) -> None:
    """Every event of ``EVENTS`` has its section, with its level and every field; every skip reason is listed."""
    page = _page(site, "reference/events.md")
    for name, spec in EVENTS.items():
        section = page.split(f"\n{name}¶", 1)
        assert len(section) == 2, f"event {name!r} has no section"
        body = section[1].split("¶", 1)[0]
        assert f"Level: {spec.level}" in body
        for field in spec.fields:
            assert re.search(rf"(?m)^{re.escape(field)}$", body), f"{name}: field {field!r} missing"
    for reason in SkipReason:
        assert reason.value in page


def test_cli_reference_names_every_command(site: Path) -> None:
    """Every subcommand of the parser has its section in the built CLI reference, with every option."""
    hooks = _hooks()
    page = _page(site, "reference/cli.md")
    parser = hooks._parser()
    for name, command in hooks._subcommands(parser).items():
        assert f"memconfig {name}¶" in page, f"command {name!r} missing"
        for action in command._actions:
            for option in action.option_strings:
                assert option in page or option in ("-h", "--help")


def test_generators_name_everything_and_miss_no_docstring(caplog: pytest.LogCaptureFixture) -> None:
    """Called directly, the generators document everything, each with its docstring (a missing one is a warning,
    which fails the strict build)."""
    hooks = _hooks()
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.memconfig"):
        configuration, events, cli = hooks.config_reference(), hooks.event_reference(), hooks.cli_reference()
    assert [r.getMessage() for r in caplog.records] == []
    assert hooks.config_keys() == list(Config.model_fields)
    for key in hooks.config_keys():
        assert f"| `{key}` |" in configuration
    for name in EVENTS:
        assert f"## `{name}` {{#{name}}}" in events
    assert hooks.cli_commands() == ["render", "validate", "sources", "audit", "explain"]
    for name in hooks.cli_commands():
        assert f"## `memconfig {name}` {{#{name}}}" in cli


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the repository (and a heading, where it gives one)."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", text)
    assert links
    for target, anchor in links:
        if "://" in target:
            continue
        path = ROOT / target
        assert path.exists(), f"README links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"(?m)^#+ (.+)$", path.read_text(encoding="utf-8"))
            slugs = {re.sub(r"[^a-z0-9]+", "-", h.lower()).strip("-") for h in headings}
            assert anchor in slugs, f"README links to {target}#{anchor}: no such heading"


#: An xfail reason that cites a documentation row: ``"docs/page.md, row — what it says"``.
_CITED = re.compile(r'"(docs/[\w-]+\.md), ([^"]+?) — ')


def _first_cells(page: Path) -> set[str]:
    """The first cell of every table row of *page*, without code marks, in lower case."""
    rows = re.findall(r"(?m)^\| ([^|]+?) \|", page.read_text(encoding="utf-8"))
    return {row.replace("`", "").strip().lower() for row in rows}


def test_peer_xfail_reasons_cite_rows_that_exist() -> None:
    """The strict xfails of tests/peers cite a **differs** row by page and label; that row is on that page."""
    cited = [
        (page, row)
        for test in sorted((ROOT / "tests" / "peers").glob("*.py"))
        for page, row in _CITED.findall(test.read_text(encoding="utf-8"))
    ]
    assert len(cited) >= 4
    for page, row in cited:
        cells = _first_cells(ROOT / page)
        label = row.replace("`", "").strip().lower()
        assert label in cells or label.split(": ", 1)[-1] in cells, f"{page} has no row {row!r}"
