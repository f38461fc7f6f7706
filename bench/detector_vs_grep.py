"""Speed against the regex engine's limit: the whole ``gpu-garden triage`` process next to ripgrep running
the same patterns in one pass over the same file, on a realistic 10 MiB log and on adversarial shapes;
cold starts against the bare interpreter; peak memory; a warm /vram.

Every timing is the median of paired runs (ripgrep and triage alternate, so both see the same load);
ratios are the meaningful part on a shared machine.  ripgrep is ``rg`` (``grep -E`` when it is absent),
given every pattern the detector compiles (signatures, requires, excludes, context rules) with the
named groups unnamed, and ``--count`` so it reads the whole input.

Run: .venv/bin/python bench/detector_vs_grep.py [--mib 10] [--runs 3] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import describe  # noqa: E402
from detector_throughput import FILLER, realistic  # noqa: E402

from bot.detector import default_detector  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- speed:begin (bench/detector_vs_grep.py) -->", "<!-- speed:end -->"
NESTED = "vllm-1  | [rank0]: (VllmWorker rank=3 pid=1090) [2025-07-02 07:41:58 DP0 TP0] INFO:   "
ONE_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


# --- inputs ------------------------------------------------------------------------------------------


def _fill(unit: str, size: int, sep: str = "\n") -> str:
    text = sep.join([unit] * (size // (len(unit) + len(sep)) + 1))
    return text[:size]


def near_misses(size: int) -> str:
    """Every signature example cut short of its end: each starts like an error and does not finish."""
    examples = [
        ex.text[: max(8, len(ex.text) * 2 // 3)]
        for s in default_detector().kb.signatures
        for ex in s.signature.examples
        if ex.expect != "no_match"
    ]
    return _fill("\n".join(examples), size)


def shapes(size: int) -> dict[str, Callable[[], str]]:
    base = realistic
    return {
        "realistic log": lambda: base(size),
        "near-misses": lambda: near_misses(size),
        "1 MiB lines": lambda: _fill(base(1 << 20).replace("\n", " ")[: (1 << 20) - 1], size),
        "no newlines": lambda: base(size).replace("\n", " "),
        "nested prefixes": lambda: _fill("\n".join(NESTED * 2 + f for f in FILLER), size),
        "80-col wrapped": lambda: "\n".join(_wrap(base(size), 80)),
    }


def _wrap(text: str, width: int) -> list[str]:
    return [line[i : i + width] for line in text.split("\n") for i in range(0, max(1, len(line)), width)]


# --- processes ---------------------------------------------------------------------------------------


def grep_command(patterns_file: Path, target: Path) -> tuple[str, list[str]]:
    rg = shutil.which("rg")
    if rg:
        return "ripgrep", [rg, "--no-config", "-a", "--count", "-f", str(patterns_file), str(target)]
    return "grep -E", ["grep", "-a", "-E", "-c", "-f", str(patterns_file), str(target)]


def rg_patterns() -> list[str]:
    """Every pattern the detector compiles, written the way ripgrep reads them."""
    return [p.pattern for p in default_detector().bank.compiled]


def usable(patterns: list[str], probe: Path, folder: Path) -> list[str]:
    """The patterns ripgrep accepts (RE2 and Rust regex share their syntax; the rest is reported)."""
    out = []
    for i, pattern in enumerate(patterns):
        one = folder / f"p{i}.txt"
        one.write_text(_unnamed(pattern) + "\n")
        proc = subprocess.run(grep_command(one, probe)[1], capture_output=True, check=False)
        if proc.returncode in (0, 1):
            out.append(_unnamed(pattern))
    return out


def _unnamed(pattern: str) -> str:
    """Named groups become plain groups: one pass over all patterns cannot repeat a group name."""
    return re.sub(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>", "(", pattern)


def triage_command(target: Path) -> list[str]:
    script = Path(sys.executable).with_name("gpu-garden")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "adapters.cli"]
    return [*base, "triage", str(target)]


def run_measured(cmd: list[str], stdin: bytes | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process, measured by a wrapper that has no other child."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
        "t = time.perf_counter() - t\n"
        "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], input=stdin, capture_output=True, check=True)
    seconds, rss = proc.stdout.split()
    return float(seconds), int(rss)


def paired(cmds: dict[str, list[str]], runs: int) -> dict[str, tuple[float, int]]:
    """Median seconds and largest peak RSS of each command, the commands alternating run by run."""
    times: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, int] = dict.fromkeys(cmds, 0)
    for _ in range(runs):
        for name, cmd in cmds.items():
            seconds, rss = run_measured(cmd)
            times[name].append(seconds)
            peaks[name] = max(peaks[name], rss)
    return {k: (statistics.median(v), peaks[k]) for k, v in times.items()}


def in_process(text: str) -> float:
    det = default_detector()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        det.detect(text)
        best = min(best, time.perf_counter() - start)
    return best


# --- the report --------------------------------------------------------------------------------------


def scan_rows(size: int, runs: int, folder: Path) -> tuple[list[str], str, int]:
    probe = folder / "probe.log"
    probe.write_text("x\n")
    patterns = usable(rg_patterns(), probe, folder)
    pfile = folder / "patterns.txt"
    pfile.write_text("\n".join(patterns) + "\n")
    tool = grep_command(pfile, probe)[0]
    rows = []
    for name, make in shapes(size).items():
        cells = []
        for part in (size // 2, size):
            target = folder / "input.log"
            text = make() if part == size else shapes(part)[name]()
            target.write_text(text, encoding="utf-8")
            res = paired({"grep": grep_command(pfile, target)[1], "triage": triage_command(target)}, runs)
            cells.append((res, text))
        (half, _), (full, text) = cells
        detect_s = in_process(text)
        grep_s, (triage_s, rss) = full["grep"][0], full["triage"]
        growth = full["triage"][0] / half["triage"][0]
        rows.append(
            f"| {name} | {grep_s:.2f} s | {triage_s:.2f} s | **{triage_s / grep_s:.1f}×** | "
            f"{detect_s:.2f} s | {growth:.2f}× | {rss / 1024:.0f} MiB |"
        )
    return rows, tool, len(patterns)


def cold_rows(runs: int, folder: Path) -> list[str]:
    one = folder / "one.log"
    one.write_text(ONE_LINE)
    cli = triage_command(one)[:-2]
    cmds = {
        "bare interpreter (`python -c pass`)": [sys.executable, "-c", "pass"],
        "`gpu-garden --help`": [*cli, "--help"],
        "`gpu-garden vram --gpu 4090 --model qwen2.5-coder-32b-awq`": [
            *cli,
            "vram",
            "--gpu",
            "4090",
            "--model",
            "qwen2.5-coder-32b-awq",
        ],
        "`gpu-garden triage` of a one-line paste": [*cli, "triage", str(one)],
    }
    for cmd in cmds.values():  # byte-compile and fill the data cache, as an installed copy would be
        run_measured(cmd)
    res = paired(cmds, runs)
    bare = res[next(iter(cmds))][0]
    return [
        f"| {name} | {s:.3f} s | {s / bare:.1f}× | {rss / 1024:.0f} MiB |" for name, (s, rss) in res.items()
    ]


def vram_warm_ms(n: int = 300) -> tuple[float, float, int]:
    """Median ms of the same /vram repeated (answers kept in the process), and of the first /vram for
    each catalog model on the same GPU (nothing kept for it yet), with how many models that was."""
    from bot.formatter import to_markdown
    from bot.vram import vram_reply
    from calculator.catalog import models
    from calculator.estimate import VramRequest, estimate

    def once(model: str) -> float:
        start = time.perf_counter()
        to_markdown(vram_reply(estimate(VramRequest(model=model, gpu="4090"))))
        return (time.perf_counter() - start) * 1000

    once("qwen2.5-coder-32b-awq")
    repeated = statistics.median(once("qwen2.5-coder-32b-awq") for _ in range(n))
    ids = [m.id for m in models()]
    first = statistics.median(once(m) for m in ids)
    return repeated, first, len(ids)


def report(mib: int, runs: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # a validated-data cache of this checkout's own (a shared one may hold other versions' entries),
        # filled before anything is measured, as in an installed copy
        os.environ["GPU_GARDEN_CACHE_DIR"] = str(folder / "cache")
        warm = folder / "warm.log"
        warm.write_text(ONE_LINE)
        run_measured(triage_command(warm))
        rows, tool, count = scan_rows(mib << 20, runs, folder)
        cold = cold_rows(max(5, runs * 2), folder)
    repeated, first, models = vram_warm_ms()
    lines = [
        f"Machine: {describe()}; load average {os.getloadavg()[0]:.1f} when it ran. Medians of {runs} paired "
        f"runs; project modules byte-compiled and the validated-data cache filled, as in an installed copy.",
        "",
        f"Scanning {mib} MiB, the whole `gpu-garden triage FILE` process against {tool} with the same "
        f"{count} patterns in one pass (`--count`, so it reads everything). *Linear* is the time at "
        f"{mib} MiB over the time at {mib / 2:g} MiB (2.00× = linear).",
        "",
        f"| input ({mib} MiB) | {tool} | triage, whole process | ratio | `detect()` in-process | linear | "
        "triage peak RSS |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Cold start, whole process:",
        "",
        "| command | median | vs bare interpreter | peak RSS |",
        "|---|---|---|---|",
        *cold,
        "",
        "`/vram` warm, in-process (estimate + reply + Markdown): the same request repeated 300 times, median "
        f"{repeated:.2f} ms; the first request for each of the {models} catalog models on an RTX 4090, median "
        f"{first:.2f} ms.",
    ]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = (
            text.rstrip("\n")
            + "\n\n## Speed against ripgrep — `bench/detector_vs_grep.py`\n\n"
            + block
            + "\n"
        )
    DOCS.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--write-docs", action="store_true", help="replace the speed section of docs/benchmarks.md"
    )
    args = parser.parse_args()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            *(str(ROOT / p) for p in ("adapters", "bot", "calculator", "knowledge")),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    section = report(args.mib, args.runs)
    print(section)
    if args.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()
