"""A realistic load log for the audit's benchmarks: many hosts and processes, their renders interleaved.

    from auditlog import generate              # (benchmarks/ on sys.path, as the scripts here have it)
    written = generate(path, 1_000_000)        # 4 hosts x 3 processes, seed 10: the same bytes every time
    print(written.bytes, written.mix())

Each line is written as the CLI writes it (the same fields, in the same
order, then ``timestamp``, ``host`` and ``pid``). Every process serves one
config of twenty sources (a few in a bucket, two optional ones missing, one
cut by its budget) and renders turn after turn, as a long-lived agent does:

* most turns are **unchanged**: the memo serves the block again, and the
  turn logs only its ``prompt_built`` (``memo: true``);
* now and then someone edits a file (in a repository every host syncs):
  each process's next turn logs that one ``source_loaded`` (and the cut, when
  it is the file with a budget); a refresh from the bucket that times out is
  ``source_stale`` instead, tried again next turn;
* a new session builds a new pipeline in the same process: a **full** render,
  every source logged (loaded, skipped, cut);
* one render in fifty **fails** (a required file in the bucket cannot be
  read): its ``source_skipped`` and ``prompt_failed``;
* now and then a process is replaced (a deploy, a crash): a new pid, a new
  render-id prefix, and a full first render.

The processes' lines are interleaved one by one, as threads and hosts
writing to one collector leave them. The default rates give the mix the
issue measured: about 48 % ``prompt_built``, 44 % ``source_loaded``, the rest
skips, cuts, stale sources and failed renders. With ``manifests=True`` each new
block also logs its ``prompt_manifest`` (as the CLI does since manifests were added):
fewer, larger lines. Nothing here imports memconfig: other benchmarks (and other
versions of memconfig) can write the same log.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import orjson

__all__ = ["SOURCES", "Written", "generate"]

SOURCES = 20
MISSING = (17, 18)  # optional files that are not there: skipped (not_found) in every full render
CUT = 5  # the file with a budget of its own: cut whenever it is loaded
REQUIRED = 16  # a required file in the bucket: when it cannot be read, the render fails
#: Chances per render (of one process): a new session (a full render), a failed render, a file edited
#: somewhere (each process then loads it on its next turn), a refresh from the bucket timing out, a restart.
SESSION, FAILURE, EDIT, TIMEOUT, RESTART = 0.041, 0.02, 0.012, 0.1, 0.0005
START_NS = 1_764_576_000 * 1_000_000_000  # 2025-12-01T08:00:00Z


class Written(NamedTuple):
    """What :func:`generate` wrote: the file's size, and its lines by event."""

    bytes: int
    events: Counter[str]

    def mix(self) -> str:
        """The events' shares, largest first: ``48.1% prompt_built, 44.0% source_loaded, …``."""
        total = sum(self.events.values())
        return ", ".join(f"{n / total:.1%} {name}" for name, n in self.events.most_common())


def _timestamp(ns: int) -> str:
    second, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)) + f".{rest // 1000:06d}Z"


def _key(i: int) -> str:
    return f"docs/rules/{i:02d}-guidelines.md"


def _url(i: int) -> str:
    return f"s3://team-memory/agents/{_key(i)}" if i % 4 == 0 else f"/srv/agent/{_key(i)}"


def _chars(version: int) -> int:
    return 800 + version % 4000


def _kept(i: int, version: int) -> int:
    """Its characters in the block: the cut file keeps its budget's worth."""
    return min(_chars(version), 1000) if i == CUT else _chars(version)


def _sha(version: int) -> str:
    return f"{version:016x}" * 4


