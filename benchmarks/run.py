#!/usr/bin/env python
"""memconfig benchmarks: each figure measured side by side with its baseline, in one run.

    python benchmarks/run.py                 # everything (about 40 s)
    python benchmarks/run.py --quick         # fewer repetitions
    python benchmarks/run.py --only NAME     # one benchmark (repeatable); see --list
    python benchmarks/run.py --only revalidate_turn --profile   # pyinstrument (or cProfile) on memconfig's side

Benchmarks (targets from issues 3 and 4, and the architecture issue):

  http_cold        50 HTTP sources (local aiohttp server, 50 ms per request), a new
                   Pipeline per repetition, policy once  vs  one GET      <= 3x
                   (plus the one-after-another figure; --concurrency N adds a row
                   with another loader.concurrency)
  local_cold       200 local ~4 KB files, a new Pipeline per repetition  vs  fsspec
                   LocalFileSystem.cat(paths)  <= 2x;  vs  deepagents MemoryMiddleware
                   load + format  must be faster
  e2e_cold         end to end at 200 and at 2,000 local ~4 KB files: Pipeline.from_config
                   on an already-validated Config, plus the first render (empty state)
                   vs  LocalFileSystem().cat(paths)  <= 2x;  vs  deepagents (middleware
                   built, before_agent + format)  must be faster
  once_turn        per-turn render with the caller's system prompt, unchanged local
                   sources, policy once: at 200  vs  deepagents' per-call
                   _format_agent_memory (+ joining the system prompt)  >= 100x faster;
                   at 200  vs  at 20  <= 2x (the cost must not grow with prompt size)
  revalidate_turn  the same under revalidate  vs  an os.stat loop over the files  <= 3x
  http_revalidate  per-turn render, 50 unchanged HTTP sources (ETag + Last-Modified),
                   policy revalidate  vs  one GET  <= 3x
  glob_memory      a glob whose 50 matches are all replaced by 50 new names, 60 cycles,
                   a revalidate render after each: traced memory growth from cycle 10
                   to 60  <= 64 KiB  (baseline column: the same churn read by fsspec,
                   no memconfig)

Timing: time.perf_counter; the figure shown is the median of N repetitions (for the
per-turn micro-benchmarks, each repetition is a batch of calls, divided by the batch
size). Both sides get the same warm-up; the local benchmarks take turns, one
repetition of each side after the other, so load from elsewhere hits both alike. "Cold" renders run on pipelines built
beforehand (an agent builds its pipeline once, at start), each with an empty state;
e2e_cold times the building too (see Bench.e2e_cold). Memory (glob_memory) is
tracemalloc's current traced size after gc.collect(), see Bench.glob_memory.
JSON logging is configured exactly as the CLI does
(memconfig.cli.logs.configure_cli_logging), writing to os.devnull. memconfig and
deepagents are given the same template (memconfig's deepagents preset's, see
template()), and their prompts are checked to be identical. Only memconfig's public API is used (Pipeline.from_config,
Pipeline.render, Config.from_mapping, cli.logs.configure_cli_logging), so the same
script measures the code before and after a refactoring (PYTHONPATH=<tree>).
Exit status: 0 when every target passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
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

try:
    from memconfig.cli.logs import configure_cli_logging
except ImportError:  # memconfig before 0.2 (issue 7): the same script measures the code before a change
    from memconfig.events import configure_cli_logging  # type: ignore[attr-defined,no-redef]

N_HTTP = 50
N_LOCAL = 200
N_LARGE = 2000  # e2e_cold's second size
N_SMALL = 20  # once_turn's small size
N_GLOB = 50  # glob_memory: matches per cycle
GLOB_CYCLES, GLOB_FROM = 60, 10  # glob_memory: cycles run, and the cycle growth is measured from
GLOB_GROWTH_MAX = 64 * 1024  # glob_memory's target, bytes over GLOB_CYCLES - GLOB_FROM cycles
FILE_BYTES = 4096
# A caller's system prompt, passed (the same object) to every per-turn render.
SYSTEM = (
    "You are a careful coding agent working in the user's repository. Read before you edit, keep changes "
    "small and reviewed, run the tests you touch, and say plainly what you did not verify.\n"
) * 8
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
    Before each timed turn the garbage of the turns before is collected (outside
    the timing, as pyperf does), so no side pays for collecting another's cycles.
    """
    batches = batches or [1] * len(fns)
    for fn in fns:
        for _ in range(warmup):
            fn()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for fn, batch, times in zip(fns, batches, out, strict=True):
            gc.collect()
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


