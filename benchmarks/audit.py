"""``memconfig audit`` over a million log lines against a bare ``orjson.loads`` loop over the file; its peak memory.

    PYTHONPATH=. python benchmarks/audit.py [--lines 1000000] [--repeat 5] [--manifests]

Target (issue 21): at most 2x the bare loop, peak under 150 MB. The log is
:mod:`auditlog`'s realistic mix (4 hosts x 3 processes interleaved; about 48 %
``prompt_built``, most of them unchanged turns, 44 % ``source_loaded``, skips,
cuts, stale sources, failed renders); ``--manifests`` adds each new block's
``prompt_manifest``, as today's CLI logs it.

Two comparisons, each run *--repeat* times, the two sides taking turns (so a
slow moment on a shared machine slows both alike); each is reported as the
median of the runs' ratios with their spread (min-max), and as best of each side:

* **in process**: CPU time (``time.process_time``) of ``for line in file:
  orjson.loads(line)`` against the audit's one pass (``Aggregator.feed`` over
  the CLI's line splitter, then ``finish``), both in this process;
* **whole process**: CPU time (user + system, from ``wait4``) of a fresh
  ``python`` running the bare loop against ``memconfig audit FILE --format
  json`` as the console script runs it (imports, the pass, the masking and the
  JSON written to the null device). Bytecode is read, as for an installed
  package.

Peak memory is the whole-process audit's ``VmHWM`` (read from
``/proc/self/status`` as it exits; the most of its runs), with the peak of a
child that only imports the command for comparison.
Exit status: 0 when every ratio's median and the peak are within the targets, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from auditlog import generate

TARGET_RATIO = 2.0
TARGET_PEAK_MB = 150
#: As pip installs a package (bytecode compiled and read), as benchmarks/startup.py runs it.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
_PEAK = (
    "import atexit, sys\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as status:\n"
    "        print(next(line for line in status if line.startswith('VmHWM:')).split()[1], file=sys.stderr)\n"
    "atexit.register(_peak)\n"
)
BARE = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "with open(sys.argv[1], 'rb') as stream:\n"
    "    for line in stream:\n"
    "        loads(line)\n"
)
AUDIT = _PEAK + "sys.argv[0] = 'memconfig'\nfrom memconfig.cli import run\nrun()\n"
IMPORTS = _PEAK + "import memconfig.cli.main, memconfig.cli.audit, memconfig.audit.aggregate, memconfig.audit.output\n"


def bare(path: Path) -> float:
    """The yardstick, in this process: every line read and parsed, nothing kept. CPU seconds."""
    loads = orjson.loads
    started = time.process_time()
    with open(path, "rb") as stream:
        for line in stream:
            loads(line)
    return time.process_time() - started


def audit_once(path: Path) -> tuple[float, Any]:
    """The audit's one pass over *path*, in this process: CPU seconds, and what it found."""
    from memconfig.audit.aggregate import Aggregator
    from memconfig.audit.inputs import line_pieces
    from memconfig.audit.model import InputSummary

    started = time.process_time()
    aggregator = Aggregator()
    with open(path, "rb") as stream:
        aggregator.feed(line_pieces(stream), InputSummary(str(path)))
    found = aggregator.finish()
    return time.process_time() - started, found


def child(code: str, *args: str) -> tuple[float, int]:
    """A fresh ``python -P -c CODE ARGS``, stdout to the null device: its CPU seconds, and the peak it printed (KiB)."""
    process = subprocess.Popen(
        [sys.executable, "-P", "-c", code, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{code!r} {args} failed: {err.decode(errors='replace')}")
    lines = err.split()
    return usage.ru_utime + usage.ru_stime, int(lines[-1]) if lines else 0


def _ratios(label: str, yardstick: list[float], measured: list[float]) -> float:
    """Print a row: the median ratio of the paired runs, its spread, best of each side. Returns the median."""
    ratios = [m / y for m, y in zip(measured, yardstick, strict=True)]
    median = statistics.median(ratios)
    print(
        f"{label}: bare {statistics.median(yardstick):.2f} s, audit {statistics.median(measured):.2f} s (medians); "
        f"ratio {median:.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}x; best of each "
        f"{min(measured) / min(yardstick):.2f}x; target <= {TARGET_RATIO:.1f}x)"
    )
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--manifests", action="store_true", help="each new block logs its prompt_manifest")
    parser.add_argument("--log", type=Path, help="write the log here and keep it (default: a temporary file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = args.log or Path(folder) / "memconfig.jsonl"
        written = generate(path, args.lines, manifests=args.manifests)
        print(f"log: {args.lines:,} lines, {written.bytes / 1e6:,.0f} MB, 4 hosts x 3 processes; {written.mix()}")
        print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
        child(BARE, str(path)), child(AUDIT, "audit", str(path), "--format", "json")  # warm-up: the page cache
        bares, audits, whole_bares, whole_audits, peaks = [], [], [], [], []
        found = None
        for _ in range(args.repeat):
            bares.append(bare(path))
            took, found = audit_once(path)
            audits.append(took)
            found = None  # freed before the children run
            whole_bares.append(child(BARE, str(path))[0])
            cpu, peak = child(AUDIT, "audit", str(path), "--format", "json")
            whole_audits.append(cpu)
            peaks.append(peak)
        _, found = audit_once(path)
        print(
            f"found: {found.lines.events:,} events, {found.renders_total:,} renders ({found.renders_failed:,} failed), "
            f"{len(found.sources)} sources"
        )
        in_process = _ratios("in process", bares, audits)
        print(f"  audit {statistics.median(audits) / args.lines * 1e6:.2f} µs/line")
        whole = _ratios("whole process", whole_bares, whole_audits)
        floor = child(IMPORTS)[1]
        high = max(peaks)
        print(
            f"peak memory of `memconfig audit --format json` (VmHWM): {high / 1024:.0f} MB "
            f"(imports alone: {floor / 1024:.0f} MB; target < {TARGET_PEAK_MB} MB)"
        )
        ok = in_process <= TARGET_RATIO and whole <= TARGET_RATIO and high / 1024 < TARGET_PEAK_MB
        print("within targets" if ok else "OUTSIDE TARGETS")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
