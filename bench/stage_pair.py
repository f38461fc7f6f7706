"""One stage of a triage (``redact()``, ``normalize()``, ``detect()``, or ``triage``: ``detect()`` of what
``redact()`` returns, as the CLI and the bots run them) in this checkout against another
revision, on the 10 MiB shapes of bench/detector_vs_grep.py: two worker processes, one per tree, each
timing its own stage on the same text, their runs alternating (medians of paired runs; a ratio under 1
means this checkout is faster; CPU seconds of the worker, which the machine's other load moves less than
wall time).  Each run's output is digested, so a changed output is reported.

Run: .venv/bin/python bench/stage_pair.py REV [--stage redact|normalize|detect|triage] [--mib 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import describe  # noqa: E402
from compare_revisions import export  # noqa: E402
from detector_vs_grep import shapes  # noqa: E402

WORKER = r"""
import hashlib, sys, time
sys.path.insert(0, sys.argv[1])
from bot.detector import default_detector
from bot.normalize import normalize
from bot.redact import redact

def digest(stage, out):
    h = hashlib.sha256()
    if stage == "redact":
        h.update(out.text.encode("utf-8", "surrogatepass") + repr(out.kinds).encode())
    elif stage == "normalize":
        for view in out.views:
            h.update(view.data + repr(list(view.first_physical)).encode())
    else:
        h.update(repr([(f.signature, f.params, f.evidence, f.line) for f in out.findings]).encode())
        h.update(repr(sorted(out.context.fields.items())).encode())
    return h.hexdigest()[:16]

detect = default_detector().detect
stages = {"redact": redact, "normalize": normalize, "detect": detect, "triage": lambda t: detect(redact(t).text)}
for line in sys.stdin:
    stage, path = line.rstrip("\n").split("\t")
    text = open(path, encoding="utf-8").read()
    start = time.process_time()  # CPU seconds: less moved than wall time by the other users of the machine
    out = stages[stage](text)
    seconds = time.process_time() - start
    print(seconds, digest(stage, out), flush=True)
"""


def worker(tree: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(tree)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def ask(proc: subprocess.Popen, stage: str, path: Path) -> tuple[float, str]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{stage}\t{path}\n")
    proc.stdin.flush()
    seconds, digest = proc.stdout.readline().split()
    return float(seconds), digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--stage", choices=("redact", "normalize", "detect", "triage"), default="redact")
    parser.add_argument("--mib", type=float, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    size = int(args.mib * (1 << 20))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        other = export(args.rev, folder)
        procs = {"this": worker(ROOT), args.rev: worker(other)}
        print(describe())
        print(
            f"`{args.stage}()` on {args.mib:g} MiB, this checkout against {args.rev} ({args.runs} paired runs)\n"
        )
        print(f"| input | {args.rev} | this | ratio | same output |\n|---|---|---|---|---|")
        for name, make in shapes(size).items():
            target = folder / "input.log"
            target.write_text(make(), encoding="utf-8")
            times: dict[str, list[float]] = {k: [] for k in procs}
            digests: dict[str, set[str]] = {k: set() for k in procs}
            for _ in range(args.runs):
                for key, proc in procs.items():
                    seconds, digest = ask(proc, args.stage, target)
                    times[key].append(seconds)
                    digests[key].add(digest)
            before, now = statistics.median(times[args.rev]), statistics.median(times["this"])
            same = "yes" if digests["this"] == digests[args.rev] else "**no**"
            print(f"| {name} | {before:.3f} s | {now:.3f} s | {now / before:.2f} | {same} |")
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()


if __name__ == "__main__":
    main()
