#!/usr/bin/env python
"""memconfig benchmarks: each figure measured side by side with its baseline, in one run.

    python benchmarks/run.py                 # everything (about 20 s)
    python benchmarks/run.py --quick         # fewer repetitions
    python benchmarks/run.py --only NAME     # one benchmark (repeatable); see --list
    python benchmarks/run.py --only revalidate_turn --profile   # pyinstrument (or cProfile) on memconfig's side

Benchmarks (targets from issues 3 and 4):

  http_cold        50 HTTP sources (local aiohttp server, 50 ms per request), a new
                   Pipeline per repetition, policy once  vs  one GET      <= 3x
                   (plus the one-after-another figure; --concurrency N adds a row
                   with another loader.concurrency)
  local_cold       200 local ~4 KB files, a new Pipeline per repetition  vs  fsspec
                   LocalFileSystem.cat(paths)  <= 2x;  vs  deepagents MemoryMiddleware
                   load + format  must be faster
  once_turn        per-turn render, 200 unchanged local sources, policy once  vs
                   deepagents' per-call _format_agent_memory  >= 50x faster
  revalidate_turn  the same under revalidate  vs  an os.stat loop over the files  <= 3x
  http_revalidate  per-turn render, 50 unchanged HTTP sources (ETag + Last-Modified),
                   policy revalidate  vs  one GET  <= 3x

Timing: time.perf_counter; the figure shown is the median of N repetitions (for the
per-turn micro-benchmarks, each repetition is a batch of calls, divided by the batch
size). Both sides get the same warm-up; the local benchmarks take turns, one
repetition of each side after the other, so load from elsewhere hits both alike. "Cold" renders run on pipelines built
beforehand (an agent builds its pipeline once, at start), each with an empty state.
JSON logging is configured exactly as the CLI does
(memconfig.events.configure_cli_logging), writing to os.devnull. memconfig and
deepagents are given the same template, and their prompts are checked to be identical.
Exit status: 0 when every target passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import platform
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

import memconfig
from memconfig import Pipeline
from memconfig.config import Config
from memconfig.events import configure_cli_logging
from memconfig.presets import PRESETS

N_HTTP = 50
N_LOCAL = 200
FILE_BYTES = 4096
LATENCY = 0.050  # seconds the server waits before answering each request


# -- timing ---------------------------------------------------------------------


def sample(fn: Callable[[], Any], reps: int, *, warmup: int = 1, batch: int = 1) -> list[float]:
    """Seconds per call of *fn*: one figure per repetition (a batch of calls, averaged)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        out.append((time.perf_counter() - start) / batch)
    return out


def interleaved(
    fns: list[Callable[[], Any]], reps: int, *, warmup: int = 1, batches: list[int] | None = None
) -> list[list[float]]:
    """:func:`sample` for several functions, taking turns each repetition.

    On a shared machine the load drifts; measuring the two sides in alternation
    lets drift hit both alike, so their ratio holds where separate runs would not.
    """
    batches = batches or [1] * len(fns)
    for fn in fns:
        for _ in range(warmup):
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for fn, batch, times in zip(fns, batches, out, strict=True):
            start = time.perf_counter()
            for _ in range(batch):
                fn()
            times.append((time.perf_counter() - start) / batch)
    return out


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


@dataclass
class Row:
    name: str
    what: str
    memconfig: float
    baseline: float
    baseline_label: str
    target: str  # "le:3" (ratio <= 3), "lt:1" (faster), "speedup:50" (baseline/memconfig >= 50), "" (context)

    @property
    def ratio(self) -> float:
        return self.memconfig / self.baseline

    @property
    def ratio_text(self) -> str:
        r = self.ratio
        text = f"{r:.2f}x"
        if r < 1:
            text += f" ({1 / r:.1f}x faster)"
        return text

    @property
    def target_text(self) -> str:
        kind, _, value = self.target.partition(":")
        return {"le": f"<= {value}x", "lt": "< 1x (faster)", "speedup": f">= {value}x faster", "": "(context)"}[kind]

    @property
    def verdict(self) -> str:
        kind, _, value = self.target.partition(":")
        if not kind:
            return "-"
        ok = {
            "le": lambda: self.ratio <= float(value),
            "lt": lambda: self.ratio < 1,
            "speedup": lambda: self.baseline / self.memconfig >= float(value),
        }[kind]()
        return "PASS" if ok else "FAIL"


def cold_renders(config: Config, count: int) -> Callable[[], str]:
    """A cold render per call: each on its own pipeline, built beforehand.

    Building a pipeline (parsing the config, resolving sources) happens once
    when an agent starts, not per render, so it is left out of the timing.
    Only as many calls as *count* are possible.
    """
    pipelines = iter([Pipeline.from_config(config) for _ in range(count)])
    return lambda: next(pipelines).render()