def fmt_bytes(n: float) -> str:
    sign, n = ("-" if n < 0 else ""), abs(n)
    if n >= 1024 * 1024:
        return f"{sign}{n / (1024 * 1024):.2f} MiB"
    if n >= 1024:
        return f"{sign}{n / 1024:.1f} KiB"
    return f"{sign}{n:.0f} B"


@dataclass
class Row:
    name: str
    what: str
    memconfig: float
    baseline: float
    baseline_label: str
    # "le:3" (ratio <= 3), "lt:1" (faster), "speedup:50" (baseline/memconfig >= 50),
    # "max:65536" (memconfig's own figure <= 65536, in its unit), "" (context)
    target: str
    unit: str = "s"  # "s" (seconds) or "B" (bytes)

    def value_text(self, value: float) -> str:
        return fmt_bytes(value) if self.unit == "B" else fmt_time(value)

    @property
    def ratio(self) -> float:
        return self.memconfig / self.baseline

    @property
    def ratio_text(self) -> str:
        if self.unit == "B":  # growth near zero has no meaningful ratio: the difference instead
            diff = self.memconfig - self.baseline
            return f"{'+' if diff >= 0 else ''}{fmt_bytes(diff)} vs baseline"
        r = self.ratio
        text = f"{r:.2f}x"
        if r < 1:
            text += f" ({1 / r:.1f}x faster)"
        return text

    @property
    def target_text(self) -> str:
        kind, _, value = self.target.partition(":")
        if kind == "max":
            return f"<= {self.value_text(float(value))}"
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
            "max": lambda: self.memconfig <= float(value),
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


def make_files(root: Path, n: int = N_LOCAL) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    width = max(3, len(str(n - 1)))
    paths = []
    for i in range(n):
        p = root / f"mem_{i:0{width}d}.md"
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


@functools.cache
def template() -> str:
    """memconfig's deepagents preset template, handed to deepagents so both build the same text.

    Found through the public API, so the benchmark runs on any version: a pipeline with no
    sources renders the template with the preset's empty text in its ``{agent_memory}`` slot.
    """
    empty = "(No memory loaded)"  # the preset's empty text, the same as deepagents'
    config = Config.from_mapping({"version": 1, "sources": [], "formatter": {"preset": "deepagents"}})
    text = Pipeline.from_config(config).render(state={})
    assert text.count(empty) == 1, "the deepagents preset's empty text is not where it was"
    return text.replace("{", "{{").replace("}", "}}").replace(empty, "{agent_memory}")


def config_for(urls: list[Any], policy: str, concurrency: int | None = None) -> Config:
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
    return MemoryMiddleware(backend=FilesystemBackend(root_dir="/"), sources=list(paths), system_prompt=template())


def deepagents_load_and_format(mw: Any) -> str:
    """What deepagents does for a first turn: load every source (before_agent), then format the block."""
    update = mw.before_agent(state={}, runtime=None, config=None)
    return mw._format_agent_memory(update["memory_contents"], mw.system_prompt)


def rss_bytes() -> int | None:
    """The process's resident set size now (Linux /proc), or None where that is not available."""
    try:
        with open("/proc/self/statm", "rb") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


