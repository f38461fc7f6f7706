"""Cold starts only, this checkout against another revision: the bare interpreter, ``vram --gpu 4090 --model
qwen2.5-coder-32b-awq`` and ``triage`` of a one-line paste, the two trees' runs alternating.  Each run is
reported as wall time and as CPU time (user + system of the process): on a shared, loaded machine the
CPU time moves far less than the wall time, so the ratios are read from it.  Then, for both trees, the
import time of the project's own modules and of pydantic in each command (``-X importtime``).

Run: .venv/bin/python bench/cold_start.py REV [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _machine import describe  # noqa: E402
from compare_revisions import VRAM_JOB, command, revision_trees  # noqa: E402
from detector_vs_grep import ONE_LINE  # noqa: E402

JOBS = {f"`{' '.join(VRAM_JOB)}`": VRAM_JOB, "`triage` of a one-line paste": ["triage", "-"]}
_TIMED = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], input=sys.stdin.buffer.read(), stdout=subprocess.DEVNULL, check=True)\n"
    "t = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(t, r.ru_utime + r.ru_stime)\n"
)
FAMILY = ("pydantic", "pydantic_core", "pydantic_settings", "typing_inspection", "annotated_types")
PROJECT = ("adapters", "bot", "calculator", "knowledge")


def import_ms(cmd: list[str]) -> tuple[float, float]:
    """``-X importtime`` of one run: the project's own modules (their self time: module bodies, model
    classes built at import) and pydantic (the cumulative time of each pydantic-family module whose
    importer is not one, so its own imports, its plugin lookup's ``importlib.metadata`` included, count
    once).  Validation after import is in neither."""
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], input=ONE_LINE.encode(), capture_output=True
    )
    rows = []
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, cum, name = line.split(":", 1)[1].split("|")
            rows.append((len(name) - len(name.lstrip()), name.strip(), int(own), int(cum)))
    project = pydantic = 0
    for i, (depth, name, own, cum) in enumerate(rows):
        parent = next((n for d, n, _, _ in rows[i + 1 :] if d < depth), "")
        if name.split(".")[0] in FAMILY and parent.split(".")[0] not in FAMILY:
            pydantic += cum
        project += own if name.split(".")[0] in PROJECT else 0
    return project / 1000, pydantic / 1000


def timed(cmd: list[str]) -> tuple[float, float]:
    proc = subprocess.run([sys.executable, "-c", _TIMED, *cmd], input=ONE_LINE.encode(), capture_output=True)
    wall, cpu = proc.stdout.split()
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees, caches = revision_trees(args.rev, Path(tmp))
        for name, tree in trees.items():  # each tree's validated-data cache, filled first
            os.environ["GPU_GARDEN_CACHE_DIR"] = str(caches[name])
            for job in JOBS.values():
                timed(command(tree, job))
        rows = {"bare interpreter": {name: [sys.executable, "-c", "pass"] for name in trees}}
        rows |= {
            label: {name: command(tree, job) for name, tree in trees.items()} for label, job in JOBS.items()
        }
        print(
            f"Machine: {describe()}; load average {os.getloadavg()[0]:.1f}. Medians of {args.runs} paired runs.\n"
        )
        print(f"| whole process | this checkout: wall / CPU | {args.rev}: wall / CPU | CPU ratio |")
        print("|---|---|---|---|")
        for label, cmds in rows.items():
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            for _ in range(args.runs):
                for name, cmd in cmds.items():
                    os.environ["GPU_GARDEN_CACHE_DIR"] = str(caches[name])
                    runs[name].append(timed(cmd))
            wall, cpu = ({n: statistics.median(x[k] for x in runs[n]) for n in trees} for k in (0, 1))
            this, other = (cpu[n] for n in trees)
            cells = [f"{wall[n]:.3f} s / {cpu[n]:.3f} s" for n in trees]
            print(f"| {label} | {cells[0]} | {cells[1]} | {this / other:.2f} |")
        os.environ["GPU_GARDEN_CACHE_DIR"] = str(caches["this checkout"])
        print("\nImport time, `-X importtime` (medians of the runs; wall, so read side by side):\n")
        print(f"| command | project modules: this / {args.rev} | pydantic: this / {args.rev} |")
        print("|---|---|---|")
        for label, job in JOBS.items():
            got = {n: [import_ms(command(t, job)) for _ in range(args.runs)] for n, t in trees.items()}
            own, pyd = ({n: statistics.median(r[k] for r in got[n]) for n in trees} for k in (0, 1))
            cells = [" / ".join(f"{m[n]:.0f} ms" for n in trees) for m in (own, pyd)]
            print(f"| {label} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
