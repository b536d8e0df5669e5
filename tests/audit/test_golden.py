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

import pytest
import structlog

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
