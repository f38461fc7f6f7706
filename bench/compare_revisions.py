"""This checkout against another revision of the project, on the same machine at the same time: the
whole ``triage`` process on the 10 MiB shapes of bench/detector_vs_grep.py and the cold starts, the two
trees' runs alternating (medians of paired runs; a ratio under 1 means this checkout is faster).

The other revision is exported with ``git archive`` into a temporary folder (no worktree) and run with
this interpreter; each tree gets its own validated-data cache folder, filled before anything is timed.

Run: .venv/bin/python bench/compare_revisions.py REV [--mib 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import describe  # noqa: E402
from detector_vs_grep import ONE_LINE, run_measured, shapes  # noqa: E402


def export(rev: str, folder: Path) -> Path:
    archive = folder / "rev.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev], check=True)
    tree = folder / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tree)], check=True, stdout=subprocess.DEVNULL
    )
    return tree


VRAM_JOB = ["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq"]  # the cold /vram of every bench


def revision_trees(rev: str, folder: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """This checkout (byte-compiled, as an installed copy is) and ``rev`` exported into ``folder``, and a
    validated-data cache folder for each."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT)], check=True, stdout=subprocess.DEVNULL
    )
    trees = {"this checkout": ROOT, rev: export(rev, folder)}
    return trees, {name: folder / f"cache{i}" for i, name in enumerate(trees)}


def command(tree: Path, args: list[str]) -> list[str]:
    """This interpreter running ``adapters.cli`` of one tree (its own modules first on the path)."""
    boot = f"import sys; sys.path.insert(0, {str(tree)!r}); from adapters.cli import main; raise SystemExit(main())"
    return [sys.executable, "-c", boot, *args]


def timed(tree: Path, cache: Path, args: list[str]) -> tuple[float, int]:
    os.environ["GPU_GARDEN_CACHE_DIR"] = str(cache)
    return run_measured(command(tree, args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trees, caches = revision_trees(args.rev, folder)
        one = folder / "one.log"
        one.write_text(ONE_LINE)
        jobs = {
            "`triage` of a one-line paste": ["triage", str(one)],
            f"`{' '.join(VRAM_JOB)}`": VRAM_JOB,
        }
        for name, make in shapes(args.mib << 20).items():
            target = folder / f"{len(jobs)}.log"
            target.write_text(make(), encoding="utf-8")
            jobs[f"`triage` of {args.mib} MiB: {name}"] = ["triage", str(target)]
        for name, tree in trees.items():  # fill each tree's cache
            timed(tree, caches[name], ["triage", str(one)])
        print(
            f"Machine: {describe()}; load average {os.getloadavg()[0]:.1f}. Medians of {args.runs} paired runs.\n"
        )
        print(f"| whole process | this checkout | {args.rev} | ratio | peak RSS (this / {args.rev}) |")
        print("|---|---|---|---|---|")
        for label, job in jobs.items():
            seconds: dict[str, list[float]] = {name: [] for name in trees}
            peak = dict.fromkeys(trees, 0)
            for _ in range(args.runs):
                for name, tree in trees.items():
                    s, rss = timed(tree, caches[name], job)
                    seconds[name].append(s)
                    peak[name] = max(peak[name], rss)
            this, other = (statistics.median(seconds[n]) for n in trees)
            rss_this, rss_other = (peak[n] / 1024 for n in trees)
            print(
                f"| {label} | {this:.2f} s | {other:.2f} s | {this / other:.2f} | {rss_this:.0f} / {rss_other:.0f} MiB |"
            )


if __name__ == "__main__":
    main()