class _Process:
    """One process of one host: its render-id prefix, the version of each file it last read, its pending lines."""

    def __init__(self, host: str, pid: int, rng: random.Random, manifests: bool) -> None:
        self.host, self.pid, self.rng, self.manifests = host, pid, rng, manifests
        self.prefix = f"{rng.getrandbits(48):012x}"
        self.renders = 0
        self.seen: list[int | None] = [None] * SOURCES  # None: not read in this session yet
        self.block: tuple[str, int] = ("", 0)  # the last block's sha256 and chars
        self.pending: list[dict[str, Any]] = []

    def next_render(self, versions: list[int]) -> None:
        rng = self.rng
        self.renders += 1
        render_id = f"{self.prefix}-{self.renders}"
        if self.renders == 1 or rng.random() < SESSION:
            self.seen = [None] * SOURCES
        elif rng.random() < FAILURE:
            self.seen[REQUIRED] = None  # not read: the next render reads it again
            self.pending = self._failed(render_id)
            return
        lines: list[dict[str, Any]] = []
        full = all(v is None for v in self.seen)
        stale: list[int] = []
        for i in range(SOURCES):
            if full and i in MISSING:
                lines.append(_skipped(i, "not_found", "no such file", False, render_id))
            elif i not in MISSING and self.seen[i] != versions[i]:
                if not full and i % 4 == 0 and rng.random() < TIMEOUT:
                    stale.append(i)  # tried again next turn
                    lines.append(_stale(i, self.seen[i], render_id))
                    continue
                self.seen[i] = versions[i]
                lines.append(_loaded(i, versions[i], "miss" if full else "refreshed", render_id))
                if i == CUT:
                    lines.append(_truncated(i, versions[i], render_id))
        changed = len(lines) - len(stale)
        if lines:
            chars = sum(_kept(i, v) for i, v in enumerate(self.seen) if v is not None)
            named = repr(self.seen).encode()
            self.block = (hashlib.sha256(named).hexdigest(), chars)
            if self.manifests:
                lines.append(_manifest(self.seen, stale, self.block, render_id))
        loaded = sum(1 for line in lines if line["event"] == "source_loaded")
        in_block = SOURCES - len(MISSING)
        lines.append(
            {
                "schema": 1, "sources_loaded": in_block, "sources_skipped": len(MISSING), "chars": self.block[1],
                "sha256": self.block[0], "memo": not lines, "cache_hits": 0 if full else in_block - changed,
                "revalidated": 0 if full else in_block, "refreshed": 0 if full else loaded, "stale": len(stale),
                "loaded": loaded if full else 0, "skipped": len(MISSING) if full else 0, "dropped": 0,
                "truncated": sum(1 for line in lines if line["event"] == "source_truncated"), "escaped": 0,
                "duration_ms": round(0.05 + rng.random() * (3 if lines else 0.1), 3), "render_id": render_id,
                "event": "prompt_built", "level": "info",
            }
        )  # fmt: skip
        self.pending = lines

    def _failed(self, render_id: str) -> list[dict[str, Any]]:
        detail = "remote store: 503 Service Unavailable"
        return [
            _skipped(REQUIRED, "remote_error", detail, True, render_id),
            {
                "schema": 1, "failures": [{"source": _key(REQUIRED), "name": _key(REQUIRED), "url": _url(REQUIRED),
                "reason": "remote_error", "detail": detail}], "sources_loaded": 17, "sources_skipped": 3,
                "duration_ms": round(5 + self.rng.random() * 20, 3), "render_id": render_id, "event": "prompt_failed",
                "level": "error",
            },
        ]  # fmt: skip


def _loaded(i: int, version: int, cache: str, render_id: str) -> dict[str, Any]:
    chars = _chars(version)
    return {
        "source": _key(i), "name": _key(i), "url": _url(i), "parent": None, "via": None, "bytes": chars,
        "chars": chars, "sha256": _sha(version), "duration_ms": 0.07, "cache": cache, "render_id": render_id,
        "event": "source_loaded", "level": "info",
    }  # fmt: skip


def _skipped(i: int, reason: str, detail: str, required: bool, render_id: str) -> dict[str, Any]:
    return {
        "source": _key(i), "name": _key(i), "url": _url(i), "parent": None, "via": None, "reason": reason,
        "detail": detail, "required": required, "duration_ms": 0.02, "render_id": render_id,
        "event": "source_skipped", "level": "warning" if required else "info",
    }  # fmt: skip


