"""``memconfig audit LOG --html``: the page, opened in headless Chromium, over a log the real CLI wrote.

The log comes from ``memconfig render`` run several times over real files: an
edit, a deletion, a source cut by its own budget, one dropped by the block's
budget, a required source missing for one run (a failed render), and a source
whose name and file name are HTML. ``PYTHONPATH=.:tests python tests/audit/test_report.py`` makes the
README's screenshot (``docs/audit-report.png``) from the same kind of log.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from support.browser import Chromium, chromium_or_skip, png_size
from support.cli import ROOT, memconfig

from memconfig.audit.html import render_html
from memconfig.audit.model import (
    Audit,
    InputSummary,
    PromptAt,
    RenderFailure,
    RenderSummary,
    SourceAt,
    SourceSummary,
    VersionChange,
)

SCREENSHOT = ROOT / "docs" / "audit-report.png"
#: What the hostile source's script would do if it ran: mark the page.
HOSTILE = "<script>document.documentElement.setAttribute('data-pwned','yes')</script>"
HOSTILE_FILE = "<img src=x onerror=\"document.title='pwned'\">.md"


@dataclass(frozen=True)
class Log:
    """A load log written by the CLI, and what its events say (the page must show all of it)."""

    path: Path
    events: list[dict[str, object]]

    @property
    def sources(self) -> set[str]:
        return {str(e["source"]) for e in self.events if "source" in e}

    @property
    def names(self) -> set[str]:
        return {str(e["name"]) for e in self.events if e.get("name")}

    @property
    def reasons(self) -> set[str]:
        found = {str(e["reason"]) for e in self.events if e.get("reason")}
        for event in self.events:
            found |= {str(f["reason"]) for f in event.get("failures", [])}  # type: ignore[attr-defined]
        return found


def write_log(folder: Path, runs: int = 5, *, hostile: bool = True) -> Log:
    """Render a config *runs* times (at least 5) with the real CLI, changing its files between runs.

    *hostile* adds the source whose name and file name are HTML.
    """
    files = folder / "memory"
    files.mkdir(parents=True)
    (files / "AGENTS.md").write_text("# Rules\nRun the tests before every commit.\n", encoding="utf-8")
    (files / "notes.md").write_text("- the staging bucket is logs-staging\n", encoding="utf-8")
    (files / "old.md").write_text("an old note, deleted before the third run\n", encoding="utf-8")
    (files / "required.md").write_text("must be here\n", encoding="utf-8")
    (files / "big.md").write_text("".join(f"line {i}: {'x' * 60}\n" for i in range(40)), encoding="utf-8")
    if hostile:
        (files / HOSTILE_FILE).write_text("hostile file\n", encoding="utf-8")
    (files / "huge.md").write_text("y" * 3000 + "\n", encoding="utf-8")
    config = {
        "version": 1,
        "sources": [
            "memory/AGENTS.md",
            {"url": "memory/notes.md", "name": "my notes"},
            "memory/old.md",
            {"url": "memory/required.md", "required": True},
            {"url": "memory/big.md", "max_chars": 600},
            *([{"url": f"memory/{HOSTILE_FILE}", "name": HOSTILE}] if hostile else []),
            "memory/missing.md",
            {"url": "memory/huge.md", "priority": -1},
        ],
        "formatter": {"budget": {"max_chars": 2500, "policy": "drop"}},
    }
    (folder / "memconfig.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    log = folder / "memconfig.jsonl"
    for run in range(max(runs, 5)):
        if run == 1:
            with (files / "notes.md").open("a", encoding="utf-8") as notes:
                notes.write("- the release is on Tuesday\n")
        if run == 2:
            (files / "old.md").unlink()
            (files / "required.md").unlink()
        if run == 3:
            (files / "required.md").write_text("must be here, again\n", encoding="utf-8")
        if run >= 4:
            (files / "AGENTS.md").write_text(f"# Rules\nRun the tests before every commit.\nrevision {run}\n")
        done = memconfig("render", "-c", "memconfig.yaml", "--log-file", str(log), cwd=folder)
        assert done.returncode == (1 if run == 2 else 0), done.stderr
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return Log(log, events)


def write_report(log: Log, out: Path) -> str:
    """``memconfig audit LOG --html OUT``; the page's text."""
    done = memconfig("audit", str(log.path), "--html", str(out), cwd=log.path.parent)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")