# -- fixtures -------------------------------------------------------------------


def make_text(i: int, size: int = FILE_BYTES) -> str:
    head = f"# Memory file {i}\n\n"
    line = f"- rule {i}: keep functions short, name things plainly, test the edge cases.\n"
    body = (line * (size // len(line) + 1))[: size - len(head) - 1]
    return head + body + "\n"


def make_files(root: Path) -> list[str]:
    paths = []
    for i in range(N_LOCAL):
        p = root / f"mem_{i:03d}.md"
        p.write_text(make_text(i), encoding="utf-8")
        paths.append(str(p))
    return paths


class SlowServer:
    """An aiohttp server on 127.0.0.1 in its own thread; every request waits LATENCY first."""

    def __init__(self, n: int) -> None:
        self.bodies = {f"/mem_{i:03d}.md": make_text(i).encode() for i in range(n)}
        self.last_modified = formatdate(time.time() - 3600, usegmt=True)
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bench-http", daemon=True)
        self._runner: Any = None
        self.port = 0

    def __enter__(self) -> SlowServer:
        from aiohttp import web

        async def handle(request: web.Request) -> web.StreamResponse:
            self.requests += 1
            await asyncio.sleep(LATENCY)
            body = self.bodies.get(request.path)
            if body is None:
                return web.Response(status=404)
            headers = {"ETag": f'"{hash(body) & 0xFFFFFFFF:08x}"', "Last-Modified": self.last_modified}
            if request.method == "HEAD":
                headers["Content-Length"] = str(len(body))
                return web.Response(headers=headers)
            return web.Response(body=body, headers=headers, content_type="text/markdown")

        async def start() -> None:
            app = web.Application()
            app.router.add_get("/{name}", handle)  # also answers HEAD
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        self._thread.start()
        asyncio.run_coroutine_threadsafe(start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{self.port}{p}" for p in self.bodies]


def config_for(urls: list[str], policy: str, concurrency: int | None = None) -> Config:
    data: dict[str, Any] = {
        "version": 1,
        "sources": list(urls),
        "cache": {"policy": policy},
        "formatter": {"preset": "deepagents"},
        "logging": {"format": "json"},
    }
    if concurrency is not None:
        data["loader"] = {"concurrency": concurrency}
    return Config.from_mapping(data)


def one_get(fs: Any, url: str) -> Callable[[], bytes]:
    return lambda: fs.cat_file(url)


def deepagents_middleware(paths: list[str]) -> Any:
    from deepagents.backends.filesystem import FilesystemBackend
    from deepagents.middleware.memory import MemoryMiddleware

    # The same layout as memconfig's deepagents preset (same template), so both build the same text.
    return MemoryMiddleware(
        backend=FilesystemBackend(root_dir="/"), sources=list(paths), system_prompt=PRESETS["deepagents"].template
    )


# -- benchmarks -------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="memconfig-bench-")
        self.paths = make_files(Path(self.tmp.name))
        self.profiles: dict[str, Callable[[], Any]] = {}

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(
            f"  {row.name:<26} memconfig {fmt_time(row.memconfig):>9} | {row.baseline_label:<14} "
            f"{fmt_time(row.baseline):>9} | {row.ratio_text:<21} {row.target_text:<16} {row.verdict}",
            flush=True,
        )

    # 1 ---------------------------------------------------------------------------
    def http_baseline(self, server: SlowServer) -> tuple[list[str], Any, int, list[float]]:
        """The server's URLs, an HTTP filesystem, the repetitions, and the times of one GET (the baseline)."""
        urls = server.urls()
        http = fsspec.filesystem("http")
        reps = self.reps(7, 3)
        return urls, http, reps, sample(one_get(http, urls[0]), reps, warmup=2)

    def http_cold(self, server: SlowServer) -> None:
        urls, http, reps, get = self.http_baseline(server)
        for concurrency in self.concurrencies():
            config = config_for(urls, "once", concurrency)

            cold = cold_renders(config, reps + 2)

            prompt = cold()
            assert prompt.count("# Memory file") == N_HTTP, "not every HTTP source loaded"
            mc = sample(cold, reps, warmup=1)
            label = self.concurrency_label(concurrency, config)
            self.add(
                Row(
                    "http_cold" + label[0],
                    f"50 HTTP sources, cold load (fresh Pipeline, once, {label[1]})",
                    statistics.median(mc),
                    statistics.median(get),
                    "1 GET",
                    "le:3",
                )
            )
            self.profiles["http_cold" + label[0]] = cold
        seq = sample(lambda: [http.cat_file(u) for u in urls], 1 if self.quick else 2, warmup=0)
        self.add(
            Row(
                "http_sequential",
                "50 HTTP sources fetched one after another (context: what the reference does)",
                statistics.median(seq),
                statistics.median(get),
                "1 GET",
                "",
            )
        )

    def concurrencies(self) -> list[int | None]:
        """memconfig's default loader.concurrency, and any other asked for with --concurrency."""
        return [None] + ([self.args.concurrency] if self.args.concurrency else [])

    @staticmethod
    def concurrency_label(concurrency: int | None, config: Config) -> tuple[str, str]:
        """(name suffix, description) of a row run with *concurrency* (None: memconfig's default)."""
        if concurrency is None:
            return "", f"default loader.concurrency={config.loader.concurrency}"
        return f"_c{concurrency}", f"loader.concurrency: {concurrency}"

    # 2 ---------------------------------------------------------------------------
    def local_cold(self) -> None:
        paths = self.paths
        config = config_for(paths, "once")
        local = LocalFileSystem()
        mw = deepagents_middleware(paths)
        reps = self.reps(25, 7)

        cold = cold_renders(config, reps + 4)

        def fsspec_cat() -> dict[str, bytes]:
            return local.cat(paths)

        def deepagents_cold() -> str:
            update = mw.before_agent(state={}, runtime=None, config=None)
            return mw._format_agent_memory(update["memory_contents"], mw.system_prompt)

        same = cold() == deepagents_cold()
        if not same:
            self.notes.append("local_cold: memconfig's and deepagents' prompts DIFFER (layout check failed)")
        cat, mc, da = interleaved([fsspec_cat, cold, deepagents_cold], reps, warmup=3)
        self.add(
            Row(
                "local_cold_vs_fsspec",
                "200 local 4 KB files, cold render (fresh Pipeline, JSON log)",
                statistics.median(mc),
                statistics.median(cat),
                "fs.cat",
                "le:2",
            )
        )
        self.add(
            Row(
                "local_cold_vs_deepagents",
                "same, vs deepagents MemoryMiddleware before_agent + format" + ("" if same else " [OUTPUT DIFFERS]"),
                statistics.median(mc),
                statistics.median(da),
                "deepagents",
                "lt:1",
            )
        )
        self.profiles["local_cold"] = cold

    # 3 ---------------------------------------------------------------------------
    def once_turn(self) -> None:
        self._local_turn("once", "once_turn")

    # 4 ---------------------------------------------------------------------------
    def revalidate_turn(self) -> None:
        self._local_turn("revalidate", "revalidate_turn")

    def _local_turn(self, policy: str, name: str) -> None:
        paths = self.paths
        pipeline = Pipeline.from_config(config_for(paths, policy))
        state: dict[str, Any] = {}
        first = pipeline.render(state=state)
        assert first.count("# Memory file") == N_LOCAL

        def turn() -> str:
            return pipeline.render(state=state)

        if policy == "once":
            mw = deepagents_middleware(paths)
            contents = mw.before_agent(state={}, runtime=None, config=None)["memory_contents"]
            assert mw._format_agent_memory(contents, mw.system_prompt) == first

            def baseline() -> str:
                return mw._format_agent_memory(contents, mw.system_prompt)

            batch_mc, batch_base, reps = 2000, 50, self.reps(15, 5)
            label, target = "deepagents fmt", "speedup:50"
            what = "per-turn render, 200 unchanged local sources, once, vs deepagents _format_agent_memory"
        else:
            stat = os.stat

            def baseline() -> None:
                for p in paths:
                    stat(p)

            batch_mc, batch_base, reps = 20, 50, self.reps(15, 5)
            label, target = "os.stat loop", "le:3"
            what = "per-turn render, 200 unchanged local sources, revalidate, vs os.stat x200"
        for _ in range(20):
            turn()
        base, mc = interleaved([baseline, turn], reps, warmup=2, batches=[batch_base, batch_mc])
        assert turn() == first
        self.add(Row(name, what, statistics.median(mc), statistics.median(base), label, target))
        self.profiles[name] = turn

    # 5 ---------------------------------------------------------------------------
    def http_revalidate(self, server: SlowServer) -> None:
        urls, _, reps, get = self.http_baseline(server)
        for concurrency in self.concurrencies():
            config = config_for(urls, "revalidate", concurrency)
            pipeline = Pipeline.from_config(config)
            state: dict[str, Any] = {}
            first = pipeline.render(state=state)
            assert first.count("# Memory file") == N_HTTP

            def turn(pipeline: Pipeline = pipeline, state: dict[str, Any] = state) -> str:
                return pipeline.render(state=state)

            before = server.requests
            mc = sample(turn, reps, warmup=1)
            per_turn = (server.requests - before) / (reps + 1)
            assert turn() == first
            label = self.concurrency_label(concurrency, config)
            self.add(
                Row(
                    "http_revalidate" + label[0],
                    f"per-turn render, 50 unchanged HTTP sources, revalidate "
                    f"({label[1]}, {per_turn:.0f} requests/turn)",
                    statistics.median(mc),
                    statistics.median(get),
                    "1 GET",
                    "le:3",
                )
            )
            self.profiles["http_revalidate" + label[0]] = turn


NAMES = ("http_cold", "local_cold", "once_turn", "revalidate_turn", "http_revalidate")
HTTP = {"http_cold", "http_revalidate"}


def markdown(rows: list[Row]) -> str:
    out = [
        "| benchmark | memconfig | baseline | ratio (memconfig / baseline) | target | result |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r.name}`: {r.what} | {fmt_time(r.memconfig)} | {fmt_time(r.baseline)} ({r.baseline_label}) "
            f"| {r.ratio_text} | {r.target_text} | {r.verdict} |"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=NAMES, metavar="NAME", help=f"one of {', '.join(NAMES)}")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="also run the HTTP rows with this loader.concurrency (the default rows use memconfig's)",
    )
    parser.add_argument("--profile", action="store_true", help="after measuring, cProfile memconfig's side of each run")
    parser.add_argument("--list", action="store_true", help="list the benchmark names")
    args = parser.parse_args()
    if args.list:
        print("\n".join(NAMES))
        return 0
    chosen = [n for n in NAMES if not args.only or n in args.only]

    devnull = open(os.devnull, "wb")  # noqa: SIM115 - binary, as the CLI opens its JSON log
    configure_cli_logging("json", "info", devnull)  # as the CLI does, with logging.format: json

    started = time.perf_counter()
    bench = Bench(args)
    print(
        f"memconfig {memconfig.__version__} · Python {platform.python_version()} · {platform.machine()} · "
        f"{os.cpu_count()} CPUs · {'quick' if args.quick else 'full'} run",
        flush=True,
    )
    try:
        server_needed = any(n in HTTP for n in chosen)
        server = SlowServer(N_HTTP).__enter__() if server_needed else None
        try:
            for name in chosen:
                fn = getattr(bench, name)
                try:
                    fn(server) if name in HTTP else fn()
                except Exception as exc:  # one broken benchmark must not hide the others' figures
                    bench.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    print(f"  {name:<26} ERROR {type(exc).__name__}: {exc}", flush=True)
            if args.profile:
                profile(bench)
        finally:
            if server is not None:
                server.__exit__(None, None, None)
    finally:
        bench.tmp.cleanup()

    print()
    width = max(len(r.name) for r in bench.rows)
    head = (
        f"{'benchmark':<{width}}  {'memconfig':>10}  {'baseline':>10}  {'(baseline is)':<15}  "
        f"{'ratio':<22}  {'target':<16}  result"
    )
    print(head)
    print("-" * len(head))
    for r in bench.rows:
        print(
            f"{r.name:<{width}}  {fmt_time(r.memconfig):>10}  {fmt_time(r.baseline):>10}  {r.baseline_label:<15}  "
            f"{r.ratio_text:<22}  {r.target_text:<16}  {r.verdict}"
        )
    for note in bench.notes:
        print("NOTE:", note)
    for error in bench.errors:
        print("ERROR:", error)
    print(f"\n(total {time.perf_counter() - started:.1f} s)\n")
    print("Markdown:\n")
    print(markdown(bench.rows))
    print(
        f"\n_Measured with `python benchmarks/run.py{' --quick' if args.quick else ''}` on Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs; medians of N repetitions, side by side in one run._"
    )
    devnull.close()
    return 1 if bench.errors or any(r.verdict == "FAIL" for r in bench.rows) else 0


def profile(bench: Bench) -> None:
    """Profile memconfig's side of every benchmark run; the report goes to stderr.

    Uses pyinstrument (a sampling profiler, little overhead) when installed, else cProfile.
    """
    try:
        from pyinstrument import Profiler
    except ImportError:
        Profiler = None
    for name, fn in bench.profiles.items():
        seconds = 2.0 if name.startswith("http") else 3.0
        calls, deadline = 0, time.perf_counter() + seconds
        print(f"\n==== profile: {name} ====", file=sys.stderr)
        if Profiler is not None:
            profiler = Profiler(interval=0.0002)
            profiler.start()
            while time.perf_counter() < deadline:
                fn()
                calls += 1
            profiler.stop()
            print(f"({calls} calls)", file=sys.stderr)
            print(profiler.output_text(unicode=True, color=False, show_all=False, short_mode=False), file=sys.stderr)
        else:
            prof = cProfile.Profile()
            prof.enable()
            while time.perf_counter() < deadline:
                fn()
                calls += 1
            prof.disable()
            print(f"({calls} calls)", file=sys.stderr)
            stats = pstats.Stats(prof, stream=sys.stderr)
            stats.sort_stats("tottime").print_stats(20)
            stats.sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    sys.exit(main())
