"""``memconfig audit`` over a million log lines: its one pass against a bare ``orjson.loads`` loop, and its peak memory.

The log is generated as the CLI writes it (the same fields, in the same
order, with ``host`` and ``pid``): four hosts, three processes each, their
renders interleaved line by line as threads and hosts writing at once would
leave them. A process's first render and some later ones log every source
(twenty: loaded, a few skipped, one cut by a budget, now and then a stale
one); the others log only the sources that changed, as a long-lived agent's
turns do, and every render ends in ``prompt_built`` (one in fifty in
``prompt_failed``).

The yardstick is ``for line in file: orjson.loads(line)`` over the same file
(reading and parsing, nothing kept); the audit reads the file with its own
bounded line splitter and builds the whole model. Each is timed best of
*--repeat* runs. Peak memory is the audit's, in a child process of its own,
from ``VmHWM`` in ``/proc/self/status``, with the child's peak after imports
alone for comparison.

    PYTHONPATH=. python benchmarks/audit.py [--lines 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HOSTS = ("agent-a", "agent-b", "agent-c", "agent-d")
SOURCES = 20
TARGET_RATIO = 3.0
TARGET_PEAK_MB = 300


def _timestamp(ns: int) -> str:
    second, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)) + f".{rest // 1000:06d}Z"


class _Process:
    def __init__(self, host: str, pid: int, prefix: str, rng: random.Random, versions: list[int]) -> None:
        self.host, self.pid, self.prefix, self.rng = host, pid, prefix, rng
        self.renders = 0
        self.pending: list[dict[str, Any]] = []
        self.versions = versions  # the files' contents, shared by every host (a repository synced to each)

    def next_render(self) -> None:
        rng = self.rng
        self.renders += 1
        render_id = f"{self.prefix}-{self.renders}"
        full = self.renders == 1 or rng.random() < 0.2
        lines: list[dict[str, Any]] = []
        changed = range(SOURCES) if full else rng.sample(range(SOURCES), rng.choice((0, 0, 1, 2, 3)))
        for i in changed:
            key = f"docs/rules/{i:02d}-guidelines.md"
            url = f"s3://team-memory/agents/{key}" if i % 4 == 0 else f"/srv/agent/{key}"
            if i in (17, 18):
                lines.append(
                    {
                        "source": key, "name": key, "url": url, "parent": None, "via": None,
                        "reason": "not_found", "detail": "no such file", "required": False,
                        "duration_ms": 0.02, "render_id": render_id, "event": "source_skipped", "level": "info",
                    }
                )  # fmt: skip
                continue
            if rng.random() < 0.02:  # someone edited the file
                self.versions[i] = rng.getrandbits(64)
            chars = 800 + (self.versions[i] % 4000)
            lines.append(
                {
                    "source": key, "name": key, "url": url, "parent": None, "via": None, "bytes": chars,
                    "chars": chars, "sha256": f"{self.versions[i]:016x}" * 4, "duration_ms": 0.07,
                    "cache": "miss" if full else "refreshed", "render_id": render_id, "event": "source_loaded",
                    "level": "info",
                }
            )  # fmt: skip
            if i == 5:
                lines.append(
                    {
                        "source": key, "name": key, "url": url, "processor": "budget", "budget": "source",
                        "setting": "max_chars", "unit": "chars", "limit": 1000, "chars_before": chars,
                        "chars_after": 1000, "tokens_before": None, "tokens_after": None,
                        "marker": "[truncated]", "render_id": render_id, "event": "source_truncated",
                        "level": "warning",
                    }
                )  # fmt: skip
            if i == 9 and rng.random() < 0.05:
                lines.append(
                    {
                        "source": key, "name": key, "url": url, "reason": "timeout", "detail": "after 5 s",
                        "sha256": f"{self.versions[i]:016x}" * 4, "render_id": render_id,
                        "event": "source_stale", "level": "warning",
                    }
                )  # fmt: skip
        if rng.random() < 0.02:
            lines.append(
                {
                    "schema": 1, "failures": [{"source": "docs/rules/17-guidelines.md", "reason": "not_found",
                    "detail": "no such file"}], "sources_loaded": 17, "sources_skipped": 3, "duration_ms": 3.1,
                    "render_id": render_id, "event": "prompt_failed", "level": "error",
                }
            )  # fmt: skip
        else:
            lines.append(
                {
                    "schema": 1, "sources_loaded": 18, "sources_skipped": 2, "chars": 41_230,
                    "sha256": f"{rng.getrandbits(64):016x}" * 4, "memo": not full,
                    "cache_hits": 0 if full else 18, "revalidated": 0, "refreshed": len(lines) - 1,
                    "stale": 0, "loaded": len(lines) - 1, "skipped": 0, "dropped": 0, "truncated": 1,
                    "escaped": 0, "duration_ms": 2.4, "render_id": render_id, "event": "prompt_built",
                    "level": "info",
                }
            )  # fmt: skip
        self.pending = lines


def generate(path: Path, count: int, seed: int = 10) -> int:
    """Write *count* lines of interleaved renders to *path*; returns its size in bytes."""
    rng = random.Random(seed)
    versions = [rng.getrandbits(64) for _ in range(SOURCES)]
    processes = [
        _Process(host, 1000 + n, f"{rng.getrandbits(48):012x}", rng, versions) for host in HOSTS for n in range(3)
    ]
    clock = 1_764_576_000 * 1_000_000_000  # 2025-12-01T08:00:00Z
    written = 0
    with open(path, "wb") as out:
        while written < count:
            process = rng.choice(processes)
            if not process.pending:
                process.next_render()
            event = process.pending.pop(0)
            clock += rng.randint(50_000, 5_000_000)
            event["timestamp"] = _timestamp(clock)
            event["host"], event["pid"] = process.host, process.pid
            out.write(orjson.dumps(event) + b"\n")
            written += 1
    return path.stat().st_size


def bare(path: Path) -> float:
    """The yardstick: every line read and parsed, nothing kept."""
    loads = orjson.loads
    started = time.process_time()
    with open(path, "rb") as stream:
        for line in stream:
            loads(line)
    return time.process_time() - started


def bare_in_memory(lines: list[bytes]) -> float:
    loads = orjson.loads
    started = time.process_time()
    for line in lines:
        loads(line)
    return time.process_time() - started


def audit_once(path: Path) -> tuple[float, Any]:
    from memconfig.audit.aggregate import Aggregator
    from memconfig.audit.inputs import line_pieces
    from memconfig.audit.model import InputSummary

    started = time.process_time()
    aggregator = Aggregator()
    with open(path, "rb") as stream:
        aggregator.feed(line_pieces(stream), InputSummary(str(path)))
    found = aggregator.finish()
    return time.process_time() - started, found


def _peak_kib() -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM:")).split()[1])


def child(path: Path, imports_only: bool) -> None:
    """Run in a child process: the audit (or only its imports), then print the peak resident memory in KiB."""
    from memconfig.cli import main

    if not imports_only:
        with open(os.devnull, "w") as devnull:
            sys.stdout = devnull
            code = main(["audit", str(path), "--format", "json"])
            sys.stdout = sys.__stdout__
        if code != 0:
            raise SystemExit(code)
    print(_peak_kib())


def peak(path: Path, imports_only: bool = False) -> int:
    flag = ["--imports-only"] if imports_only else []
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), *flag], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--imports-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.imports_only)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memconfig.jsonl"
        size = generate(path, args.lines)
        print(f"log: {args.lines:,} lines, {size / 1e6:,.0f} MB ({len(HOSTS)} hosts x 3 processes, interleaved)")
        # Alternated, best of each: on a shared machine, a slow moment then slows both alike.
        bares, ins, audits = [], [], []
        lines = path.read_bytes().splitlines()
        found = None
        for _ in range(args.repeat):
            bares.append(bare(path))
            ins.append(bare_in_memory(lines))
            took, found = audit_once(path)
            audits.append(took)
        del lines
        yardstick, in_memory, took = min(bares), min(ins), min(audits)
        print(
            f"found: {found.lines.events:,} events, {found.renders_total:,} renders ({found.renders_failed:,} failed), "
            f"{len(found.sources)} sources"
        )
        print(
            f"bare orjson.loads loop, reading the file: {yardstick:.2f} s ({yardstick / args.lines * 1e6:.2f} µs/line)"
        )
        print(f"bare orjson.loads loop, lines in memory:  {in_memory:.2f} s")
        print(f"audit, one pass:                          {took:.2f} s ({took / args.lines * 1e6:.2f} µs/line)")
        ratio = took / yardstick
        print(
            f"ratio audit / bare (file): {ratio:.2f}x (target <= {TARGET_RATIO:.0f}x); "
            f"vs in memory: {took / in_memory:.2f}x"
        )
        floor, high = peak(path, imports_only=True), peak(path)
        print(
            f"peak memory of `memconfig audit --format json` in a child (VmHWM): {high / 1024:.0f} MB "
            f"(imports alone: {floor / 1024:.0f} MB; target < {TARGET_PEAK_MB} MB)"
        )
        ok = ratio <= TARGET_RATIO and high / 1024 < TARGET_PEAK_MB
        print("within targets" if ok else "OUTSIDE TARGETS")


if __name__ == "__main__":
    main()
