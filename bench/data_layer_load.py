"""A warm start's data layer, this checkout against another revision: the time a fresh process takes to
import and load every catalog (GPUs, models, quantisations), the engine constants, the built-in
knowledge base, the levers, the feature table and the secret rules from a filled validated-data cache,
and whether that imported pydantic or PyYAML.  The two trees' runs alternate (medians of paired runs;
a ratio under 1 means this checkout is faster).

Run: .venv/bin/python bench/data_layer_load.py REV [--runs 15]
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
from compare_revisions import revision_trees  # noqa: E402

LOAD = """
import sys, time
sys.path.insert(0, sys.argv[1])
start = time.perf_counter()
from calculator.catalog import gpus, models, quant_formats
from calculator.constants import engine_constants
from knowledge.features import feature_table
from knowledge.levers import levers
from knowledge.loader import load_builtin
from bot.secret_rules import default_rules
for load in (models, gpus, quant_formats, engine_constants, load_builtin, levers, feature_table, default_rules):
    load()
print(time.perf_counter() - start, "pydantic" in sys.modules, "yaml" in sys.modules)
"""


def load_once(tree: Path, cache: Path) -> tuple[float, bool, bool]:
    env = {**os.environ, "GPU_GARDEN_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", LOAD, str(tree)], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), out[1] == "True", out[2] == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees, caches = revision_trees(args.rev, Path(tmp))
        for name, tree in trees.items():
            load_once(tree, caches[name])  # fills the tree's cache
        seconds: dict[str, list[float]] = {name: [] for name in trees}
        imported: dict[str, tuple[bool, bool]] = {}
        for _ in range(args.runs):
            for name, tree in trees.items():
                s, pydantic, yaml = load_once(tree, caches[name])
                seconds[name].append(s)
                imported[name] = (pydantic, yaml)
        print(
            f"Machine: {describe()}; load average {os.getloadavg()[0]:.1f}. Medians of {args.runs} paired runs.\n"
        )
        print("| tree | data layer, in-process | pydantic imported | PyYAML imported |")
        print("|---|---|---|---|")
        medians = {name: statistics.median(v) for name, v in seconds.items()}
        for name in trees:
            pydantic, yaml = imported[name]
            print(f"| {name} | {medians[name] * 1000:.1f} ms | {pydantic} | {yaml} |")
        this, other = medians.values()
        print(f"\nratio (this checkout / {args.rev}): {this / other:.2f}")


if __name__ == "__main__":
    main()
