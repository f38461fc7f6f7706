"""How close the calculator comes to engine logs it has never seen (tests/data/wild_logs.jsonl).

Every record is a real log from a public issue thread that is not in the development corpus.  Each
check goes through the project's own path, as the bot would take it: the model from the paste's own
geometry (calculator/from_log.py) or by name (calculator.resolve), the GPU from the catalog, the
engine estimate from calculator/vllm.py, sglang.py, llamacpp.py or ollama.py.  A check that the
calculator cannot answer counts against "answered" and says why.

- exact KV: tokens for a logged KV budget, GiB needed for a length, the longest length a budget holds,
  llama.cpp / Ollama KV MiB, SGLang tokens for a logged K size;
- full budget: GPU + model + flags -> the KV budget, tokens or weights the engine logged.

Nothing in calculator/data was fitted on these logs (engine_constants.yaml lists what each constant
was fitted on).

Run: .venv/bin/python bench/wild_accuracy.py [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.detector import detect  # noqa: E402
from bot.diagnosis.budgets import budget_for  # noqa: E402
from bot.situation import Gpus, Situation, read, resolve_pasted_model  # noqa: E402
from calculator.catalog import GPU, ModelSpec, Variant  # noqa: E402
from calculator.from_log import read_log  # noqa: E402
from calculator.kv import llamacpp_layout, vllm_layout  # noqa: E402
from calculator.llamacpp import LlamaCppConfig, kv_bytes  # noqa: E402
from calculator.ollama import estimated_kv_bytes  # noqa: E402
from calculator.plan import Sourced  # noqa: E402
from calculator.resolve import NameNotFound, resolve_gpu, resolve_model  # noqa: E402
from calculator.spec_decode import SpecDecode  # noqa: E402
from calculator.units import GIB, MIB  # noqa: E402
from calculator.versions import CURRENT_OLLAMA, CURRENT_VLLM, parse_version, vllm_is_v0  # noqa: E402
from calculator.vllm import (  # noqa: E402
    BLOCK_SIZE,
    MLA_BLOCK_SIZE,
    VllmEstimate,
    kv_capacity,
    kv_check_layout,
    kv_needed_bytes,
    longest_len_for,
    reported_kv_tokens,
)

DATA = ROOT / "tests/data/wild_logs.jsonl"
DOCS = ROOT / "docs/benchmarks.md"
BEGIN = "<!-- wild-accuracy:begin (bench/wild_accuracy.py --write-docs) -->"
END = "<!-- wild-accuracy:end -->"
EXACT = {
    "vllm_tokens_from_kv",
    "vllm_kv_needed_gib",
    "vllm_est_max_len",
    "vllm_concurrency",
    "sglang_tokens_from_kv",
    "llamacpp_kv_mib",
    "ollama_kv_mib",
}
BUDGET = {
    "vllm_budget_kv_gib",
    "vllm_budget_tokens",
    "vllm_budget_blocks",
    "vllm_weights_gib",
    "sglang_budget_tokens",
}


class Unanswered(Exception):
    """The calculator cannot answer this check; the message says why."""


@dataclass
class Row:
    record: str
    kind: str
    logged: float
    ours: float | None
    why: str = ""

    @property
    def error(self) -> float | None:
        if self.ours is None or not self.logged:
            return None
        return abs(self.ours - self.logged) / abs(self.logged) * 100


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


# ---- what the bot would know: the model, its weights, the GPU ----------------------------------
def model_of(rec: dict[str, Any]) -> tuple[ModelSpec, Variant | None]:
    found = read_log(rec["text"])
    if found is not None and found.spec is not None:
        return found.spec, found.variant
    name = rec.get("model")
    if not name:
        raise Unanswered("the thread names no model")
    engine = {"aphrodite": "vllm"}.get(rec["engine"], rec["engine"])  # a vLLM fork
    try:
        match = resolve_model(name, engine)
    except NameNotFound as e:
        raise Unanswered(f"model {name!r} is not in the catalog") from e
    return match.model, match.variant


def gpu_of(rec: dict[str, Any]) -> GPU:
    if not rec.get("gpu"):
        raise Unanswered("the thread names no GPU")
    try:
        return resolve_gpu(rec["gpu"])
    except NameNotFound as e:
        raise Unanswered(f"GPU {rec['gpu']!r} not resolved: {str(e)[:60]}") from e


def bot_version(rec: dict[str, Any]) -> tuple[int, int, int] | None:
    """The release the bot infers from the paste (bot/situation.py: printed, else the V0/V1 wording and
    markers of knowledge/features.yaml, else the error's wording); None when it infers none."""
    detection = detect(rec["text"])
    if detection.root is None:
        return None
    return read(detection, detection.root).version


def bot_spec(rec: dict[str, Any]) -> SpecDecode | None:
    """The speculative config the bot reads from the paste (bot/situation.py), as a reply uses it."""
    detection = detect(rec["text"])
    return read(detection, detection.root).spec if detection.root is not None else None


def exact_spec(rec: dict[str, Any]) -> SpecDecode | None:
    """The speculative config an exact check counts: the paste's, else the one the thread's own
    configuration names where the paste cuts it off (the record's flags, with their source), as the
    exact checks take the thread's other flags."""
    stated = (rec.get("flags") or {}).get("speculative_config")
    if (spec := bot_spec(rec)) is not None or stated is None:
        return spec
    return SpecDecode(stated["method"], int(stated["num_speculative_tokens"]))


def flags(rec: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    f = dict(rec.get("flags") or {})
    printed = check.get("version") or rec.get("version")
    version = printed if printed and any(c.isdigit() for c in printed.split()[0]) else None
    inferred = bot_version(rec) if version is None else None
    f["version"] = ".".join(map(str, inferred or parse_version(version, CURRENT_VLLM)))
    f["tp"] = int(f.get("tp", 1))  # data-parallel + expert-parallel ranks keep the whole attention
    f["pp"] = int(f.get("pp", 1))
    f["kv"] = f.get("kv_cache_dtype", "auto")
    return f


def block_of(model: ModelSpec) -> int:
    return MLA_BLOCK_SIZE if model.mla else BLOCK_SIZE


# ---- exact KV -------------------------------------------------------------------------------------
def vllm_exact(rec: dict[str, Any], check: dict[str, Any]) -> float:
    model, _variant = model_of(rec)
    f = flags(rec, check)
    version = parse_version(f["version"], CURRENT_VLLM)
    v0 = vllm_is_v0(version)
    max_len = int(check.get("max_model_len") or f.get("max_model_len") or model.max_position_embeddings)
    batched = int(f.get("max_num_batched_tokens", 2048))
    block = block_of(model)
    kind = check["kind"]
    spec = None if v0 else exact_spec(rec)
    if kind in ("vllm_kv_needed_gib", "vllm_est_max_len"):
        lay = kv_check_layout(model, f["kv"], f["tp"], f["pp"], version, spec)
        if kind == "vllm_kv_needed_gib":
            return kv_needed_bytes(lay, max_len, block, batched) / GIB
        return longest_len_for(lay, check["kv_gib"] * GIB, block, batched)
    lay = vllm_layout(model, f["kv"], f["tp"], f["pp"], spec)
    blocks, tokens, _fit, conc = kv_capacity(lay, check["kv_gib"], max_len, block, batched, v0, f["pp"])
    if kind == "vllm_concurrency":
        return conc
    if check.get("unit") == "blocks":
        return blocks
    return reported_kv_tokens(lay, tokens, conc, max_len, v0)


def sglang_exact(rec: dict[str, Any], check: dict[str, Any]) -> float:
    model, _variant = model_of(rec)
    f = flags(rec, check)
    k_bytes = vllm_layout(model, f["kv"], tp=f["tp"]).all_attention_bytes_per_token / 2
    return int(check["k_size_gb"] * GIB // k_bytes)


def llamacpp_exact(rec: dict[str, Any], check: dict[str, Any]) -> float:
    model, _variant = model_of(rec)
    if check["kind"] == "ollama_kv_mib":  # Ollama's own estimate, at the release the paste ran
        version = parse_version(flags(rec, check)["version"], CURRENT_OLLAMA)
        return estimated_kv_bytes(model, llamacpp_layout(model), check["num_ctx"], version) / MIB
    lay = llamacpp_layout(model, check.get("type_k", "f16"), check.get("type_v", "f16"))
    return kv_bytes(lay, check["n_ctx"], LlamaCppConfig(n_ctx=check["n_ctx"])) / MIB


# ---- full budget: the bot's own path -------------------------------------------------------------
# What a check asks for is taken out of the paste before the bot reads it (a logged KV budget cannot
# answer "what KV budget"); every other figure the paste logs is used as the bot uses it.
KV_OUTPUTS = ("kv_cache_gib", "kv_deficit_gib", "kv_tokens", "gpu_blocks", "num_gpu_blocks",
              "estimated_max_model_len", "max_concurrency", "k_cache_gib", "v_cache_gib")  # fmt: skip
ANSWERS = {
    "vllm_weights_gib": ("weights_gib",),
    "vllm_budget_kv_gib": KV_OUTPUTS,
    "vllm_budget_tokens": KV_OUTPUTS,
    "vllm_budget_blocks": KV_OUTPUTS,
    "sglang_budget_tokens": KV_OUTPUTS,
}
# the thread's own words for what the paste does not print (model, GPU, flags), as settings
THREAD_SETTINGS = {
    "gpu_memory_utilization": "util", "mem_fraction_static": "util", "tp": "tp", "pp": "pp",
    "max_model_len": "max_len", "kv_cache_dtype": "kv_dtype", "max_num_seqs": "max_seqs",
    "max_num_batched_tokens": "batched_tokens",
}  # fmt: skip


def situation_of(rec: dict[str, Any], check: dict[str, Any]) -> Situation:
    """The situation the bot reads from the paste (bot/situation.py), the checked figure left out, and
    the thread's words (model, GPU, flags) where the paste does not say them."""
    detection = detect(rec["text"])
    if detection.root is None:
        raise Unanswered("the bot finds no known issue in the paste")
    s = read(detection, detection.root)
    hidden = ANSWERS[check["kind"]]
    settings = dict(s.settings)
    for name, setting in THREAD_SETTINGS.items():
        value = (rec.get("flags") or {}).get(name)
        if value is not None and setting not in settings:
            settings[setting] = Sourced(value, "user", "the thread")
    model = s.model
    if model is None and rec.get("model"):
        try:
            model = resolve_pasted_model(rec["model"])
        except NameNotFound as e:
            raise Unanswered(f"model {rec['model']!r} is not in the catalog") from e
    if model is None:
        raise Unanswered("neither the paste nor the thread names a model the bot knows")
    gpus = s.gpus
    if gpus.gpu is None and rec.get("gpu"):
        gpu = gpu_of(rec)
        total = gpus.per_device_gib or Sourced(round(gpu.total_gib, 2), "catalog", gpu.name)
        gpus = Gpus(gpus.count, Sourced(rec["gpu"], "user"), total, gpu)
    printed = check.get("version") or rec.get("version")
    if s.version is None and printed and any(c.isdigit() for c in printed.split()[0]):
        s = replace(s, version=parse_version(printed, CURRENT_VLLM))  # the thread's words
    return replace(
        s,
        params={k: v for k, v in s.params.items() if k not in hidden},
        context={k: v for k, v in s.context.items() if k not in hidden},
        settings=settings,
        model=model,
        gpus=gpus,
    )


def vllm_full(rec: dict[str, Any], check: dict[str, Any]) -> float:
    s = situation_of(rec, check)
    budget = budget_for(s, "vllm")
    assert budget is not None and isinstance(budget.estimate, VllmEstimate)
    est, plan = budget.estimate, budget.plan0
    if check["kind"] == "vllm_weights_gib":
        term = est.weights(plan)
        if term is None:
            raise Unanswered("no weight size for the model")
        return term.gib
    out = est.evaluate(plan)
    if out is None:
        raise Unanswered("the bot's vLLM estimate has no budget for this situation")
    if check["kind"] == "vllm_budget_tokens":
        return out.kv_tokens
    if check["kind"] == "vllm_budget_blocks":
        return out.kv_tokens // block_of(s.model.model) if s.model else 0
    return out.kv_gib


def sglang_full(rec: dict[str, Any], check: dict[str, Any]) -> float:
    s = situation_of(rec, check)
    budget = budget_for(s, "sglang")
    out = budget.estimate.evaluate(budget.plan0) if budget is not None else None
    if out is None:
        raise Unanswered("the bot's SGLang estimate has no budget for this situation (GPU unknown)")
    return out.kv_tokens


RUNNERS = {
    "vllm_tokens_from_kv": vllm_exact,
    "vllm_kv_needed_gib": vllm_exact,
    "vllm_est_max_len": vllm_exact,
    "vllm_concurrency": vllm_exact,
    "sglang_tokens_from_kv": sglang_exact,
    "llamacpp_kv_mib": llamacpp_exact,
    "ollama_kv_mib": llamacpp_exact,
    "vllm_budget_kv_gib": vllm_full,
    "vllm_budget_tokens": vllm_full,
    "vllm_budget_blocks": vllm_full,
    "vllm_weights_gib": vllm_full,
    "sglang_budget_tokens": sglang_full,
}


def run_check(rec: dict[str, Any], check: dict[str, Any]) -> Row:
    try:
        ours = float(RUNNERS[check["kind"]](rec, check))
    except Unanswered as e:
        return Row(rec["id"], check["kind"], check["logged"], None, str(e))
    except (ValueError, KeyError) as e:  # the calculator refused the input: unanswered, with the reason
        return Row(rec["id"], check["kind"], check["logged"], None, f"{type(e).__name__}: {e}"[:120])
    return Row(rec["id"], check["kind"], check["logged"], ours)


def rows() -> list[Row]:
    return [run_check(r, c) for r in records() for c in r["checks"]]


# ---- report ------------------------------------------------------------------------------------
def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.2f}" if abs(x) < 100 else f"{x:,.0f}"


def summary(all_rows: list[Row]) -> dict[str, Any]:
    answered = [r for r in all_rows if r.ours is not None]
    exact = [r.error for r in answered if r.kind in EXACT and r.error is not None]
    budget = [r.error for r in answered if r.kind in BUDGET and r.error is not None]
    return {
        "records": len(records()),
        "checks": len(all_rows),
        "answered": len(answered),
        "exact_n": len(exact),
        "exact_median": statistics.median(exact) if exact else float("nan"),
        "exact_max": max(exact) if exact else float("nan"),
        "exact_within_2": sum(e <= 2 for e in exact),
        "budget_n": len(budget),
        "budget_median": statistics.median(budget) if budget else float("nan"),
    }


def table(all_rows: list[Row]) -> list[str]:
    out = ["| record | check | logged | ours | error |", "|---|---|---:|---:|---:|"]
    for r in all_rows:
        err = "-" if r.error is None else f"{r.error:.2f} %"
        ours = fmt(r.ours) if r.ours is not None else f"not answered: {r.why}"
        out.append(f"| {r.record} | {r.kind} | {fmt(r.logged)} | {ours} | {err} |")
    return out


def headline(s: dict[str, Any]) -> list[str]:
    pct = s["answered"] / s["checks"] * 100 if s["checks"] else 0.0
    return [
        f"- records: {s['records']} logs, {s['checks']} checks; answered {s['answered']}/{s['checks']} ({pct:.0f} %)",
        f"- exact KV ({s['exact_n']} answered): median error {s['exact_median']:.2f} %, "
        f"max {s['exact_max']:.2f} %, {s['exact_within_2']}/{s['exact_n']} within 2 %",
        f"- full budget ({s['budget_n']} answered): median error {s['budget_median']:.1f} %",
    ]


def write_docs(lines: list[str]) -> None:
    text = DOCS.read_text()
    block = "\n".join([BEGIN, *lines, END])
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-docs", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    all_rows = rows()
    s = summary(all_rows)
    lines = [*headline(s), "", *table(all_rows)]
    if args.write_docs:
        write_docs(lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
