"""Time from a typical paste to a rendered reply, in-process (target: under 20 ms).

Every error record of the development corpus is triaged (detect -> diagnose -> Markdown) many times.
Run: .venv/bin/python bench/reply_latency.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import describe  # noqa: E402

from bot.core import GardenBot, Paste  # noqa: E402
from bot.formatter import to_markdown  # noqa: E402

CORPUS = next(
    p for p in (ROOT.parent / "shared/corpus/dev.jsonl", ROOT / "tests/data/dev.jsonl") if p.is_file()
)


def main() -> None:
    print(describe())
    bot = GardenBot()
    records = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    pastes = [r["text"] for r in records]
    for text in pastes:  # warm up: catalogs, name indexes, compiled patterns
        bot.triage(Paste(text, False, []))
    samples: list[float] = []
    for _ in range(20):
        for text in pastes:
            start = time.perf_counter()
            reply = bot.triage(Paste(text, False, []))
            if reply is not None:
                to_markdown(reply)
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    p50 = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99) - 1]
    print(
        f"paste -> rendered reply, {len(samples)} runs over {len(pastes)} corpus pastes: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {samples[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