def _stale(i: int, version: int | None, render_id: str) -> dict[str, Any]:
    return {
        "source": _key(i), "name": _key(i), "url": _url(i), "reason": "timeout", "detail": "after 5 s",
        "sha256": None if version is None else _sha(version), "render_id": render_id, "event": "source_stale",
        "level": "warning",
    }  # fmt: skip


def _truncated(i: int, version: int, render_id: str) -> dict[str, Any]:
    return {
        "source": _key(i), "name": _key(i), "url": _url(i), "processor": "budgets", "budget": "source",
        "setting": f"sources[{i}].max_chars", "unit": "chars", "limit": 1000, "chars_before": _chars(version),
        "chars_after": 1000, "tokens_before": None, "tokens_after": None, "bytes_before": None, "bytes_after": None,
        "marker": True, "render_id": render_id, "event": "source_truncated", "level": "warning",
    }  # fmt: skip


def _manifest(seen: list[int | None], stale: list[int], block: tuple[str, int], render_id: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    for i, version in enumerate(seen):
        entry: dict[str, Any] = {"source": _key(i), "name": _key(i), "url": _url(i)}
        if version is None:
            entry.update(status="skipped", chars=None, sha256=None, reason="not_found", detail="no such file")
        else:
            entry.update(status="loaded", chars=_kept(i, version), sha256=_sha(version))
            if i in stale:
                entry.update(status="stale", reason="timeout", detail="after 5 s")
            if i == CUT:
                entry["cut"] = True
        entries.append(entry)
    return {
        "config": "5f0c2a9e4b7d1c36", "sha256": block[0], "chars": block[1], "sources": entries,
        "render_id": render_id, "event": "prompt_manifest", "level": "info",
    }  # fmt: skip


def generate(
    path: Path,
    lines: int,
    *,
    hosts: int = 4,
    processes: int = 3,
    seed: int = 10,
    manifests: bool = False,
    start_ns: int = START_NS,
) -> Written:
    """Write *lines* lines of *hosts* x *processes* processes' renders, interleaved, to *path*.

    The same arguments write the same bytes. *seed* also sets the render-id
    prefixes, so logs of different seeds are of different processes (several
    files of one fleet: one seed each, *start_ns* where the last one ended).
    """
    rng = random.Random(seed)
    versions = [rng.getrandbits(64) for _ in range(SOURCES)]
    names = [f"agent-{h:02d}" for h in range(hosts)]
    live = [_Process(host, 1000 + n, rng, manifests) for host in names for n in range(processes)]
    next_pid = 1000 + processes
    clock = start_ns
    events: Counter[str] = Counter()
    dumps = orjson.dumps
    with open(path, "wb") as out:
        for _ in range(lines):
            slot = rng.randrange(len(live))
            process = live[slot]
            if not process.pending:
                if process.renders and rng.random() < RESTART:
                    process = live[slot] = _Process(process.host, next_pid, rng, manifests)
                    next_pid += 1
                if rng.random() < EDIT:
                    changed = rng.randrange(SOURCES)
                    versions[changed] = rng.getrandbits(64)
                process.next_render(versions)
            event = process.pending.pop(0)
            clock += rng.randint(10_000_000, 2_000_000_000)  # 10 ms to 2 s: a month in 2.6 M lines
            event["timestamp"] = _timestamp(clock)
            event["host"], event["pid"] = process.host, process.pid
            events[event["event"]] += 1
            out.write(dumps(event) + b"\n")
    return Written(path.stat().st_size, events)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--processes", type=int, default=3, help="per host")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--manifests", action="store_true", help="a prompt_manifest for each new block")
    args = parser.parse_args()
    written = generate(
        args.path, args.lines, hosts=args.hosts, processes=args.processes, seed=args.seed, manifests=args.manifests
    )
    print(f"{args.path}: {args.lines:,} lines, {written.bytes / 1e6:,.1f} MB; {written.mix()}")
