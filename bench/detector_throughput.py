"""Detector throughput on a 10 MiB realistic log and on 10 MiB of adversarial input, next to the same
scan done by GNU grep -P with the same patterns (the reference: one grep per pattern, first match).

Targets: a 10 MiB paste triaged well under a second; within 3x of the grep reference.
Run: .venv/bin/python bench/detector_throughput.py [MiB]

With ``--against-frozen [MiB]``: in-process ``detect()`` on every shape of bench/detector_vs_grep.py
next to the frozen copy of the algorithm before issue 16 (tests/bot/frozen/), runs alternating (best
of 3 each, so both see the same load), and the two must give the same views and findings.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import describe  # noqa: E402

from bot.detector import Detector, default_detector  # noqa: E402
from bot.normalize import normalize  # noqa: E402

CORPUS = next(
    p for p in (ROOT.parent / "shared/corpus/dev.jsonl", ROOT / "tests/data/dev.jsonl") if p.is_file()
)
FILLER = [
    "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds",
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [loggers.py:123] Engine 000: Avg prompt throughput: 12.3 tokens/s, "
    "Avg generation throughput: 45.6 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%",
    'vllm-1  | INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'time=2025-08-08T23:02:37.145+01:00 level=INFO source=server.go:135 msg="llama runner started in 2.01 seconds"',
    "srv  update_slots: id  0 | task 1234 | prompt done, n_past = 2048, n_tokens = 512",
    "\x1b[34m1.14.608.510\x1b[0m \x1b[32mI \x1b[0mllama_context: n_ctx_seq (64000) < n_ctx_train (1048576)",
]


def realistic(size: int) -> str:
    rng = random.Random(7)
    records = [json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip()]
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(FILLER) if rng.random() > 0.002 else rng.choice(records)
        lines.append(line)
        total += len(line) + 1
    lines.append(records[0])  # the error that matters, at the end
    return "\n".join(lines)


def adversarial(size: int) -> str:
    pieces = [
        "9" * 500_000,
        " " * 500_000,
        "(" * 500_000,
        "max seq len (" * 50_000,
        (
            "The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache ("
            + "1" * 60
            + "\n"
        )
        * 5000,
        "allocating 1.0 MiB on device 0: cudaMalloc " * 30_000,
        "Tried to allocate " * 50_000,
        "(((" + "1," * 200_000,
        "a" * 1_000_000,  # one long line without a newline
    ]
    text = "\n".join(pieces)
    while len(text) < size:
        text += "\n" + text[: size - len(text)]
    return text[:size]


def run_detector(text: str, repeat: int = 3) -> tuple[float, int]:
    det = default_detector()
    best = float("inf")
    found = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = det.detect(text)
        best = min(best, time.perf_counter() - start)
        found = len(result.findings)
    return best, found


def grep_patterns() -> list[str]:
    """The signature patterns, with RE2's named groups spelled the PCRE way (same syntax otherwise)."""
    det = default_detector()
    return [p for loaded in det.kb.signatures for p in loaded.signature.patterns]


def run_grep(text: str, patterns: list[str], timeout: float = 60.0) -> tuple[float | None, int]:
    grep = shutil.which("grep")
    if grep is None:
        return None, 0
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(text)
        path = fh.name
    start = time.perf_counter()
    matched = 0
    try:
        for pattern in patterns:
            try:
                proc = subprocess.run(
                    [grep, "-P", "-m1", "-q", "-z", pattern, path], timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired:
                return None, matched
            matched += proc.returncode == 0
    finally:
        Path(path).unlink()
    return time.perf_counter() - start, matched


def against_frozen(mib: int, runs: int = 3) -> None:
    from dataclasses import asdict

    from detector_vs_grep import shapes

    from knowledge import load_builtin
    from tests.bot.frozen import detector_v0

    kb = load_builtin()
    new, old = default_detector(), detector_v0.Detector(kb)
    print(describe())
    starts: dict[str, list[float]] = {"new": [], "frozen": []}
    for _ in range(7):  # a start: the detector built, then a one-line paste (what a CLI triage pays)
        for key, build in (("new", Detector), ("frozen", detector_v0.Detector)):
            start = time.perf_counter()
            build(kb).detect("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
            starts[key].append(time.perf_counter() - start)
    first, frozen_first = (statistics.median(starts[k]) * 1000 for k in ("new", "frozen"))
    print(f"start + one-line detect(): {first:.1f} ms, frozen {frozen_first:.1f} ms (medians of 7)")
    for name, make in shapes(mib << 20).items():
        text = make()
        best = {"new": float("inf"), "frozen": float("inf")}
        results = {}
        for _ in range(runs):
            for key, det in (("new", new), ("frozen", old)):
                start = time.perf_counter()
                results[key] = det.detect(text)
                best[key] = min(best[key], time.perf_counter() - start)
        same = [(v.data, list(v.first_physical)) for v in results["new"].normalized.views] == [
            (v.data, list(v.first_physical)) for v in results["frozen"].normalized.views
        ] and [asdict(f) for f in results["new"].findings] == [asdict(f) for f in results["frozen"].findings]
        print(
            f"{name:16} {mib} MiB: detect() {best['new']:.3f} s, frozen {best['frozen']:.3f} s, "
            f"ratio {best['new'] / best['frozen']:.2f} | same views and findings: {same}"
        )


def main() -> None:
    if sys.argv[1:2] == ["--against-frozen"]:
        against_frozen(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
        return
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    size = mib * 1024 * 1024
    print(describe())
    patterns = grep_patterns()
    for name, text in (("realistic log", realistic(size)), ("adversarial", adversarial(size))):
        start = time.perf_counter()
        normalize(text)
        norm_s = time.perf_counter() - start
        det_s, found = run_detector(text)
        grep_s, grep_found = run_grep(text, patterns)
        mb = len(text.encode()) / 2**20
        ratio = f"{det_s / grep_s:.2f}x grep's time" if grep_s else "grep did not finish"
        print(
            f"{name:14} {mb:5.1f} MiB: detector {det_s:.3f} s ({mb / det_s:5.1f} MiB/s; normalise {norm_s:.3f} s), "
            f"{found} findings | grep -P, {len(patterns)} patterns: "
            + (f"{grep_s:.3f} s ({grep_found} matched)" if grep_s else "n/a")
            + f" | {ratio}"
        )


if __name__ == "__main__":
    main()
