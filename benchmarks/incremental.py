#!/usr/bin/env python
"""Incremental renders: a turn after a one-file edit costs what changed, at 200, 2,000 and 10,000 sources.

    python benchmarks/incremental.py               # about 2 minutes
    python benchmarks/incremental.py --quick
    python benchmarks/incremental.py --sizes 200,2000

Rows (issue 18), for each size N, over N local ~4 KB files:

  edit_watch_N        one file edited (os.replace), the next render that holds it, policy watch, watcher
                      armed  vs  reading that file + joining the N sections + hashing the block    <= 3x
  edit_revalidate_N   the same under revalidate  vs  an os.stat loop over the N files + that read +
                      the join + the hash                                                          <= 1.5x
  unchanged_watch_N   an unchanged turn under watch  vs  the same at 200 sources (flat)            <= 2x
  unchanged_vs_deepagents_200   an unchanged turn at 200 sources (policy once, the caller's system
                      prompt given)  vs  deepagents' per-call _format_agent_memory + join    >= 200x faster

An edit writes new text to one file (a different file each repetition, its size kept) and
renames it into place, as an editor saves; under watch the renders before the watcher has
seen it are unchanged turns and are not timed: the figure is the render whose block holds the
edit. Each pipeline has one edited turn untimed first (a pipeline keeps what it made of each
section from its second render on, as an agent's turns do). Timing as in benchmarks/run.py:
medians of repetitions, the two sides of a row taking
turns, garbage collected outside the timing, JSON logging configured as the CLI does and
written to os.devnull. Exit status: 0 when every row meets its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import SYSTEM, Row, config_for, deepagents_middleware, interleaved, make_files, make_text, markdown
from watch import armed

import memconfig
from memconfig import Pipeline
from memconfig.cli.logs import configure_cli_logging

SIZES = (200, 2000, 10_000)
HANG = 30.0  # seconds after which a wait is a hang, not a figure


class Edits:
    """Edits one file of *paths* per call, round robin, its text changed and its size kept; renamed into place."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.count = 0

    def __call__(self) -> tuple[str, str]:
        """The file edited and its new text."""
        self.count += 1
        path = self.paths[(self.count * 7919) % len(self.paths)]
        base = make_text(self.count)
        marker = f"edit {self.count}"
        text = marker + base[len(marker) :]
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
        return path, marker


def edited_render(pipeline: Pipeline, state: dict[str, Any], edits: Edits) -> Callable[[], float]:
    """One repetition: edit a file, then time the render whose block holds the edit (earlier ones untimed)."""

    def repetition() -> float:
        _, marker = edits()
        deadline = time.monotonic() + HANG
        while True:
            gc.collect()
            started = time.perf_counter()
            text = pipeline.render(SYSTEM, state)
            elapsed = time.perf_counter() - started
            if marker in text:
                return elapsed
            if time.monotonic() > deadline:
                raise RuntimeError(f"no render held {marker!r} within {HANG} s")
            time.sleep(0.001)

    return repetition


def read_join_hash(paths: list[str], edits: Edits, texts: list[str], stat_all: bool) -> Callable[[], float]:
    """The baseline of one repetition: (a stat of every file,) the edited file read, the block joined and hashed."""
    index = {p: i for i, p in enumerate(paths)}
    stat = os.stat

    def repetition() -> float:
        path, _ = edits()
        gc.collect()
        started = time.perf_counter()
        if stat_all:
            for p in paths:
                stat(p)
        with open(path, "rb") as stream:
            texts[index[path]] = stream.read().decode("utf-8")
        block = "\n\n".join(texts)
        hashlib.sha256(block.encode("utf-8")).hexdigest()
        return time.perf_counter() - started

    return repetition


def alternate(sides: list[Callable[[], float]], reps: int) -> list[list[float]]:
    """Each side's figure per repetition, the sides taking turns (drift hits both alike)."""
    out: list[list[float]] = [[] for _ in sides]
    for _ in range(reps):
        for side, figures in zip(sides, out, strict=True):
            figures.append(side())
    return out


