"""The audit's outputs (table, JSON, HTML page) over the test logs are what they were: byte for byte.

``golden/expected.json.gz`` holds, for each log and each way of asking, the
output of the audit as it was before its one pass was made faster (issue 21),
so a faster pass must give exactly the same report. The logs: each of
``bad_logs/``, a realistic mix (``golden/mix.jsonl.gz``: four hosts, three
processes each, unchanged turns, sessions, edits, cuts, stale sources, failed
renders; written by ``benchmarks/auditlog.py``) and a fleet that logs manifests,
with every bad log's lines spliced in (``golden/fleet.jsonl.gz``).

When the report is meant to change, write the outputs again and review the diff:
``PYTHONPATH=. python tests/audit/test_golden.py --write``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
import structlog

from memconfig.audit import aggregate
from memconfig.audit.aggregate import Aggregator
from memconfig.audit.inputs import line_pieces
from memconfig.audit.model import InputSummary
from memconfig.audit.output import audit_data
from memconfig.cli import main

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
EXPECTED = GOLDEN / "expected.json.gz"
BAD_LOGS = sorted(f"../bad_logs/{path.name}" for path in (HERE / "bad_logs").glob("*.jsonl"))
REALISTIC = ("mix.jsonl.gz", "fleet.jsonl.gz")
#: The ways of asking, each a list of arguments after the log's name (``{html}``: the page's path).
ASKED = {
    "table": ["--renders", "50"],
    "json": ["--format", "json"],
    "html": ["--html", "{html}"],
}
ASKED_REALISTIC = {
    **ASKED,
    "at": ["--format", "json", "--at", "2025-12-01T08:15:00Z"],
    "at-table": ["--at", "2025-12-01T08:10:00Z"],
    "window": ["--format", "json", "--since", "2025-12-01T08:05:00Z", "--until", "2025-12-01T08:12:00Z"],
    "source": ["--format", "json", "--source", "*0[0-4]-*"],
    "failed": ["--format", "json", "--status", "failed"],
    "reason": ["--reason", "timeout", "--status", "stale"],
}
CASES = [(log, asked) for log in BAD_LOGS for asked in ASKED] + [
    (log, asked) for log in REALISTIC for asked in ASKED_REALISTIC
]


def outputs(log: str, asked: str) -> str:
    """``memconfig audit LOG ARGS`` run in this process from ``golden/``: its exit code, stdout, stderr and page."""
    arguments = {**ASKED, **ASKED_REALISTIC}[asked]
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(GOLDEN):
        html = Path(folder) / "report.html"
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["audit", log, *(a.replace("{html}", str(html)) for a in arguments)])
        finally:
            structlog.reset_defaults()
        page = html.read_text(encoding="utf-8") if html.exists() else ""
    return f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}--- page\n{page}"


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    with gzip.open(EXPECTED, "rt", encoding="utf-8") as stream:
        found: dict[str, str] = json.load(stream)
    return found


@pytest.mark.parametrize(("log", "asked"), [pytest.param(log, asked, id=f"{log}-{asked}") for log, asked in CASES])
def test_the_report_is_what_it_was(
    log: str, asked: str, expected: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every output of the audit over the test logs is byte for byte what it was before the pass was made faster."""
    monkeypatch.setenv("COLUMNS", "160")
    assert outputs(log, asked) == expected[f"{log} {asked}"]


def test_every_case_has_its_output(expected: dict[str, str]) -> None:
    """The fixture holds an output for each case, and no other (a case added must have its output written)."""
    assert set(expected) == {f"{log} {asked}" for log, asked in CASES}


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    os.environ["COLUMNS"] = "160"
    written = {f"{log} {asked}": outputs(log, asked) for log, asked in CASES}
    with gzip.GzipFile(EXPECTED, "wb", mtime=0) as stream:
        stream.write(json.dumps(written, indent=0, sort_keys=True).encode("utf-8"))
    print(f"{EXPECTED}: {len(written)} outputs")


def _audit_data(logs: list[Path]) -> bytes:
    """The JSON data of an audit of *logs* (in that order), read in this process."""
    aggregator = Aggregator()
    for log in logs:
        with gzip.open(log, "rb") as stream:
            aggregator.feed(line_pieces(stream), InputSummary(log.name))
    return orjson.dumps(audit_data(aggregator.finish()))


def _only_the_same_manifest(process: Any, manifest: Any, before: Any) -> bool:
    return before is manifest and process.applied is manifest