class _Page(HTMLParser):
    """A page's text by section (the ``id`` of the ``h2`` above it), its elements and its outside references."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.section = ""
        self.text: dict[str, list[str]] = {"": []}
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag == "h2":
            self.section = found.get("id") or ""
            self.text.setdefault(self.section, [])
        if found.get("style"):
            self.styles.append(found["style"] or "")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)
        else:
            self.text[self.section].append(data)

    def all_text(self) -> str:
        return " ".join(" ".join(parts) for parts in self.text.values())

    def section_text(self, section: str) -> str:
        return " ".join(self.text.get(section, []))


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


URL_ATTRIBUTES = {"src", "href", "xlink:href", "srcset", "action", "formaction", "poster", "data", "background"}
FETCHING_TAGS = {
    "script",
    "link",
    "iframe",
    "frame",
    "object",
    "embed",
    "base",
    "img",
    "image",
    "use",
    "audio",
    "video",
}


def outside_references(page: _Page) -> list[str]:
    """Every reference that would leave the page: an attribute naming a URL or file, an import, a ``url(``."""
    found = []
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            if name in URL_ATTRIBUTES and not (value or "").startswith(("data:", "#")):
                found.append(f"<{tag} {name}={value!r}>")
        if tag in FETCHING_TAGS:
            found.append(f"<{tag}>")
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            found.append("<meta refresh>")
    for style in page.styles:
        if "@import" in style:
            found.append("@import")
        rest = style
        while "url(" in rest:
            rest = rest.split("url(", 1)[1]
            if not rest.lstrip(" '\"").startswith("data:"):
                found.append(f"url({rest[:40]}")
    return found


# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Chromium:
    """Headless Chromium, or the test is skipped saying none could be had."""
    return chromium_or_skip()


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Log:
    """A log of six renders by the real CLI over changing files."""
    return write_log(tmp_path_factory.mktemp("report"), runs=6)


@pytest.fixture(scope="module")
def report(log: Log) -> Path:
    out = log.path.parent / "report.html"
    write_report(log, out)
    return out


@pytest.fixture(scope="module")
def dom(chromium: Chromium, report: Path) -> _Page:
    """The page as Chromium has it once loaded."""
    return parse(chromium.dump_dom(report))


# -- tests ---------------------------------------------------------------------


def test_the_log_has_what_the_page_must_show(log: Log) -> None:
    """The CLI's log holds the cases the page is checked on (so the other tests check something)."""
    kinds = {e["event"] for e in log.events}
    assert {"source_loaded", "source_skipped", "source_truncated", "source_dropped", "prompt_failed"} <= kinds
    assert {"not_found", "over_budget"} <= log.reasons
    assert HOSTILE in log.names


def test_the_dom_names_every_source_and_reason(dom: _Page, log: Log) -> None:
    """Every source the log names (key and name) and every reason it gives are in the page Chromium loaded."""
    text = dom.all_text()
    missing = sorted(word for word in log.sources | log.names | log.reasons if word not in text)
    assert not missing


def test_skipped_and_failing_sources_come_first_with_reason_and_since(dom: _Page, log: Log) -> None:
    """The section at the top lists what is out of the prompt, why, and since when (its first skip, to the second)."""
    first_h2 = next(attrs.get("id") for tag, attrs in dom.tags if tag == "h2")
    assert first_h2 == "attention"
    top = dom.section_text("attention")
    old_skipped = next(e for e in log.events if e["event"] == "source_skipped" and e["source"] == "memory/old.md")
    since = str(old_skipped["timestamp"]).replace("T", " ").split(".")[0] + "Z"
    assert "old.md" in top and "not_found" in top and since in top
    assert "over_budget" in top  # huge.md, dropped by the block's budget
    failed = next(e for e in log.events if e["event"] == "prompt_failed")
    assert [f["source"] for f in failed["failures"]] == ["memory/required.md"]
    assert "memory/required.md" in top  # the render that failed, and what it did not get
    assert "AGENTS.md" not in top  # in the prompt every time


def test_charts_are_inline_svg_with_every_prompt_source(dom: _Page, log: Log) -> None:
    """The share chart and the timeline are SVG in the page; the chart has a bar per source in the last prompt."""
    assert sum(1 for tag, _ in dom.tags if tag == "svg") >= 2
    share = dom.section_text("share")
    for name in ("AGENTS.md", "my notes", "big.md", "required.md", HOSTILE):
        assert name in share
    timeline = dom.section_text("timeline")
    assert all(lane in timeline for lane in ("loaded", "skipped", "stale", "truncated"))


def test_a_cut_source_is_drawn_at_the_size_it_kept(report: Path, log: Log) -> None:
    """big.md is cut by its own max_chars: its bar is the characters left in the prompt, not its size at load."""
    loaded = [e for e in log.events if e["event"] == "source_loaded" and e["source"] == "memory/big.md"]
    cut = [e for e in log.events if e["event"] == "source_truncated" and e["source"] == "memory/big.md"]
    assert cut and loaded[-1]["chars"] > cut[-1]["chars_after"]
    page = parse(report.read_text(encoding="utf-8"))
    bar = next(text for text in page.text["share"] if text.startswith("memory/big.md: "))  # the bar's tooltip
    assert f"{cut[-1]['chars_after']:,} · " in bar and "cut" in bar
    assert f"{loaded[-1]['chars']:,}" not in bar
    done = memconfig("audit", str(log.path), "--format", "json", cwd=log.path.parent)
    big = next(s for s in json.loads(done.stdout)["sources"] if s["source"] == "memory/big.md")
    assert big["prompt_chars"] == cut[-1]["chars_after"] and big["chars"] == loaded[-1]["chars"]
    huge = next(s for s in json.loads(done.stdout)["sources"] if s["source"] == "memory/huge.md")
    assert huge["last_status"] == "dropped" and huge["prompt_chars"] == 0


def test_version_changes_per_source(dom: _Page, log: Log) -> None:
    """Each source's versions: short sha256 of each, in the order they came."""
    versions = dom.section_text("versions")
    notes = [str(e["sha256"]) for e in log.events if e["event"] == "source_loaded" and e["source"] == "memory/notes.md"]
    assert len(set(notes)) == 2
    for sha in dict.fromkeys(notes):
        assert sha[:12] in versions
    assert versions.index(notes[0][:12]) < versions.index(notes[-1][:12])


def test_the_prompt_at_a_time(log: Log, tmp_path: Path) -> None:
    """``--at TIME`` adds what the prompt held then: the render before it, each source with its status and version."""
    built = [e for e in log.events if e["event"] == "prompt_built"]
    first = str(built[0]["render_id"])
    out = tmp_path / "at.html"
    done = memconfig("audit", str(log.path), "--at", str(built[0]["timestamp"]), "--html", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = parse(out.read_text(encoding="utf-8"))
    at = page.section_text("at")
    assert first in at and str(built[0]["sha256"])[:12] in at
    notes = next(e for e in log.events if e["render_id"] == first and e.get("source") == "memory/notes.md")
    assert str(notes["sha256"])[:12] in at  # its first version, not the edited one
    assert "memory/old.md" in at  # still there then


def test_the_page_is_self_contained(report: Path) -> None:
    """No script, style sheet, font, image or frame from outside the page; a policy forbids them anyway."""
    page = parse(report.read_text(encoding="utf-8"))
    assert outside_references(page) == []
    policy = next(a.get("content") or "" for t, a in page.tags if t == "meta" and a.get("http-equiv"))
    assert "default-src 'none'" in policy


def test_the_loaded_page_is_self_contained(dom: _Page) -> None:
    """Once Chromium loaded it, the page still refers to nothing outside itself."""
    assert outside_references(dom) == []


def test_a_hostile_source_name_is_escaped(report: Path) -> None:
    """A source named ``<script>…`` is in the file as escaped text; the file has no script at all."""
    raw = report.read_text(encoding="utf-8")
    assert "&lt;script&gt;document.documentElement" in raw
    assert "&lt;img src=x onerror=&quot;" in raw
    assert "<script" not in raw


def test_a_hostile_source_name_is_shown_as_text(dom: _Page) -> None:
    """In the loaded page, ``<script>…`` and a file named ``<img onerror=…>`` are text; nothing of theirs ran."""
    assert HOSTILE in dom.all_text()
    assert HOSTILE_FILE in dom.all_text()
    assert not any(tag in ("script", "img") for tag, _ in dom.tags)
    html_tag = next(attrs for tag, attrs in dom.tags if tag == "html")
    assert "data-pwned" not in html_tag


def test_a_screenshot_is_taken(chromium: Chromium, report: Path, tmp_path: Path) -> None:
    """Chromium draws the page: a 1200x1600 PNG with more on it than a blank page."""
    shot = chromium.screenshot(report, tmp_path / "report.png", 1200, 1600)
    assert png_size(shot) == (1200, 1600)
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    empty = chromium.screenshot(blank, tmp_path / "blank.png", 1200, 1600)
    assert shot.stat().st_size > 5 * empty.stat().st_size


BAD_LOGS = sorted(path.name for path in (ROOT / "tests" / "audit" / "bad_logs").glob("*.jsonl"))


@pytest.mark.parametrize("bad", [*BAD_LOGS, "empty.jsonl"])
def test_a_page_for_any_log(bad: str, tmp_path: Path) -> None:
    """Malformed, foreign, binary, cut-off or empty logs still give a page, counting what was not memconfig's."""
    log = ROOT / "tests" / "audit" / "bad_logs" / bad
    if bad == "empty.jsonl":
        log = tmp_path / bad
        log.write_bytes(b"")
    out = tmp_path / "report.html"
    done = memconfig("audit", str(log), "--html", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = parse(out.read_text(encoding="utf-8"))
    assert outside_references(page) == []
    assert bad in page.section_text("inputs")


def test_no_secret_in_the_page(tmp_path: Path) -> None:
    """A log with secrets planted in foreign lines, a cut-off line and unmasked URLs gives a page without them."""
    planted = ROOT / "tests" / "audit" / "bad_logs" / "planted-secrets.jsonl"
    out = tmp_path / "report.html"
    done = memconfig("audit", str(planted), "--html", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "remote.md" in page and "remote_error" in page  # the event is shown, its URL masked
    assert "SECRET" not in page + done.stdout + done.stderr


def test_the_same_log_gives_the_same_page(log: Log, report: Path, tmp_path: Path) -> None:
    """Nothing in the page depends on when, where (folder, time zone, hash seed) or how often it was made."""
    again = tmp_path / "again.html"
    other = {"TZ": "Pacific/Kiritimati", "PYTHONHASHSEED": "12345", "LC_ALL": "C"}
    done = memconfig("audit", str(log.path), "--html", str(again), cwd=tmp_path, env=other)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == report.read_bytes()


#: The elements the page is made of: anything else in it came from a log.
PAGE_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "section", "div", "br", "span", "i"),
    *("table", "thead", "tbody", "tr", "th", "td", "code", "svg", "g", "title", "text", "rect", "line", "polyline"),
}


def hostile_audit(evil: str) -> Audit:
    """An audit whose every logged text (names, urls, reasons, details, hashes, times, ids, hosts, inputs) is *evil*."""
    source = SourceSummary(evil, name=evil, url=evil, renders=2, loads=2, last_status="skipped", last_reason=evil)
    source.last_detail, source.status_since, source.last_seen, source.required = evil, evil, evil, True
    source.sha256, source.sha256_changed, source.versions, source.chars, source.first_chars = evil, evil, 2, 5, 3
    source.skips[evil] += 1
    source.drops[evil] += 1
    source.cache[evil] += 1
    source.changes.extend([VersionChange(evil, evil, 3, 3, evil), VersionChange(evil, evil, 5, 5, evil)])
    shown = SourceSummary(f"{evil}2", name=evil, url=evil, last_status="loaded", chars=7, truncations=1)
    failure = RenderFailure(evil, evil, evil)
    render = RenderSummary(evil, evil, time=evil, started=evil, host=evil, pid=1, failed=True, sha256=evil)
    render.failures.append(failure)
    audit = Audit(schema=1, sources=[source, shown], renders=[render], renders_total=1, renders_failed=1)
    audit.inputs = [InputSummary(evil, 1, 1, error=evil)]
    audit.lines.unknown_events[evil] += 1
    audit.lines.malformed[evil] += 1
    audit.first_time, audit.last_time, audit.filters = evil, evil, {evil: evil}
    audit.at = PromptAt(evil, render, [SourceAt(evil, evil, evil, "loaded", evil, evil, 5, evil)])
    return audit


@pytest.mark.parametrize(
    "evil",
    [
        pytest.param(HOSTILE, id="script"),
        pytest.param("\"><svg onload=alert(1)><a href='https://evil.example/'>x</a>", id="attribute-break-out"),
        pytest.param("</title></style></svg></textarea><script>alert(1)</script>", id="closing-tags"),
        pytest.param("a\x00b\x1b[31mc\u202ed\x7f", id="control-characters"),
        pytest.param("x" * 10_000 + "<b>", id="huge"),
    ],
)
def test_every_logged_value_is_text(evil: str) -> None:
    """Whatever a log holds, in any field, the page is made only of its own elements, with no outside reference."""
    raw = render_html(hostile_audit(evil))
    page = parse(raw)
    assert {tag for tag, _ in page.tags} <= PAGE_TAGS
    assert not [name for _, attrs in page.tags for name in attrs if name.startswith("on")]
    assert outside_references(page) == []
    assert not [c for c in raw if c not in "\n" and not c.isprintable()]  # controls and bidi overrides replaced
    assert "".join(c if c.isprintable() else "\ufffd" for c in evil)[:300] in page.all_text()


def test_the_page_is_the_same_for_the_same_audit() -> None:
    """No time, path or random part of its own: the same audit gives the same bytes."""
    assert render_html(hostile_audit("a")) == render_html(hostile_audit("a"))


def make_screenshot(target: Path = SCREENSHOT) -> Path:
    """The README's screenshot: a demo log by the real CLI, its page, drawn by headless Chromium."""
    import tempfile

    found = chromium_or_skip()
    with tempfile.TemporaryDirectory() as folder:
        log = write_log(Path(folder) / "agent", runs=8, hostile=False)
        page = Path(folder) / "report.html"
        write_report(log, page)
        shot = found.screenshot(page, Path(folder) / "report.png", 1200, 1600)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
    return target


if __name__ == "__main__":
    print(make_screenshot())
