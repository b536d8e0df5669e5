"""One story of a render: ``render``, ``explain`` and ``audit`` (table, JSON, ``--at``, HTML) agree, source by source.

Each case runs the real CLI over real files, the render logging to a JSON-lines
file at ``info`` (as a deployment would, in a process of its own), and then asks
every report about the same source (the audits through the CLI's ``main`` in this
process: they read only the log): the block's manifest is what the audit reads,
so a source the render left out is out in every report, under the name the user
gave it.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs
from support.cli import memconfig

from memconfig import Config, Pipeline
from memconfig.cli import main


@dataclass(frozen=True)
class Reports:
    """What every report says after the renders of one case."""

    table: str
    data: dict[str, Any]
    at: dict[str, Any]
    at_table: str
    page: str

    def source(self, key: str) -> dict[str, Any]:
        """The audit's JSON summary of *key*."""
        return next(s for s in self.data["sources"] if s["source"] == key)

    def held(self, key: str) -> dict[str, Any] | None:
        """The ``--at`` JSON row of *key* (at the last render), or None when that render had no such source."""
        return next((s for s in self.at["at"]["sources"] if s["source"] == key), None)

    def row(self, label: str) -> list[str]:
        """The sources table's row of the source shown as *label*, its cells split on runs of spaces."""
        line = next(line for line in self.table.splitlines() if line.startswith(label + " "))
        return re.split(r"\s{2,}", line[len(label) :].strip())

    def attention(self) -> str:
        """The text of the HTML page's first section: what is, or was, out of the prompt."""
        section = self.page.split('id="attention"', 1)[1].split("<h2", 1)[0]
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", section)).split())


