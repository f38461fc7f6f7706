"""Redactor speed and memory on large pastes, next to the algorithm it replaced, and the check that both
give exactly the same output.

Shapes: a realistic engine log, the same with a secret every 200 lines, one 4 MiB line with no newline,
adversarial text full of the rules' keywords (``token=``, ``key:``, ``://``, ``ey``) that never
completes a secret, and the six shapes of bench/detector_vs_grep.py (realistic log, near-misses, 1 MiB
lines, no newlines, nested prefixes, 80-col wrapped).

    .venv/bin/python bench/redact_throughput.py [--mib 10] [--runs 3]   # paired timings, and peak memory
    .venv/bin/python bench/redact_throughput.py --check [--mib 3]      # same output as the former code

Timings are medians of paired runs (``redact()`` now and the frozen former algorithm,
tests/bot/frozen/redact_v0.py, alternating in one process), so the ratio is what to read on a
shared machine.  Peak memory (now / before) is what ``redact()`` allocates at its peak on each shape,
in a fresh process (``tracemalloc``: the interpreter, the rules and the paste itself are not counted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _machine import describe  # noqa: E402

FILLER = [
    "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds",
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "12.3 tokens/s, Avg generation throughput: 45.6 tokens/s, Running: 3 reqs, GPU KV cache usage: 12.5%",
    'vllm-1  | INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 04-12 08:21:19 [arg_utils.py:1234] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', "
    "'max_model_len': 32768, 'tokenizer': 'Qwen/Qwen2.5-7B-Instruct'}",
    "srv  update_slots: id  0 | task 1234 | prompt done, n_past = 2048, n_tokens = 512",
]
SECRET = "HF_TOKEN=hf_" + "AbCdEfGh12" * 4


def own_shapes(size: int) -> dict[str, Callable[[], str]]:
    def log(secrets: bool) -> str:
        lines: list[str] = []
        total = 0
        while total < size:
            line = FILLER[len(lines) % len(FILLER)]
            if secrets and len(lines) % 200 == 199:
                line = f"{line} {SECRET}"
            lines.append(line)
            total += len(line) + 1
        return "\n".join(lines)

    return {
        "engine log": lambda: log(False),
        "engine log + secrets": lambda: log(True),
        "one 4 MiB line": lambda: ("a" * 63 + " ") * (4 << 14),
        "keywords, no secret": lambda: ("token= key: x:// ey.ey Bearer -----BEGIN " * (size // 40))[:size],
    }


def shapes(size: int) -> dict[str, Callable[[], str]]:
    from detector_vs_grep import shapes as grep_shapes

    return own_shapes(size) | {f"grep: {name}": make for name, make in grep_shapes(size).items()}


def paired(text: str, runs: int) -> tuple[float, float, tuple[str, ...]]:
    from bot.redact import redact
    from tests.bot.frozen.redact_v0 import redact as former

    now, before = [], []
    kinds = redact(text).kinds, former(text).kinds  # warm: each compiles the Sets this text needs
    for _ in range(runs):
        for fn, out in ((redact, now), (former, before)):
            start = time.perf_counter()
            fn(text)
            out.append(time.perf_counter() - start)
    return statistics.median(now), statistics.median(before), kinds[0]


def peak(name: str, mib: int, former: bool) -> int:
    """MiB of Python objects the redactor holds at its peak on one shape, beyond the paste itself
    (``tracemalloc`` in a fresh process; the shape is made before tracing starts)."""
    code = (
        f"import sys, tracemalloc; sys.path[:0] = [{str(HERE)!r}, {str(ROOT)!r}]; import redact_throughput as b; "
        f"text = b.shapes({mib << 20})[{name!r}](); "
        "from bot.redact import redact; from tests.bot.frozen.redact_v0 import redact as former; "
        "redact('x'); former('x'); tracemalloc.start(); "
        f"(former if {former!r} else redact)(text); print(tracemalloc.get_traced_memory()[1])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1]) >> 20


def timings(mib: int, runs: int) -> None:
    from bot.redact import redact

    redact("warm up: the rules compile on first use " * 300)
    print(f"redact() on {mib} MiB, now vs the former algorithm; {describe()}; medians of {runs} paired runs")
    print(
        f"{'shape':32s} {'MiB':>5s} {'now':>7s} {'before':>7s} {'ratio':>6s} {'MiB/s':>7s} {'peak +MiB':>10s}"
    )
    for name, make in shapes(mib << 20).items():
        text = make()
        size = len(text.encode()) / (1 << 20)
        now, before, kinds = paired(text, runs)
        memory = f"{peak(name, mib, False)} / {peak(name, mib, True)}"
        print(
            f"{name:32s} {size:5.1f} {now:6.2f}s {before:6.2f}s {now / before:5.2f}x {size / now:7.1f} "
            f"{memory:>10s}  kinds={list(kinds)}"
        )


def check(mib: int) -> int:
    """Every equivalence case and ``mib`` MiB of each shape: the same text and kinds as the former code."""
    from bot.normalize import visible
    from bot.redact import redact
    from bot.unwrap import unwrap
    from tests.bot.frozen.redact_v0 import redact as former
    from tests.hardening.redact_equivalence import cases

    items = list(cases()) + [(name, make()) for name, make in shapes(mib << 20).items()]
    differ = []
    for name, text in items:  # the redactor searches the paste as the detector reads it (unwrapped)
        a, b = former(unwrap(visible(text))), redact(text)
        if (a.text, a.kinds) != (b.text, b.kinds):
            differ.append(name)
    print(json.dumps({"pastes": len(items), "differ": len(differ), "first": differ[:10]}))
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=None, help="size of each shape (10; 3 with --check)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="compare outputs with the former algorithm")
    args = parser.parse_args()
    if args.check:
        return check(args.mib or 3)
    timings(args.mib or 10, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
