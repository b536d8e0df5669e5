#!/usr/bin/env python
"""Start-up time of ``memconfig render``, side by side with the import floor of its dependencies.

    python benchmarks/startup.py              # 21 runs of each, interleaved
    python benchmarks/startup.py --runs 41
    python benchmarks/startup.py --imports    # also: what render imports beyond the floor (-X importtime)
    python benchmarks/startup.py --strict     # also: a floor whose collector is held off as the CLI's is

Target (issue 21; issue 10's was 1.3x): ``memconfig render -c configs/example.yaml > /dev/null``,
with stderr not a terminal (no progress display), takes at most 1.15x the wall time of
``python -c "import fsspec, pydantic, pydantic_settings, yaml, structlog, orjson"``.
What ``render`` does beyond the floor: its own imports (the console script's
``from memconfig.cli import run`` imports none of the library; ``run`` pauses the
collector for the command's imports and then freezes what they made, so no collection
walks it, then or at exit), the config's validation, the pipeline's build, the render
and the JSON log lines. The floor's process has its collections, during its imports
and at its exit: part of what the ratio compares. ``--strict`` adds, for reference, a
floor without them (the collector off for its imports, what they made frozen), and
render's ratio to it: what memconfig's own work costs.

Each side is a fresh interpreter (``sys.executable -P``: the memconfig measured
is the one ``PYTHONPATH`` names, else the installed one), started the way the
console script starts memconfig (``from memconfig.cli import run; run()``);
stdout and stderr go to the null device. The runs take turns (one of each
side, then again), so load from elsewhere hits both alike; the figure is the
median, of the wall time (the target) and of the CPU time the child used
(user + system, from ``wait4``: less moved by other work on the machine).
A bare ``python -c pass`` is shown for reference. Bytecode is written
and used, as for an installed package (``PYTHONDONTWRITEBYTECODE`` is dropped
for the children; the warm-up run writes it).

Two rows: as installed, and with ``rich`` made unimportable
(``sys.modules["rich"] = None`` before anything else), as for an install
without ``memconfig[terminal]``. The second matters because structlog imports
rich (``structlog.dev``, for its tracebacks) whenever rich is installed: the
floor itself grows by it, and memconfig must not add to it.
Exit status: 0 when every row is within the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "example.yaml"
TARGET = 1.15
FLOOR = "import fsspec, pydantic, pydantic_settings, yaml, structlog, orjson"
RENDER = "import sys; sys.argv[0] = 'memconfig'; from memconfig.cli import run; run()"
NO_RICH = "import sys; sys.modules['rich'] = None; "
STRICT = "dependencies' imports, no collection"  # the --strict side
#: As pip installs a package (bytecode compiled): with PYTHONDONTWRITEBYTECODE set, every run would compile
#: memconfig's sources again while its dependencies' bytecode is read, which is not what users start.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds from starting *argv* to its exit, and the CPU seconds it used (user + system); it must exit 0."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv} exited {child.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime


def sides(prelude: str, strict: bool = False) -> dict[str, list[str]]:
    python = [sys.executable, "-P", "-c"]  # -P: not the current folder first; memconfig from PYTHONPATH
    found = {
        "python -c pass": [*python, prelude + "pass"],
        "dependencies' imports": [*python, prelude + FLOOR],
        "memconfig render": [*python, prelude + RENDER, "render", "-c", str(CONFIG)],
    }
    if strict:
        found[STRICT] = [*python, f"{prelude}import gc; gc.disable(); {FLOOR}; gc.freeze()"]
    return found


def measure(prelude: str, runs: int, strict: bool = False) -> dict[str, tuple[float, float]]:
    """Each side's median wall and CPU seconds."""
    commands = sides(prelude, strict)
    for argv in commands.values():  # warm-up: the page cache and the bytecode
        run_once(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(run_once(argv))
    return {
        name: (statistics.median(t[0] for t in found), statistics.median(t[1] for t in found))
        for name, found in times.items()
    }


def imported(code: str, *args: str) -> dict[str, tuple[int, int]]:
    """Module: (self, cumulative) microseconds, from ``python -X importtime``."""
    done = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-c", code, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
        check=True,
    )
    found = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        found[name.strip()] = (int(own), int(cumulative))
    return found


def beyond_floor() -> None:
    """What ``render`` imports that the floor does not: memconfig's own modules, and anything else."""
    floor = imported(FLOOR)
    render = imported(RENDER, "render", "-c", str(CONFIG))
    extra = {name: times for name, times in render.items() if name not in floor}
    own = sum(t[0] for n, t in extra.items() if n.split(".")[0] == "memconfig")
    other = sum(t[0] for n, t in extra.items() if n.split(".")[0] != "memconfig")
    print(
        f"\nimported by render beyond the floor: {len(extra)} modules, self time {own / 1000:.1f} ms memconfig's, "
        f"{other / 1000:.1f} ms other (under -X importtime, which inflates it)"
    )
    for name, (self_us, _) in sorted(extra.items(), key=lambda item: -item[1][0])[:15]:
        print(f"  {self_us / 1000:7.1f} ms  {name}")
    rich = sorted(n for n in render if n.split(".")[0] == "rich" and n not in floor)
    print(f"rich modules render imports beyond the floor's: {rich or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21, help="runs of each side (default 21)")
    parser.add_argument("--imports", action="store_true", help="list what render imports beyond the floor")
    parser.add_argument("--strict", action="store_true", help="also a floor without collections (for reference)")
    args = parser.parse_args()
    os.chdir(ROOT)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median of {args.runs} runs, interleaved")
    ok = True
    for label, prelude in (("as installed", ""), ("without rich", NO_RICH)):
        medians = measure(prelude, args.runs, args.strict)
        floor, render = medians["dependencies' imports"], medians["memconfig render"]
        ratio, cpu_ratio = render[0] / floor[0], render[1] / floor[1]
        ok = ok and ratio <= TARGET
        print(f"{label}:")
        width = max(map(len, medians))
        for name, (wall, cpu) in medians.items():
            print(f"  {name:<{width}} {wall * 1000:7.1f} ms wall  {cpu * 1000:7.1f} ms CPU")
        verdict = "ok" if ratio <= TARGET else "OVER"
        print(f"  ratio render / floor: {ratio:.2f}x wall ({verdict}, target <= {TARGET}x), {cpu_ratio:.2f}x CPU")
        if args.strict:
            bare = medians[STRICT]
            print(
                f"  ratio render / floor without collections: {render[0] / bare[0]:.2f}x wall, "
                f"{render[1] / bare[1]:.2f}x CPU (for reference)"
            )
    if args.imports:
        beyond_floor()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
