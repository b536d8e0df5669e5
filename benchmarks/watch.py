#!/usr/bin/env python
"""The ``watch`` cache policy: an unchanged turn's cost does not grow with the sources; edits are seen fast.

    python benchmarks/watch.py            # about 30 s
    python benchmarks/watch.py --quick

Rows (issue 11):

  watch_turn_2000_vs_20    per-turn render, unchanged local ~4 KB files, policy watch, watcher armed:
                           at 2,000 sources  vs  at 20                                   <= 2x
  watch_vs_revalidate      the same 2,000 under watch  vs  under revalidate (a stat each) < 1x (faster)
  watch_fs_calls           file-system calls of 100 unchanged watch turns at 2,000 sources (open, stat,
                           lstat, listdir, scandir: audit hook + os.stat/os.lstat wrappers)      max 0
  render_watch_latency     ``memconfig render -o AGENTS.md --watch`` over 2,000 sources: from an edit
                           (os.replace of one source) to AGENTS.md holding it, median of N edits
                           vs  the 1 s the issue allows                                  <= 1x

Timing as in benchmarks/run.py: medians of repetitions, the two sides of a row taking turns
(``run.interleaved``), garbage collected outside the timing, JSON logging configured as the
CLI does and written to os.devnull. Exit status: 0 when every row meets its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import SYSTEM, Row, config_for, interleaved, make_files, markdown

from memconfig import Pipeline
from memconfig.cli.logs import configure_cli_logging

N_LARGE, N_SMALL = 2000, 20
EDITS = 10  # edits timed by render_watch_latency
HANG = 30.0  # seconds after which a wait is a hang, not a figure


class CountRow(Row):
    """A row whose figures are counts, not seconds."""

    def value_text(self, value: float) -> str:
        return f"{value:.0f} calls"

    @property
    def ratio_text(self) -> str:
        return f"{self.memconfig:.0f} of {self.baseline:.0f}"


def armed(pipeline: Pipeline, state: dict[str, Any]) -> None:
    """Render, wait for the watcher to be armed, render again (the whole check after arming)."""
    pipeline.render(SYSTEM, state)
    watching = pipeline.cache.watching  # type: ignore[attr-defined]
    deadline = time.monotonic() + HANG
    while not watching.armed:
        if time.monotonic() > deadline:
            raise RuntimeError("the watcher did not arm")
        time.sleep(0.01)
    pipeline.render(SYSTEM, state)


class FsCalls:
    """Counts this thread's file-system calls (audit hook for open/listdir/scandir; os.stat/os.lstat wrapped)."""

    EVENTS = frozenset({"open", "os.listdir", "os.scandir"})

    def __init__(self) -> None:
        self.count = 0
        self.on = False
        self.thread = threading.get_ident()
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.on and event in self.EVENTS and threading.get_ident() == self.thread:
            self.count += 1

    def during(self, fn: Any, times: int) -> int:
        real = os.stat, os.lstat

        def counted(real_fn: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                if self.on and threading.get_ident() == self.thread:
                    self.count += 1
                return real_fn(*args, **kwargs)

            return call

        os.stat, os.lstat = counted(real[0]), counted(real[1])  # type: ignore[assignment]
        self.count, self.on = 0, True
        try:
            for _ in range(times):
                fn()
        finally:
            self.on = False
            os.stat, os.lstat = real
        return self.count


def turns(root: Path, quick: bool) -> list[Row]:
    large_paths = make_files(root / "large", N_LARGE)
    small_paths = make_files(root / "small", N_SMALL)
    pipelines = {
        "large": Pipeline.from_config(config_for(large_paths, "watch")),
        "small": Pipeline.from_config(config_for(small_paths, "watch")),
        "revalidate": Pipeline.from_config(config_for(large_paths, "revalidate")),
    }
    states: dict[str, dict[str, Any]] = {name: {} for name in pipelines}
    for name in ("large", "small"):
        armed(pipelines[name], states[name])
    pipelines["revalidate"].render(SYSTEM, states["revalidate"])
    first = pipelines["large"].render(SYSTEM, states["large"])
    assert first == pipelines["revalidate"].render(SYSTEM, states["revalidate"])
    assert first.count("mem_") >= N_LARGE

    def turn(name: str) -> Any:
        pipeline, state = pipelines[name], states[name]
        return lambda: pipeline.render(SYSTEM, state)

    large, small, revalidate = turn("large"), turn("small"), turn("revalidate")
    reps = 5 if quick else 15
    watch_large, watch_small, checked = interleaved(
        [large, small, revalidate], reps, warmup=2, batches=[2000, 2000, 20]
    )
    calls = FsCalls().during(large, 100)
    assert large() == first
    return [
        Row(
            f"watch_turn_{N_LARGE}_vs_{N_SMALL}",
            f"per-turn render, unchanged local sources, watch: {N_LARGE} vs {N_SMALL}",
            statistics.median(watch_large),
            statistics.median(watch_small),
            f"watch@{N_SMALL}",
            "le:2",
        ),
        Row(
            "watch_vs_revalidate",
            f"per-turn render, {N_LARGE} unchanged local sources: watch vs revalidate",
            statistics.median(watch_large),
            statistics.median(checked),
            "revalidate",
            "lt:1",
        ),
        CountRow(
            "watch_fs_calls",
            f"file-system calls in 100 unchanged watch turns at {N_LARGE} sources",
            float(calls),
            float(N_LARGE * 100),
            "revalidate's",
            "max:0",
        ),
    ]


def latency(root: Path, quick: bool) -> Row:
    """From an edit to the output holding it, with ``render -o --watch`` running in its own process."""
    paths = make_files(root / "cli", N_LARGE)
    config = root / "cli.yaml"
    config.write_text(
        "version: 1\nsources:\n" + "".join(f"  - {p}\n" for p in paths) + "formatter: {preset: plain}\n",
        encoding="utf-8",
    )
    output = root / "AGENTS.md"
    command = [sys.executable, "-m", "memconfig", "render", "-c", str(config), "-o", str(output), "--watch"]
    process = subprocess.Popen([*command, "--log-file", os.devnull], stderr=subprocess.DEVNULL)
    figures = []
    try:
        wait_for(lambda: output.exists(), "the first write")
        time.sleep(1.0)  # armed (until then it checks every second: correct, but not the figure wanted)
        for i in range(3 if quick else EDITS):
            target = Path(paths[(i * 197) % N_LARGE])
            marker = f"edit number {i}"
            temporary = target.with_suffix(".tmp")
            temporary.write_text(marker + "\n", encoding="utf-8")
            started = time.perf_counter()
            os.replace(temporary, target)
            wait_for(lambda marker=marker: marker in output.read_text(encoding="utf-8"), marker)
            figures.append(time.perf_counter() - started)
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=HANG)
    return Row(
        "render_watch_latency",
        f"render -o AGENTS.md --watch over {N_LARGE} sources: an edit to the file holding it (median)",
        statistics.median(figures),
        1.0,
        "the 1 s allowed",
        "le:1",
    )


def wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + HANG
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {HANG} s: {what}")
        time.sleep(0.002)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    devnull = open(os.devnull, "wb", buffering=0)  # noqa: SIM115 - binary, unbuffered: as the CLI opens its log file
    configure_cli_logging("json", "info", devnull)
    with tempfile.TemporaryDirectory(prefix="memconfig-watch-bench-") as folder:
        root = Path(folder)
        rows = [*turns(root, args.quick), latency(root, args.quick)]
    devnull.close()
    for row in rows:
        print(
            f"{row.name:<26} {row.value_text(row.memconfig):>12} {row.value_text(row.baseline):>12} "
            f"({row.baseline_label:<15}) {row.ratio_text:<24} {row.target_text:<16} {row.verdict}"
        )
    print("\nMarkdown:\n")
    print(markdown(rows))
    return 1 if any(r.verdict == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
