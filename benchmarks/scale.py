#!/usr/bin/env python
"""A cold start at every size: 20 to 10,000 local files, each side in a fresh process, validation counted.

    PYTHONPATH=. python benchmarks/scale.py                      # 20, 200, 2,000, 10,000; 7 runs each
    PYTHONPATH=. python benchmarks/scale.py --sizes 20,200 --runs 11
    PYTHONPATH=. python benchmarks/scale.py --profile 10000      # cProfile of memconfig's side, to stderr

What a fresh agent process does before its first model call, timed in that
process after its imports (each side's imports are its own, and not counted):

* memconfig: ``Config.from_mapping`` of the config (pydantic validation and
  the checks on disk), ``Pipeline.from_config`` and the first render into a
  new state, with JSON logging configured as the CLI does (to the null
  device): every source logs its line;
* fsspec: ``LocalFileSystem().cat_file(path)`` for each path, the bytes alone
  (the floor: any loader reads the files);
* deepagents: its ``MemoryMiddleware`` built over a ``FilesystemBackend``,
  ``before_agent`` (which reads every file) and the formatting of the block,
  with memconfig's deepagents template, so both build the same text (checked:
  the two prompts must be byte-identical).

The paths are handed over as a list in memory (a config's ``sources`` as
memconfig reads it from YAML; the paths deepagents' caller passes). Each run
starts three processes, one per side, taking turns; the figure is the median
over the runs, with the spread (min-max). Memory: the process's resident set
after the render, with what it built kept alive (the pipeline and its state,
the middleware and its state update, the prompt) and garbage collected,
minus the resident set before it; and the peak (``VmHWM``) minus the same.

Targets (issue 21): memconfig at most 2x fsspec and faster than deepagents at
every size; its cost per source at 10,000 within 1.1x of that at 2,000; at
10,000 sources it holds no more than deepagents. Exit status 0 when all are met.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES = (20, 200, 2000, 10_000)
SIDES = ("memconfig", "fsspec", "deepagents")


def _rss() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak() -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM:")).split()[1]) * 1024


def _reset_peak() -> None:
    """Let VmHWM start from now (Linux 4.0+: writing 5 to clear_refs), so the peak is the work's, not the imports'."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def child(side: str, listing: Path, template: Path | None, profile: bool) -> None:
    """One side, in this fresh process: imports, then the timed work; prints one JSON line of figures."""
    import gc

    paths = json.loads(listing.read_text())
    if side == "memconfig":
        from memconfig import Config, Pipeline
        from memconfig.cli.logs import configure_cli_logging

        devnull = open(os.devnull, "wb", buffering=0)  # noqa: SIM115 - as the CLI opens its log file
        configure_cli_logging("json", "info", devnull)
        data = {"version": 1, "sources": paths, "formatter": {"preset": "deepagents"}}

        def work() -> tuple[str, Any]:
            state: dict[str, Any] = {}
            pipeline = Pipeline.from_config(Config.from_mapping(data))
            return pipeline.render(state=state), (pipeline, state)

    elif side == "fsspec":
        from fsspec.implementations.local import LocalFileSystem

        def work() -> tuple[str, Any]:
            fs = LocalFileSystem()
            return "", [fs.cat_file(path) for path in paths]

    else:
        from deepagents.backends.filesystem import FilesystemBackend
        from deepagents.middleware.memory import MemoryMiddleware

        assert template is not None
        prompt = template.read_text()

        def work() -> tuple[str, Any]:
            middleware = MemoryMiddleware(backend=FilesystemBackend(root_dir="/"), sources=paths, system_prompt=prompt)
            update = middleware.before_agent(state={}, runtime=None, config=None)  # type: ignore[arg-type]
            text = middleware._format_agent_memory(update["memory_contents"], middleware.system_prompt)
            return text, (middleware, update)

    gc.collect()
    before = _rss()
    _reset_peak()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    started, cpu = time.perf_counter(), time.process_time()
    text, kept = work()
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    if profile:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    peak = _peak()
    gc.collect()
    held = _rss()
    assert kept is not None  # what the work built, alive until its memory is read
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(json.dumps({"seconds": took, "cpu": cpu, "held": held - before, "peak": peak - before, "text": digest}))