def rows_at(root: Path, n: int, reps: int) -> tuple[list[Row], Callable[[], Any]]:
    """The edit rows at *n* sources, and an unchanged watch turn there (for the flat row)."""
    paths = make_files(root / f"n{n}", n)
    texts = [Path(p).read_text(encoding="utf-8") for p in paths]
    watch = Pipeline.from_config(config_for(paths, "watch"))
    revalidate = Pipeline.from_config(config_for(paths, "revalidate"))
    watch_state: dict[str, Any] = {}
    revalidate_state: dict[str, Any] = {}
    armed(watch, watch_state)
    revalidate.render(SYSTEM, revalidate_state)
    edits = Edits(paths)
    # One edited turn each, untimed: a pipeline keeps what it made of each section from its second render on
    # (memconfig/held.py), as an agent's turns after its first do.
    edited_render(watch, watch_state, edits)()
    edited_render(revalidate, revalidate_state, edits)()
    watch_edit, read_edit = alternate(
        [edited_render(watch, watch_state, edits), read_join_hash(paths, edits, texts, stat_all=False)], reps
    )
    revalidate_edit, stat_edit = alternate(
        [edited_render(revalidate, revalidate_state, edits), read_join_hash(paths, edits, texts, stat_all=True)], reps
    )
    rows = [
        Row(
            f"edit_watch_{n}",
            f"one edited file, the next render, watch, {n:,} sources",
            statistics.median(watch_edit),
            statistics.median(read_edit),
            "read + join + hash",
            "le:3",
        ),
        Row(
            f"edit_revalidate_{n}",
            f"one edited file, the next render, revalidate, {n:,} sources",
            statistics.median(revalidate_edit),
            statistics.median(stat_edit),
            "stat loop + read + join + hash",
            "le:1.5",
        ),
    ]
    return rows, lambda: watch.render(SYSTEM, watch_state)


def unchanged_vs_deepagents(root: Path, reps: int) -> Row:
    """An unchanged turn at 200 sources vs deepagents' per-call formatting of the same contents."""
    paths = make_files(root / "deepagents", 200)
    pipeline = Pipeline.from_config(config_for(paths, "once"))
    state: dict[str, Any] = {}
    first = pipeline.render(SYSTEM, state)
    mw = deepagents_middleware(paths)
    contents = mw.before_agent(state={}, runtime=None, config=None)["memory_contents"]

    def deepagents_turn() -> str:
        return str(SYSTEM + "\n\n" + mw._format_agent_memory(contents, mw.system_prompt))

    assert deepagents_turn() == first, "memconfig's and deepagents' prompts differ"
    ours, theirs = interleaved(
        [lambda: pipeline.render(SYSTEM, state), deepagents_turn], reps, warmup=20, batches=[2000, 50]
    )
    return Row(
        "unchanged_vs_deepagents_200",
        "an unchanged turn, 200 sources, once, vs deepagents _format_agent_memory + join",
        statistics.median(ours),
        statistics.median(theirs),
        "deepagents fmt",
        "speedup:200",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="source counts, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    reps = 5 if args.quick else 15
    devnull = open(os.devnull, "wb", buffering=0)  # noqa: SIM115 - binary, unbuffered: as the CLI opens its log file
    configure_cli_logging("json", "info", devnull)
    print(f"memconfig {memconfig.__version__} ({Path(memconfig.__file__).parent}) · sizes {sizes}", flush=True)
    rows: list[Row] = []
    unchanged: dict[int, Callable[[], Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in sizes:
            found, unchanged[n] = rows_at(root, n, reps)
            rows += found
            print("\n".join(markdown(found).splitlines()[2:]), flush=True)
        smallest = min(sizes)
        for n in sizes:
            if n == smallest:
                continue
            large, small = interleaved([unchanged[n], unchanged[smallest]], reps, warmup=20, batches=[2000, 2000])
            rows.append(
                Row(
                    f"unchanged_watch_{n}",
                    f"an unchanged turn, watch, {n:,} sources vs {smallest:,}",
                    statistics.median(large),
                    statistics.median(small),
                    f"watch@{smallest:,}",
                    "le:2",
                )
            )
        rows.append(unchanged_vs_deepagents(root, reps))
    print()
    print(markdown(rows))
    return 0 if all(r.verdict != "FAIL" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