# -- benchmarks -------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="memconfig-bench-")
        self.paths = make_files(Path(self.tmp.name) / "local")
        self.profiles: dict[str, Callable[[], Any]] = {}

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(
            f"  {row.name:<28} memconfig {row.value_text(row.memconfig):>9} | {row.baseline_label:<14} "
            f"{row.value_text(row.baseline):>9} | {row.ratio_text:<21} {row.target_text:<16} {row.verdict}",
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
            return deepagents_load_and_format(mw)

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
    def e2e_cold(self) -> None:
        """End to end, as at an agent's start: ``Pipeline.from_config(config)`` plus the first render.

        At 200 and at 2,000 local ~4 KB files. The config is validated beforehand
        (``Config.from_mapping``, outside the timing), and ``from_config`` is timed on that
        ``Config`` object: the issue's figure is "``Pipeline.from_config(...)`` plus the first
        render", and validating a mapping (pydantic) is the caller's one-off, as loading a YAML
        file is. Each repetition builds a fresh pipeline and renders with an empty state
        (``render(state={})``, no system prompt, so the result is the block alone).

        Baselines, taking turns with memconfig: ``LocalFileSystem().cat(paths)`` (the bytes
        alone) <= 2x; and deepagents end to end, building its MemoryMiddleware (as memconfig
        builds its pipeline; microseconds: it keeps the list), then before_agent + format
        (:func:`deepagents_load_and_format`, local_cold's helper): memconfig must be faster.
        memconfig's prompt is checked to equal deepagents'.
        """
        for n in (N_LOCAL, N_LARGE):
            paths = self.paths if n == N_LOCAL else make_files(Path(self.tmp.name) / f"local{n}", n)
            config = config_for(paths, "once")  # validated here, once: not timed

            def memconfig_e2e(config: Config = config) -> str:
                return Pipeline.from_config(config).render(state={})

            def fsspec_cat(paths: list[str] = paths) -> dict[str, bytes]:
                return LocalFileSystem().cat(paths)

            def deepagents_e2e(paths: list[str] = paths) -> str:
                return deepagents_load_and_format(deepagents_middleware(paths))

            prompt = memconfig_e2e()
            assert prompt.count("# Memory file") == n, "not every local source loaded"
            same = prompt == deepagents_e2e()
            if not same:
                self.notes.append(f"e2e_cold_{n}: memconfig's and deepagents' prompts DIFFER (layout check failed)")
            reps = self.reps(25, 7) if n == N_LOCAL else self.reps(9, 3)
            cat, mc, da = interleaved([fsspec_cat, memconfig_e2e, deepagents_e2e], reps, warmup=2)
            what = f"{n:,} local 4 KB files, Pipeline.from_config(Config) + first render (empty state, JSON log)"
            self.add(
                Row(f"e2e_cold_{n}_vs_fsspec", what, statistics.median(mc), statistics.median(cat), "fs.cat", "le:2")
            )
            self.add(
                Row(
                    f"e2e_cold_{n}_vs_deepagents",
                    "same, vs deepagents MemoryMiddleware built + before_agent + format"
                    + ("" if same else " [OUTPUT DIFFERS]"),
                    statistics.median(mc),
                    statistics.median(da),
                    "deepagents",
                    "lt:1",
                )
            )
            self.profiles[f"e2e_cold_{n}"] = memconfig_e2e

    # 4 ---------------------------------------------------------------------------
    def once_turn(self) -> None:
        """Per-turn render under policy once, sources unchanged, the caller's system prompt given.

        Every turn passes the same ``SYSTEM`` object, as an agent passes its own system
        prompt. Two rows, measured in the same turns: at 200 sources vs deepagents' per-call
        work (``_format_agent_memory`` of the loaded contents, then the system prompt joined
        by a blank line as memconfig's appender does, so both sides return the same string,
        checked) >= 100x faster; and memconfig at 200 sources vs memconfig at 20 <= 2x: an
        unchanged turn should cost about the same whatever the size of the prompt.
        """
        turns: list[Callable[[], str]] = []
        firsts: list[str] = []
        for n in (N_SMALL, N_LOCAL):
            pipeline = Pipeline.from_config(config_for(self.paths[:n], "once"))
            state: dict[str, Any] = {}
            firsts.append(pipeline.render(system=SYSTEM, state=state))
            assert firsts[-1].count("# Memory file") == n

            def turn(pipeline: Pipeline = pipeline, state: dict[str, Any] = state) -> str:
                return pipeline.render(system=SYSTEM, state=state)

            turns.append(turn)
        small, large = turns

        mw = deepagents_middleware(self.paths)
        contents = mw.before_agent(state={}, runtime=None, config=None)["memory_contents"]

        def deepagents_turn() -> str:
            return SYSTEM + "\n\n" + mw._format_agent_memory(contents, mw.system_prompt)

        assert deepagents_turn() == firsts[1], "memconfig's and deepagents' prompts differ"
        for turn in turns:
            for _ in range(20):
                turn()
        base, mc_small, mc_large = interleaved(
            [deepagents_turn, small, large], self.reps(15, 5), warmup=2, batches=[50, 2000, 2000]
        )
        assert small() == firsts[0] and large() == firsts[1]
        self.add(
            Row(
                "once_turn",
                f"per-turn render, {N_LOCAL} unchanged local sources, once, system prompt given, "
                "vs deepagents _format_agent_memory + join",
                statistics.median(mc_large),
                statistics.median(base),
                "deepagents fmt",
                "speedup:100",
            )
        )
        self.add(
            Row(
                f"once_turn_{N_LOCAL}_vs_{N_SMALL}",
                f"the same at {N_LOCAL} sources vs at {N_SMALL} (the cost must not grow with prompt size)",
                statistics.median(mc_large),
                statistics.median(mc_small),
                f"memconfig@{N_SMALL}",
                "le:2",
            )
        )
        self.profiles["once_turn"] = large
        self.profiles[f"once_turn_{N_SMALL}"] = small

    # 5 ---------------------------------------------------------------------------
    def revalidate_turn(self) -> None:
        paths = self.paths
        pipeline = Pipeline.from_config(config_for(paths, "revalidate"))
        state: dict[str, Any] = {}
        first = pipeline.render(state=state)
        assert first.count("# Memory file") == N_LOCAL

        def turn() -> str:
            return pipeline.render(state=state)

        stat = os.stat

        def baseline() -> None:
            for p in paths:
                stat(p)

        for _ in range(20):
            turn()
        base, mc = interleaved([baseline, turn], self.reps(15, 5), warmup=2, batches=[50, 20])
        assert turn() == first
        what = "per-turn render, 200 unchanged local sources, revalidate, vs os.stat x200"
        self.add(Row("revalidate_turn", what, statistics.median(mc), statistics.median(base), "os.stat loop", "le:3"))
        self.profiles["revalidate_turn"] = turn

    # 6 ---------------------------------------------------------------------------
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

    # 7 ---------------------------------------------------------------------------
    def glob_memory(self) -> None:
        """Memory held while a glob's matches keep changing: it must stay flat.

        One glob source over a temp folder of 50 files; each cycle deletes all 50 and writes
        50 new, differently named ones (new contents too), then renders under policy
        revalidate, so every render lists the glob again and reads the new matches (checked:
        the prompt has this cycle's files and not the last cycle's). 60 cycles.

        Figure: tracemalloc's current traced size, after gc.collect(), after cycle 60 minus
        after cycle 10. Tracing starts before the pipeline is built, so frees are counted
        too; the first 10 cycles (one-off warm-up: imports, fsspec's and structlog's caches)
        are left out. The RSS growth over the same cycles, from an untraced pass run before,
        is in the row's text as context only (the allocator keeps and reuses freed pages, so
        RSS is coarse).

        Baseline column: the same loop without memconfig (the same churn, then fsspec's
        glob + cat of the matches, results dropped): the noise floor of the interpreter,
        fsspec and the file churn.

        Target: memconfig's growth <= 64 KiB over the 50 measured cycles. Those cycles
        replace 2,500 files of 4 KB: 64 KiB is about 1.3 KB per cycle, 26 bytes per file
        replaced, less than keeping any record of a gone match costs (its key string and
        a dict slot alone are ~150 bytes), a third of one file's content, a three-thousandth
        of one prompt (~200 KB). So anything kept per cycle or per gone match fails it,
        including a memo bounded by a count larger than a few prompts (a memo of the last
        64 prompts is bounded, but here holds 50 more ~200 KB prompts at cycle 60 than at
        cycle 10); a steady state (the same objects every cycle) passes, with room for the
        noise the control shows.
        """
        root = os.path.join(self.tmp.name, "glob")
        pattern = os.path.join(root, "*.md")

        def churn(cycle: int) -> None:
            # Plain os calls on str paths: pathlib interns every new name (sys.intern), which
            # would grow the interpreter's table of interned strings on both sides.
            for old in os.listdir(root):
                os.unlink(os.path.join(root, old))
            for i in range(N_GLOB):
                with open(os.path.join(root, f"c{cycle:03d}_{i:02d}.md"), "w", encoding="utf-8") as file:
                    file.write(make_text(cycle * N_GLOB + i))

        def memconfig_loop() -> Callable[[int], None]:
            pipeline = Pipeline.from_config(config_for([{"glob": pattern}], "revalidate"))
            state: dict[str, Any] = {}

            def cycle(c: int) -> None:
                churn(c)
                prompt = pipeline.render(system=SYSTEM, state=state)
                assert prompt.count("# Memory file") == N_GLOB, "not every match loaded"
                assert f"c{c:03d}_00.md" in prompt and f"c{c - 1:03d}_00.md" not in prompt, "stale glob matches"

            return cycle

        def control_loop() -> Callable[[int], None]:
            local = LocalFileSystem()

            def cycle(c: int) -> None:
                churn(c)
                assert len(local.cat(local.glob(pattern))) == N_GLOB

            return cycle

        def growth(make: Callable[[], Callable[[int], None]], traced: bool) -> int:
            shutil.rmtree(root, ignore_errors=True)
            os.mkdir(root)
            churn(0)
            gc.collect()
            if traced:
                tracemalloc.start()
            marks: list[int] = []
            try:
                step = make()
                for c in range(1, GLOB_CYCLES + 1):
                    step(c)
                    if c in (GLOB_FROM, GLOB_CYCLES):
                        gc.collect()
                        marks.append(tracemalloc.get_traced_memory()[0] if traced else (rss_bytes() or 0))
                del step
            finally:
                if traced:
                    tracemalloc.stop()
            return marks[1] - marks[0]

        rss = ""
        if rss_bytes() is not None:  # untraced passes first: memory freed by a pass is reused by the next
            rss_control, rss_mc = growth(control_loop, traced=False), growth(memconfig_loop, traced=False)
            rss = f"; RSS {fmt_bytes(rss_mc)} (control {fmt_bytes(rss_control)})"
        control = growth(control_loop, traced=True)
        mc = growth(memconfig_loop, traced=True)
        self.add(
            Row(
                "glob_memory",
                f"glob of {N_GLOB} files, all replaced by new names each cycle, revalidate render per cycle: "
                f"traced memory growth, cycles {GLOB_FROM} to {GLOB_CYCLES}{rss}",
                mc,
                control,
                "churn, no mc",
                f"max:{GLOB_GROWTH_MAX}",
                unit="B",
            )
        )


NAMES = (
    "http_cold",
    "local_cold",
    "e2e_cold",
    "once_turn",
    "revalidate_turn",
    "http_revalidate",
    "glob_memory",
)
HTTP = {"http_cold", "http_revalidate"}


def markdown(rows: list[Row]) -> str:
    out = [
        "| benchmark | memconfig | baseline | ratio (memconfig / baseline) | target | result |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r.name}`: {r.what} | {r.value_text(r.memconfig)} | {r.value_text(r.baseline)} ({r.baseline_label}) "
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

    devnull = open(os.devnull, "wb", buffering=0)  # noqa: SIM115 - binary, unbuffered: as the CLI opens its log file
    configure_cli_logging("json", "info", devnull)  # as the CLI does, with logging.format: json

    started = time.perf_counter()
    bench = Bench(args)
    print(
        f"memconfig {memconfig.__version__} ({Path(memconfig.__file__).parent}) · "
        f"Python {platform.python_version()} · {platform.machine()} · {os.cpu_count()} CPUs · "
        f"{'quick' if args.quick else 'full'} run",
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
                    print(f"  {name:<28} ERROR {type(exc).__name__}: {exc}", flush=True)
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
            f"{r.name:<{width}}  {r.value_text(r.memconfig):>10}  {r.value_text(r.baseline):>10}  "
            f"{r.baseline_label:<15}  {r.ratio_text:<22}  {r.target_text:<16}  {r.verdict}"
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