def run_child(side: str, listing: Path, template: Path, profile: bool = False) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", side, str(listing), str(template)]
    if profile:
        argv.append("--profiled")
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"the {side} side failed:\n{done.stderr}")
    if profile:
        sys.stderr.write(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 0.1 else f"{seconds * 1000:,.0f} ms"


def spread(values: list[float]) -> str:
    return f"{min(values) * 1000:,.2f}-{max(values) * 1000:,.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated source counts")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per side and size (default 7)")
    parser.add_argument("--profile", type=int, metavar="N", help="profile memconfig's side at N sources, and stop")
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "LISTING", "TEMPLATE"), help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        side, listing, template = args.child
        child(side, Path(listing), Path(template), "--profiled" in rest)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import make_files  # the files run.py measures, and its deepagents template (the parent's alone)
    from run import template as layout

    sizes = [args.profile] if args.profile else [int(size) for size in args.sizes.split(",")]
    ok = True
    per_source: dict[int, float] = {}
    rows = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder) / "template.txt"
        template.write_text(layout())
        for count in sizes:
            listing = Path(folder) / f"paths-{count}.json"
            listing.write_text(json.dumps(make_files(Path(folder) / f"files-{count}", count)))
            if args.profile:
                run_child("memconfig", listing, template, profile=True)
                return 0
            for side in SIDES:  # warm-up: the page cache and the bytecode
                run_child(side, listing, template)
            found: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
            for _ in range(args.runs):
                for side in SIDES:
                    found[side].append(run_child(side, listing, template))
            same = found["memconfig"][0]["text"] == found["deepagents"][0]["text"]
            median = {side: statistics.median(r["seconds"] for r in found[side]) for side in SIDES}
            cpu = {side: statistics.median(r["cpu"] for r in found[side]) for side in SIDES}
            held = {side: statistics.median(r["held"] for r in found[side]) for side in SIDES}
            peak = {side: statistics.median(r["peak"] for r in found[side]) for side in SIDES}
            per_source[count] = median["memconfig"] / count
            vs_fsspec = median["memconfig"] / median["fsspec"]
            vs_deepagents = median["memconfig"] / median["deepagents"]
            ok = ok and same and vs_fsspec <= 2 and vs_deepagents < 1
            rows.append((count, median, found, vs_fsspec, vs_deepagents, held, peak, same))
            print(
                f"{count:>6,} sources: memconfig {fmt_ms(median['memconfig'])} · fsspec {fmt_ms(median['fsspec'])}"
                f" · deepagents {fmt_ms(median['deepagents'])} → {vs_fsspec:.2f}x fsspec, "
                f"{vs_deepagents:.2f}x deepagents{'' if same else '  [PROMPTS DIFFER]'}; CPU time: "
                f"{cpu['memconfig'] / cpu['fsspec']:.2f}x fsspec, "
                f"{cpu['memconfig'] / cpu['deepagents']:.2f}x deepagents",
                flush=True,
            )
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average at start {load[0]:.2f}")
    print(f"median of {args.runs} fresh processes per side, taking turns; spread min-max in ms\n")
    print("| sources | memconfig | fsspec `cat_file` | deepagents | vs fsspec (≤ 2x) | vs deepagents (< 1x) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for count, median, found, vs_fsspec, vs_deepagents, _, _, _ in rows:
        cells = [f"{fmt_ms(median[side])} ({spread([r['seconds'] for r in found[side]])})" for side in SIDES]
        print(f"| {count:,} | {' | '.join(cells)} | {vs_fsspec:.2f}x | {vs_deepagents:.2f}x |")
    print("\n| sources | held: memconfig · deepagents · fsspec | peak: memconfig · deepagents |")
    print("| ---: | ---: | ---: |")
    for count, _, _, _, _, held, peak, _ in rows:
        mib = {side: held[side] / 2**20 for side in SIDES}
        print(
            f"| {count:,} | {mib['memconfig']:.1f} · {mib['deepagents']:.1f} · {mib['fsspec']:.1f} MiB"
            f" | {peak['memconfig'] / 2**20:.1f} · {peak['deepagents'] / 2**20:.1f} MiB |"
        )
    if 2000 in per_source and 10_000 in per_source:
        growth = per_source[10_000] / per_source[2000]
        ok = ok and growth <= 1.1
        print(f"\ncost per source at 10,000 against 2,000: {growth:.2f}x (target ≤ 1.1x)")
    if 10_000 in per_source:
        last = rows[-1]
        ok = ok and last[5]["memconfig"] <= last[5]["deepagents"]
    print("within targets" if ok else "OUTSIDE TARGETS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
