"""Latency of one /vram computation in-process (target: under 5 ms), and of the matchmaker.

Run: .venv/bin/python bench/vram_latency.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _machine import describe

from calculator.estimate import VramRequest, estimate
from calculator.matchmaker import gpus_for_model, models_for_gpu
from calculator.resolve import resolve_gpu, resolve_model

REQUESTS = [
    VramRequest(model="qwen2.5-coder-32b-awq", gpu="4090"),
    VramRequest(model="llama3.1:8b", gpu="3090", engine="ollama"),
    VramRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100-sxm", gpus=4, max_model_len=65536),
    VramRequest(model="gpt-oss-120b", gpu="h100-sxm"),
    VramRequest(
        model="gemma3:27b",
        gpu="4090",
        engine="llama.cpp",
        ctx_size=32768,
        cache_type_k="q8_0",
        cache_type_v="q8_0",
    ),
    VramRequest(model="deepseek-ai/DeepSeek-V3-0324", gpu="h200", gpus=8, engine="sglang"),
]


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    print(describe())
    for req in REQUESTS:
        estimate(req)  # warm caches (catalog load, name index)
    samples = []
    for req in REQUESTS:
        samples += timed(lambda r=req: estimate(r), 200)
    samples.sort()
    p50 = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99) - 1]
    print(
        f"/vram estimate (name resolution + budget + remedies), {len(samples)} runs: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
    )
    m = resolve_model("qwen2.5-72b-awq")
    g = resolve_gpu("4090")
    gm = timed(lambda: gpus_for_model(m.model, m.variant), 20)
    mg = timed(lambda: models_for_gpu(g), 20)
    print(f"matchmaker, GPUs for a model ({len(gm)} runs): median {statistics.median(gm):.1f} ms")
    print(f"matchmaker, models for a GPU ({len(mg)} runs): median {statistics.median(mg):.1f} ms")


if __name__ == "__main__":
    main()
