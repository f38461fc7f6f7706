"""The machine a benchmark ran on, printed with its results."""

from __future__ import annotations

import os
import platform


def describe() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def latency_main(doc: str, run, measured: str) -> int:
    """Shared driver of the platform round-trip benchmarks: ``run(n, concurrency, warmup)`` is a
    coroutine returning latencies in seconds; ``measured`` names the interval printed."""
    import argparse
    import asyncio
    import logging
    import statistics
    import time

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="pastes to measure (default 200)")
    parser.add_argument("-c", "--concurrency", type=int, default=1, help="pastes in flight (default 1)")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    latencies = asyncio.run(run(args.n, max(1, args.concurrency), args.warmup))
    elapsed = time.perf_counter() - started
    ms = [x * 1000 for x in latencies]
    print(f"machine: {describe()}")
    print(f"pastes: {len(ms)} measured of {args.n} (+{args.warmup} warm-up), concurrency {args.concurrency}")
    if not ms:
        print("no replies measured")
        return 1
    print(
        f"{measured}: p50 {percentile(ms, 50):.1f} ms, p99 {percentile(ms, 99):.1f} ms, "
        f"mean {statistics.fmean(ms):.1f} ms, max {max(ms):.1f} ms"
    )
    print(f"wall time: {elapsed:.1f} s")
    return 0 if len(ms) == args.n else 1