#: Bounds small enough that the realistic logs reach each: processes let go, renders and manifests forgotten.
SMALL = {
    "MAX_PROCESSES": 5,
    "MAX_PROCESS_ENTRIES": 60,
    "MAX_MANIFESTS": 3,
    "MAX_MANIFEST_ENTRIES": 50,
    "MAX_OPEN_RENDERS": 4,
    "MAX_FINISHED_IDS": 30,
    "MAX_RENDERS": 40,
    "MAX_ENTRIES_READ": 2,
}


@pytest.mark.parametrize("bounds", [pytest.param({}, id="bounds"), pytest.param(SMALL, id="small-bounds")])
def test_the_shortcuts_change_nothing(bounds: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A render kept as its line, and a manifest found in step, give the audit the long way gives, at any bounds."""
    for name, value in bounds.items():
        monkeypatch.setattr(aggregate, name, value)
    logs = [GOLDEN / name for name in REALISTIC]
    quick = _audit_data(logs)
    monkeypatch.setattr(aggregate, "_KEPT_LINE", -1)  # no render kept as its line
    monkeypatch.setattr(aggregate, "MAX_ENTRIES_READ_BYTES", -1)  # every manifest's entries read again
    monkeypatch.setattr(aggregate.Aggregator, "_unchanged", staticmethod(_only_the_same_manifest))
    assert _audit_data(logs) == quick


class _Log:
    """Lines of renders of one config (``c1``), each a second after the last, as a test writes them."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def event(self, render_id: str, **fields: Any) -> None:
        second = len(self.lines)
        when = f"2026-12-01T08:{second // 60:02d}:{second % 60:02d}.000000Z"
        self.lines.append(orjson.dumps({**fields, "render_id": render_id, "timestamp": when, "host": "h", "pid": 1}))

    def render(self, render_id: str, block: str, *loaded: str, listed: tuple[str, ...] = ()) -> None:
        """A render: its sources *loaded*, its block's manifest when it *listed* some, its prompt_built."""
        for key in loaded:
            self.event(render_id, event="source_loaded", source=key, chars=10, sha256="a" * 64, cache="miss")
        if listed:
            entries = [{"source": k, "status": "loaded", "chars": 10, "sha256": "a" * 64} for k in listed]
            self.event(render_id, event="prompt_manifest", config="c1", sha256=block, chars=10, sources=entries)
        self.event(render_id, event="prompt_built", schema=1, sha256=block, chars=10)

    def statuses(self) -> dict[str, str]:
        aggregator = Aggregator()
        aggregator.feed(self.lines, InputSummary("manifests.jsonl"))
        return {summary.source: str(summary.last_status) for summary in aggregator.finish().sources}


def test_a_manifest_has_the_last_word_after_another_process_s_render_of_the_same_block() -> None:
    """A source stale in a turn whose block is unchanged is set as listed when another process's render came between."""
    log, block = _Log(), "b" * 64
    log.render("p-1", block, "A.md", listed=("A.md",))
    log.render("q-1", block, "A.md", listed=("A.md",))
    log.render("p-2", block)
    log.event("q-2", event="source_stale", source="A.md", reason="timeout", sha256="a" * 64)
    log.render("q-2", block)
    assert log.statuses() == {"A.md": "loaded"}


def test_a_source_of_another_process_s_block_no_longer_listed_is_removed() -> None:
    """An unchanged turn after another process's block with one more source (same config) removes that source."""
    log = _Log()
    log.render("p-1", "1" * 64, "A.md", "B.md", listed=("A.md", "B.md"))
    log.render("q-1", "2" * 64, "A.md", "B.md", "C.md", listed=("A.md", "B.md", "C.md"))
    log.render("p-2", "1" * 64)
    assert log.statuses() == {"A.md": "loaded", "B.md": "loaded", "C.md": "removed"}


def test_a_manifest_listing_a_source_twice_is_applied_again_in_full() -> None:
    """A manifest that lists a source twice (in, then out) sets it twice on every render of it, as the long way does."""
    log, block = _Log(), "b" * 64
    twice = [
        {"source": "A.md", "status": "loaded", "chars": 10, "sha256": "a" * 64},
        {"source": "A.md", "status": "skipped", "reason": "not_found", "chars": None, "sha256": None},
    ]
    for render_id in ("p-1", "q-1"):
        log.event(render_id, event="source_loaded", source="A.md", chars=10, sha256="a" * 64, cache="miss")
        log.event(render_id, event="prompt_manifest", config="c1", sha256=block, chars=10, sources=twice)
        log.render(render_id, block)
    log.render("p-2", block)
    aggregator = Aggregator()
    aggregator.feed(log.lines, InputSummary("twice.jsonl"))
    (summary,) = aggregator.finish().sources
    assert (summary.last_status, summary.status_since) == ("skipped", "2026-12-01T08:00:06.000000Z")
