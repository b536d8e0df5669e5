#!/usr/bin/env python
"""How long and how much memory each bad config of the corpus costs the real command line.

    python benchmarks/bad_configs.py            # every case, validate and render, one child process each
    python benchmarks/bad_configs.py --top 20   # list the 20 slowest runs

Cases: every ``tests/config/bad_configs/*.yaml`` and every generated one in
``tests/config/bad_configs/generated.py`` (50 MB, alias bombs, 10,000 levels of
nesting, ``/dev/zero``, …). Each runs as ``python -m memconfig COMMAND -c FILE``
in a child process, as a user would run it. Three times are shown per run:
the child's whole life (starting Python and importing memconfig included,
which on a loaded machine is most of it), the wall time of the command itself
(``memconfig.cli.main``: reading, parsing, validating, reporting) and that
command's CPU time (what contention with other processes does not inflate).
The memory is the child's peak resident set (``os.wait4``). Target (issue 8):
each command under 2 s and under 200 MB, exit code 2.
Exit status: 0 when every run is within the targets, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "config" / "bad_configs"
MAX_SECONDS = 2.0
MAX_RSS_MB = 200.0


def _generated() -> list[object]:
    spec = importlib.util.spec_from_file_location("bad_configs_generated", CORPUS / "generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return list(module.CASES)


_CHILD = """
import json, resource, sys, time
from memconfig.cli import main
cpu = resource.getrusage(resource.RUSAGE_SELF)
started = time.perf_counter()
code = main(sys.argv[1:])
seconds = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF)
cpu_seconds = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
sys.stdout.flush()
sys.__stdout__.write(json.dumps({"code": code, "seconds": seconds, "cpu": cpu_seconds}))
"""


def _run(command: str, path: Path, environ: dict[str, str]) -> tuple[float, float, float, float, int]:
    """One CLI run in a child process: the command's wall and CPU seconds, the child's, its peak RSS (MB), exit."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, command, "-c", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environ,
    )
    assert child.stdout is not None
    report = json.loads(child.stdout.read().decode())
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    lifetime = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting again
    return report["seconds"], report["cpu"], lifetime, usage.ru_maxrss / 1024, report["code"]  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=10, help="how many of the slowest runs to list")
    args = parser.parse_args()
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MEMCONFIG_", "MC_BAD_"))}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    rows: list[tuple[float, float, float, float, int, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        cases = [(path.stem, path) for path in sorted(CORPUS.glob("*.yaml"))]
        for made in _generated():
            path = Path(folder) / f"{made.name}.yaml"  # type: ignore[attr-defined]
            made.make(path)  # type: ignore[attr-defined]
            cases.append((f"{made.name} (generated)", path))  # type: ignore[attr-defined]
        for name, path in cases:
            for command in ("validate", "render"):
                rows.append((*_run(command, path, environ), f"{command} {name}"))
    rows.sort(reverse=True)
    print(f"{len(rows)} runs ({len(rows) // 2} configs x validate, render); the {args.top} slowest commands:")
    print(f"  {'command s':>9}  {'CPU s':>6}  {'child s':>7}  {'peak MB':>7}  exit  case")
    for seconds, cpu, lifetime, rss, code, name in rows[: args.top]:
        print(f"  {seconds:9.3f}  {cpu:6.3f}  {lifetime:7.3f}  {rss:7.1f}  {code:4}  {name}")
    slowest = rows[0]
    busiest = max(rows, key=lambda row: row[1])
    longest = max(rows, key=lambda row: row[2])
    biggest = max(rows, key=lambda row: row[3])
    wrong = [row for row in rows if row[4] != 2]
    print(f"slowest command: {slowest[0]:.3f} s wall ({slowest[5]})")
    print(f"most CPU: {busiest[1]:.3f} s ({busiest[5]})")
    print(f"longest child, start-up included: {longest[2]:.3f} s ({longest[5]})")
    print(f"largest peak RSS: {biggest[3]:.1f} MB ({biggest[5]})")
    print(f"exit codes other than 2: {len(wrong)}" + "".join(f"\n  {row[4]}  {row[5]}" for row in wrong))
    ok = slowest[0] < MAX_SECONDS and biggest[3] < MAX_RSS_MB and not wrong
    print("within targets (each command < 2 s, < 200 MB, exit 2):", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
