"""Regenerate knowledge/log_lines.yaml: the source line of each logger call a vLLM paste commonly shows,
release by release.

    python scripts/log_lines_table.py SRC_ROOT > knowledge/log_lines.yaml

SRC_ROOT holds one directory per release, named by its version, each with that release's ``vllm/``
package (a checkout of each release tag of github.com/vllm-project/vllm, or the PyPI sdist
``vllm-X.Y.Z.tar.gz`` unpacked, or the release's wheel where it has no sdist).  Releases are ordered by version; only final releases (x.y.z and .postN) are read.

The line vLLM prints is ``logging``'s ``lineno``: the frame's current line when the logger is called.
On Python 3.8 and later that is the first line of a call spanning several lines (3.7 reported its last
line); 3.10 and later report the line of the method name when ``logger`` and ``.info(`` sit on two
lines, 3.8/3.9 the line of ``logger``: both are recorded.  ``info_once`` / ``warning_once`` log with
``stacklevel=3`` (vllm/logger.py), so they report their caller's line like a plain call.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

# (stem, basenames): a stem is text every release's message holds; the basenames are the files that print
# it (v0 worker/worker.py, v1 worker/gpu_worker.py, ...), read in every directory of the package
STEMS: dict[str, tuple[str, ...]] = {
    "KV cache size:": ("kv_cache_utils.py",),
    "Maximum concurrency for": ("kv_cache_utils.py", "executor_base.py"),
    "Available KV cache memory": ("gpu_worker.py",),
    "Initializing a V1 LLM engine": ("core.py",),
    "Initializing a V0 LLM engine": ("llm_engine.py",),
    "Initializing an LLM engine": ("llm_engine.py",),
    "non-default args": ("api_utils.py", "utils.py", "cli_args.py", "api_server.py"),
    "Model loading took": ("gpu_model_runner.py",),
    "Loading model weights took": ("model_runner.py",),
    "Memory profiling takes": ("worker.py", "gpu_worker.py"),
    "Starting to load model": ("model_runner.py", "gpu_model_runner.py"),
    "Graph capturing finished": ("model_runner.py", "gpu_model_runner.py"),
    "Capturing cudagraphs for decoding": ("model_runner.py",),
    "Capturing the model for CUDA graphs": ("model_runner.py",),
    "CUDA graph memory profiling is": ("gpu_worker.py",),
    "Loading weights took": ("loader.py", "default_loader.py"),
    "Automatically detected platform": ("__init__.py",),
    "vLLM API server version": ("api_server.py",),
    "EngineCore failed to start": ("core.py",),
    "EngineCore hit an exception": ("core.py",),
    "EngineCore encountered a fatal error": ("core.py",),
    "WorkerProc was terminated": ("multiproc_executor.py",),
    "# GPU blocks:": ("gpu_executor.py", "executor_base.py", "distributed_gpu_executor.py"),
}
LOGGER_METHODS = {"debug", "info", "warning", "error", "exception", "critical",
                  "info_once", "warning_once", "debug_once", "error_once"}  # fmt: skip
FINAL = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:\.post[0-9]+)?$")


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"[0-9]+", v))


def template(node: ast.expr) -> str:
    """The literal text of a logger call's message; a formatted value becomes ``{}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(template(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template(node.left) + template(node.right)
    return ""


def call_lines(tree: ast.AST) -> list[tuple[str, set[int]]]:
    """Every logger call's (message text, the lines Python 3.8+ may report for it)."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in LOGGER_METHODS or not node.args:
            continue
        lines = {node.lineno, node.func.end_lineno or node.lineno}
        out.append((template(node.args[0]), lines))
    return out


def release_rows(pkg: Path) -> set[tuple[str, str, int]]:
    """(stem, basename, line) of every stem's logger calls in one release's package."""
    wanted = {b for bases in STEMS.values() for b in bases}
    rows = set()
    for path in pkg.rglob("*.py"):
        if path.name not in wanted:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for text, lines in call_lines(tree):
            for stem, bases in STEMS.items():
                if path.name in bases and stem in text:
                    rows.update((stem, path.name, line) for line in lines)
    return rows


def ranges(releases: list[str], present: dict[tuple[str, str, int], set[int]]) -> list[dict[str, object]]:
    """Consecutive releases with the same line merged: since (first), until (first without; absent
    while the newest release read still has it)."""
    out: list[dict[str, object]] = []
    for (stem, base, line), idx in sorted(present.items(), key=lambda kv: (kv[0][:2], min(kv[1]), kv[0][2])):
        run: list[int] = []
        for i in [*sorted(idx), -2]:
            if run and i != run[-1] + 1:
                row: dict[str, object] = {"stem": stem, "file": base, "line": line, "since": releases[run[0]]}
                if run[-1] + 1 < len(releases):
                    row["until"] = releases[run[-1] + 1]
                out.append(row)
                run = []
            if i >= 0:
                run.append(i)
    return sorted(out, key=lambda r: (r["stem"], r["file"], releases.index(str(r["since"])), r["line"]))


def main(root: Path) -> None:
    releases = sorted(
        (d.name for d in root.iterdir() if FINAL.match(d.name) and (d / "vllm").is_dir()), key=version_key
    )
    present: dict[tuple[str, str, int], set[int]] = {}
    for i, release in enumerate(releases):
        for key in release_rows(root / release / "vllm"):
            present.setdefault(key, set()).add(i)
    print(HEADER.rstrip())
    listed = textwrap.wrap(", ".join(f'"{r}"' for r in releases), 104)
    print("releases: [\n  " + "\n  ".join(listed) + "]")
    print("lines:")
    for row in ranges(releases, present):
        until = f', until: "{row["until"]}"' if "until" in row else ""
        print(
            f'  - {{stem: "{row["stem"]}", file: {row["file"]}, line: {row["line"]}, '
            f'since: "{row["since"]}"{until}}}'
        )


HEADER = """
# The source line of each logger call vLLM pastes commonly show, by release: a "[file.py:line]" a paste
# prints with a message holding `stem` exists in releases since <= r < until (until absent: still in the
# newest release read).  Generated by scripts/log_lines_table.py from the `vllm/` package of every final
# release in `releases` (PyPI's vllm-X.Y.Z.tar.gz, the wheel for the releases with no sdist: 0.3.2,
# 0.4.0, 0.4.0.post1, 0.15.0, 0.15.1); regenerate it rather than editing it.  The line is logging's
# lineno: Python 3.8+ reports a call spanning lines at its first line.  Checked against every paste in
# tests/data and the dev corpus that prints its version (tests/knowledge/test_log_lines.py).
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