def render(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memconfig render`` in *folder* over its ``memconfig.yaml``, appending its events to ``log.jsonl``."""
    return memconfig("render", "-c", "memconfig.yaml", "--log-file", "log.jsonl", *args, cwd=folder)


def explained(folder: Path) -> list[dict[str, Any]]:
    """``memconfig explain --format json``'s sources, glob matches flattened in prompt order."""
    done = memconfig("explain", "-c", "memconfig.yaml", "--format", "json", cwd=folder)
    assert done.returncode == 0, done.stderr

    def flat(sources: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [item for s in sources for item in [s, *flat(s["matches"])]]

    return flat(json.loads(done.stdout)["sources"])


def reports(folder: Path, capsys: pytest.CaptureFixture[str]) -> Reports:
    """Every audit of the case's log, at the time of its last render (in this process: the log is what they read)."""
    log = folder / "log.jsonl"
    last = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()][-1]["timestamp"]
    page = folder / "report.html"

    def audit(*args: str) -> str:
        capsys.readouterr()
        try:
            code = main(["audit", str(log), *args])
        finally:
            structlog.reset_defaults()
        out, err = capsys.readouterr()
        assert code == 0 and "Traceback" not in err, err
        return out

    table = audit()
    data = audit("--format", "json")
    at = audit("--at", last, "--format", "json")
    at_table = audit("--at", last)
    audit("--html", str(page))
    return Reports(table, json.loads(data), json.loads(at), at_table, page.read_text())


def write(folder: Path, config: str, files: dict[str, str]) -> None:
    (folder / "memconfig.yaml").write_text(config, encoding="utf-8")
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


TS_RULE = "---\nglobs: src/**/*.ts\nalwaysApply: false\n---\nUse strict TypeScript.\n"


def test_a_rule_that_did_not_apply_is_out_of_the_prompt_in_every_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --path matched the rule: the block lacks it, and the audit says not_applicable (its skip is at debug)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(
        tmp_path,
        "version: 1\n"
        "sources:\n  - AGENTS.md\n  - {glob: '.cursor/rules/*.mdc', rules: frontmatter}\n"
        "formatter: {preset: plain}\n",
        {"AGENTS.md": "Be brief.\n", ".cursor/rules/ts.mdc": TS_RULE},
    )
    done = render(tmp_path, "--path", "README.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Be brief."
    key = ".cursor/rules/ts.mdc"
    seen = reports(tmp_path, capsys)
    assert seen.source(key)["last_status"] == "skipped"
    assert seen.source(key)["last_reason"] == "not_applicable"
    held = seen.held(key)
    assert held is not None and not held["in_prompt"] and held["reason"] == "not_applicable"
    assert seen.held("AGENTS.md")["in_prompt"]  # type: ignore[index]
    assert seen.row(key)[:2] == ["skipped", "not_applicable"]
    assert "ts.mdc" in seen.attention() and "not_applicable" in seen.attention()


def test_a_deleted_glob_match_is_no_longer_in_the_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """b.md deleted between two renders: the second block's manifest lacks it, so every report has it out."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - {glob: 'notes/*.md'}\nformatter: {preset: plain}\n",
        {"notes/a.md": "Note A.\n", "notes/b.md": "Note B.\n"},
    )
    assert render(tmp_path).stdout.strip() == "Note A.\n\nNote B."
    (tmp_path / "notes" / "b.md").unlink()
    assert render(tmp_path).stdout.strip() == "Note A."
    assert [m["key"] for m in explained(tmp_path)] == ["notes/*.md", "notes/a.md"]
    seen = reports(tmp_path, capsys)
    gone = "notes/b.md"
    assert seen.source(gone)["last_status"] == "removed"
    assert seen.held(gone) is None  # the last render's block had no such source
    assert seen.held("notes/a.md")["in_prompt"]  # type: ignore[index]
    assert seen.row(gone)[0] == "removed"
    assert "b.md" in seen.attention() and "removed" in seen.attention()


def test_a_glob_match_a_declared_source_holds_is_a_duplicate_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AGENTS.md declared, then matched by *.md: it is in once, first; explain says the match is a duplicate too."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - AGENTS.md\n  - {glob: 'docs/*.md'}\nformatter: {preset: plain}\n",
        {"docs/AGENTS.md": "Shared rules.\n", "docs/extra.md": "Extra.\n"},
    )
    (tmp_path / "AGENTS.md").symlink_to(tmp_path / "docs" / "AGENTS.md")
    done = render(tmp_path)
    assert done.stdout.strip() == "Shared rules.\n\nExtra."
    planned = {m["key"]: m for m in explained(tmp_path)}
    assert planned["AGENTS.md"]["verdict"] == "read"
    match = planned["docs/AGENTS.md"]
    assert (match["verdict"], match["reason"]) == ("skipped", "duplicate")
    assert match["detail"] == "the same file as 'AGENTS.md'"
    assert planned["docs/extra.md"]["verdict"] == "read"
    seen = reports(tmp_path, capsys)
    assert seen.source("docs/AGENTS.md")["last_reason"] == "duplicate"
    assert not seen.held("docs/AGENTS.md")["in_prompt"]  # type: ignore[index]
    assert seen.held("AGENTS.md")["in_prompt"]  # type: ignore[index]


def test_a_file_two_discoveries_reach_is_a_duplicate_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two discoveries walk one folder: each file is in once, the second discovery's copy a duplicate everywhere."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - discover: {names: [AGENTS.md], from: sub}\n"
        "  - discover: {names: [CLAUDE.md, AGENTS.md], from: sub}\nformatter: {preset: plain}\n",
        {".git/HEAD": "", "AGENTS.md": "Root.\n", "sub/AGENTS.md": "Sub.\n", "sub/CLAUDE.md": "Claude.\n"},
    )
    done = render(tmp_path)
    assert done.stdout.strip() == "Root.\n\nSub.\n\nClaude."
    second = "discover:first:CLAUDE.md,AGENTS.md@sub"
    repeat = f"{tmp_path / 'AGENTS.md'} (via {second})"
    planned = {m["key"]: m for m in explained(tmp_path)}
    assert (planned[repeat]["verdict"], planned[repeat]["reason"]) == ("skipped", "duplicate")
    assert planned[repeat]["detail"] == f"the same file as {str(tmp_path / 'AGENTS.md')!r}"
    assert planned[str(tmp_path / "sub" / "CLAUDE.md")]["verdict"] == "read"
    seen = reports(tmp_path, capsys)
    assert seen.source(repeat)["last_reason"] == "duplicate"
    assert not seen.held(repeat)["in_prompt"]  # type: ignore[index]
    assert seen.held(str(tmp_path / "AGENTS.md"))["in_prompt"]  # type: ignore[index]


def test_a_source_refused_by_a_storage_option_is_refused_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zip whose `fo` lies outside `allowed_roots`: out of the prompt, and render, explain and audit give the
    same reason and detail, read from one check."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with zipfile.ZipFile(elsewhere / "x.zip", "w") as archive:
        archive.writestr("a.md", "not for this prompt")
    project = tmp_path / "project"
    project.mkdir()
    write(
        project,
        "version: 1\nloader: {allowed_roots: [.]}\nsources:\n  - AGENTS.md\n"
        f"  - {{url: 'zip://a.md', storage_options: {{fo: '{elsewhere / 'x.zip'}'}}}}\nformatter: {{preset: plain}}\n",
        {"AGENTS.md": "A.\n"},
    )
    done = render(project)
    assert done.stdout.strip() == "A."
    detail = f"storage option 'fo': {elsewhere / 'x.zip'} is outside loader.allowed_roots"
    (skipped,) = [
        e for e in map(json.loads, (project / "log.jsonl").read_text().splitlines()) if e["event"] == "source_skipped"
    ]
    assert (skipped["source"], skipped["reason"], skipped["detail"]) == ("zip://a.md", "outside_root", detail)
    planned = {m["key"]: m for m in explained(project)}
    assert (planned["zip://a.md"]["verdict"], planned["zip://a.md"]["reason"]) == ("refused", "outside_root")
    assert planned["zip://a.md"]["detail"] == detail
    seen = reports(project, capsys)
    assert seen.source("zip://a.md")["last_reason"] == "outside_root"
    assert not seen.held("zip://a.md")["in_prompt"]  # type: ignore[index]
    assert seen.row("zip://a.md")[:2] == ["skipped", "outside_root"]
    assert f"zip://a.md skipped outside_root {detail}" in seen.attention()


def test_a_required_source_that_failed_is_named_as_the_user_named_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`name: team-rules`: the error, the failed render in the audit and the HTML page all say team-rules."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - {url: missing.md, name: team-rules, required: true}\nformatter: {preset: plain}\n",
        {},
    )
    done = render(tmp_path)
    assert done.returncode == 1
    url = str(tmp_path / "missing.md")
    assert f"source 'team-rules' ({url}) was not loaded and the render needs it: not_found" in done.stderr
    planned = explained(tmp_path)[0]
    assert (planned["name"], planned["verdict"], planned["reason"]) == ("team-rules", "skipped", "not_found")
    seen = reports(tmp_path, capsys)
    failure = seen.data["renders"][-1]["failures"][0]
    assert (failure["name"], failure["url"], failure["reason"]) == ("team-rules", url, "not_found")
    assert seen.row(f"team-rules ({url})")[:2] == ["skipped", "not_found"]
    assert f"team-rules ({url}): not_found" in seen.attention()


def test_a_source_skipped_then_recovered_keeps_its_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """notes.md missing at first, then written: in the prompt now, and the page still lists its not_found skip."""
    config = "version: 1\nsources:\n  - AGENTS.md\n  - notes.md\nformatter: {preset: plain}\n"
    write(tmp_path, config, {"AGENTS.md": "A.\n"})
    assert render(tmp_path).stdout.strip() == "A."
    (tmp_path / "notes.md").write_text("N.\n", encoding="utf-8")
    assert render(tmp_path).stdout.strip() == "A.\n\nN."
    assert [p["verdict"] for p in explained(tmp_path)] == ["read", "read"]
    seen = reports(tmp_path, capsys)
    notes = seen.source("notes.md")
    assert notes["last_status"] == "loaded" and notes["skips"] == {"not_found": 1}
    assert seen.held("notes.md")["in_prompt"]  # type: ignore[index]
    assert seen.row("notes.md")[0] == "loaded"
    top = seen.attention()
    assert "notes.md" in top and "not_found: 1" in top
    assert "AGENTS.md" not in top  # in the prompt every time


def test_every_render_names_a_manifest_logged_once_per_block(tmp_path: Path) -> None:
    """Each prompt_built's sha256 has a prompt_manifest before it; unchanged turns log no new one, an edit does."""
    (tmp_path / "AGENTS.md").write_text("A.\n", encoding="utf-8")
    config = {
        "version": 1,
        "sources": ["AGENTS.md"],
        "formatter": {"preset": "plain"},
        "cache": {"policy": "revalidate"},
    }
    pipeline = Pipeline.from_config(Config.from_mapping(config, base_dir=tmp_path))
    with capture_logs() as logged:
        for _ in range(3):
            pipeline.render()
        (tmp_path / "AGENTS.md").write_text("B!\n", encoding="utf-8")
        pipeline.render()
    names = [e["event"] for e in logged]
    assert names == [
        "source_loaded",
        "prompt_manifest",
        "prompt_built",
        "prompt_built",
        "prompt_built",
        "source_loaded",
        "prompt_manifest",
        "prompt_built",
    ]
    manifests = [e for e in logged if e["event"] == "prompt_manifest"]
    built = [e for e in logged if e["event"] == "prompt_built"]
    assert [m["sha256"] for m in manifests] == [built[0]["sha256"], built[-1]["sha256"]]
    (entry,) = manifests[-1]["sources"]
    assert entry == {
        "source": "AGENTS.md",
        "name": "AGENTS.md",
        "url": str(tmp_path / "AGENTS.md"),
        "status": "loaded",
        "chars": 2,
        "sha256": hashlib.sha256(b"B!\n").hexdigest(),
    }


def test_a_url_that_looks_like_a_glob_says_so_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`- notes/*.md` names one file, literally: the render's warning, explain, validate's note and the audit all
    give the same detail, which says to write `glob:`."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - AGENTS.md\n  - notes/*.md\nformatter: {preset: plain}\n",
        {"AGENTS.md": "A.\n", "notes/a.md": "N.\n"},
    )
    detail = "no such file; looks like a glob: write `glob:` instead of `url:` to match files"
    done = render(tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "A.")
    (skipped,) = [
        e for e in map(json.loads, (tmp_path / "log.jsonl").read_text().splitlines()) if e["event"] == "source_skipped"
    ]
    assert (skipped["source"], skipped["level"], skipped["reason"], skipped["detail"]) == (
        "notes/*.md",
        "warning",
        "not_found",
        detail,
    )
    planned = {m["key"]: m for m in explained(tmp_path)}
    assert planned["notes/*.md"]["summary"] == f"would be skipped: not_found ({detail})"
    checked = memconfig("validate", "-c", "memconfig.yaml", cwd=tmp_path)
    assert checked.returncode == 0
    assert checked.stdout == "memconfig.yaml: ok (2 sources)\n"
    assert checked.stderr == f"memconfig: note: memconfig.yaml: sources[1].url: 'notes/*.md': {detail}\n"
    seen = reports(tmp_path, capsys)
    assert (seen.source("notes/*.md")["last_reason"], seen.source("notes/*.md")["last_detail"]) == ("not_found", detail)
    assert "looks like a glob" in seen.attention()


def test_a_required_file_render_would_skip_fails_render_explain_and_validate_alike(tmp_path: Path) -> None:
    """A required file missing and a required folder: render exits 1, explain says it would, validate exits 1,
    each with the render's reasons and details; `validate --no-source-checks` looks at no file."""
    write(
        tmp_path,
        "version: 1\nsources:\n  - AGENTS.md\n  - {url: missing.md, required: true}\n"
        "  - {url: 'file://./docs', required: true, name: docs}\n  - optional.md\nformatter: {preset: plain}\n",
        {"AGENTS.md": "A.\n", "docs/a.md": "D.\n"},
    )
    done = render(tmp_path)
    assert done.returncode == 1
    skips = {
        e["source"]: (e["reason"], e["detail"])
        for e in map(json.loads, (tmp_path / "log.jsonl").read_text().splitlines())
        if e["event"] == "source_skipped"
    }
    assert skips == {
        "missing.md": ("not_found", "no such file"),
        "file://./docs": ("is_directory", "is a directory"),
        "optional.md": ("not_found", "no such file"),
    }
    planned = {m["key"]: m for m in explained(tmp_path)}
    for key, (reason, detail) in skips.items():
        assert (planned[key]["reason"], planned[key]["detail"]) == (reason, detail)
    fails = "render would fail (exit 1): the source is required"
    assert planned["missing.md"]["summary"] == f"would be skipped: not_found (no such file); {fails}"
    assert planned["file://./docs"]["summary"] == f"would be skipped: is_directory (is a directory); {fails}"
    assert [k for k, m in planned.items() if m["fails_render"]] == ["missing.md", "file://./docs"]
    assert planned["optional.md"]["summary"] == "would be skipped: not_found (no such file)"
    checked = memconfig("validate", "-c", "memconfig.yaml", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (1, "")
    failures = [
        "'missing.md': not_found (no such file)",
        f"'docs' (file://{tmp_path}/docs): is_directory (is a directory)",
    ]
    assert done.stderr.splitlines()[-2:] == [f"  {failure}" for failure in failures]  # the render's own words
    assert checked.stderr.splitlines() == [
        "memconfig: error: memconfig.yaml: 2 required sources would be skipped; a render would fail (exit 1)",
        f"  sources[1]: {failures[0]}",
        f"  sources[2]: {failures[1]}",
    ]
    unchecked = memconfig("validate", "-c", "memconfig.yaml", "--no-source-checks", cwd=tmp_path)
    assert (unchecked.returncode, unchecked.stdout, unchecked.stderr) == (0, "memconfig.yaml: ok (4 sources)\n", "")
