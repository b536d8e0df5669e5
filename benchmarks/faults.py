#!/usr/bin/env python
"""What an unreachable remote source costs a render, with default loader settings.

    python benchmarks/faults.py              # 5 renders per case, the median shown
    python benchmarks/faults.py --repeat 1   # one each (for a tree where a case takes long)

Cases, each one source on a loopback port on which nothing listens:

  s3_refused    s3://bucket/a.md with ``endpoint_url`` at that port
  http_refused  http://127.0.0.1:<port>/a.md
  zip_refused   zip://a.md::http://127.0.0.1:<port>/x.zip

Target (issue 8): at most the source's ``timeout`` times its attempts
(``retries`` + 1), i.e. 30 s x 3 with the defaults; a refused connection should
cost about the loader's backoff between attempts (0.2 s, then 0.4 s, with jitter).
Each row also gives the events the render logged (retries and the skip's reason).

Only memconfig's public API is used (Pipeline.from_config), so the same script
measures another tree: ``PYTHONPATH=<tree> python benchmarks/faults.py``.
Exit status: 0 when every case is within its target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from typing import Any

import structlog

from memconfig import Pipeline

TIMEOUT, RETRIES = 30.0, 2  # memconfig's defaults (loader.timeout, loader.retries)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cases(port: int) -> dict[str, dict[str, Any]]:
    s3 = {
        "endpoint_url": f"http://127.0.0.1:{port}",
        "key": "k",
        "secret": "s",
        "client_kwargs": {"region_name": "us-east-1"},
    }
    return {
        "s3_refused": {"version": 1, "sources": ["s3://bucket/a.md"], "storage": {"s3": s3}},
        "http_refused": {"version": 1, "sources": [f"http://127.0.0.1:{port}/a.md"]},
        "zip_refused": {"version": 1, "sources": [f"zip://a.md::http://127.0.0.1:{port}/x.zip"]},
    }


def measure(config: dict[str, Any]) -> tuple[float, list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as logs:
        started = time.perf_counter()
        Pipeline.from_config(config).render()
        took = time.perf_counter() - started
    structlog.reset_defaults()
    return took, logs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    budget = TIMEOUT * (RETRIES + 1)
    ok = True
    print(f"{'case':<14} {'median s':>9} {'max s':>7}  target <= {budget:g} s  events")
    for name, config in cases(closed_port()).items():
        times, logs = [], []
        for _ in range(args.repeat):
            took, logs = measure(config)
            times.append(took)
        retried = sum(e["event"] == "source_retried" for e in logs)
        skipped = [e.get("reason") for e in logs if e["event"] == "source_skipped"]
        within = max(times) <= budget
        ok &= within
        print(
            f"{name:<14} {statistics.median(times):>9.2f} {max(times):>7.2f}  {'ok' if within else 'OVER':<17}"
            f"  {retried} source_retried, source_skipped {skipped}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
