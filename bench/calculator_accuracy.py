"""How close the calculator comes to what engines printed, next to two common peer formulas.

For every record of the development corpus that carries logged numbers, prints logged vs predicted and
the absolute error; then the median absolute error per method.

- pure KV math: the model is known and the KV budget is in the log -> tokens/blocks/MiB the engine printed;
- full budget: GPU + model + flags -> the KV budget (or blocks) the engine printed (our weakest link:
  activation and non-torch memory are estimated);
- peers: "params x bytes x 1.2" for the budget, and KV bytes per token without grouped-query attention.

Run: .venv/bin/python bench/calculator_accuracy.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calculator.catalog import GPU, models, variant_weight_bytes  # noqa: E402
from calculator.kv import llamacpp_layout, vllm_layout  # noqa: E402
from calculator.llamacpp import LlamaCppConfig, kv_bytes  # noqa: E402
from calculator.resolve import resolve_gpu  # noqa: E402
from calculator.units import GIB, MIB  # noqa: E402
from calculator.vllm import VllmConfig, kv_capacity, vllm_budget  # noqa: E402

CORPUS = next(
    p for p in (ROOT.parent / "shared/corpus/dev.jsonl", ROOT / "tests/data/dev.jsonl") if p.is_file()
)
RECORDS = {r["id"]: r for r in map(json.loads, CORPUS.read_text().splitlines()) if r}


def model(mid: str):
    return next(m for m in models() if m.id == mid)


def no_gqa_bpt(m, tp: int = 1) -> float:
    """The classic peer formula: 2 x layers x hidden x 2 bytes (every attention head keeps K and V)."""
    return 2 * m.num_hidden_layers * m.num_attention_heads * m.head_dim * 2 / tp


def peer_budget_gib(total: float, util: float, weight_bytes: float, tp: int) -> float:
    """The other classic: the model needs params x bytes x 1.2; what is left of total x util is KV."""
    return total * util - weight_bytes * 1.2 / tp / GIB


def pct(pred: float, logged: float) -> float:
    return abs(pred - logged) / logged * 100 if logged else float("nan")


rows: list[tuple[str, str, float, float, float | None, float | None]] = []


def add(
    record: str, what: str, logged: float, ours: float, peer_a: float | None, peer_b: float | None
) -> None:
    assert record in RECORDS, record
    rows.append((record, what, logged, ours, peer_a, peer_b))


# ---- pure KV math ------------------------------------------------------------------------------
for rid, mid, kv_gib, v0, unit, logged in [
    ("vllm10517-29k-bad", "meta-llama/Llama-3.1-8B-Instruct", 2.89, True, "tokens", 23648),
    ("vllm10517-20k-ok", "meta-llama/Llama-3.1-8B-Instruct", 3.81, True, "blocks", 1952),
    ("lmcache1739-qwen3-14b", "Qwen/Qwen3-14B", 6.51, False, "tokens", 42656),
    ("repofile-qwen25-15b-t4-colab", "Qwen/Qwen2.5-1.5B-Instruct", 2.36, True, "blocks", 5517),
]:
    m = model(mid)
    blocks, tokens, _fit, _c = kv_capacity(vllm_layout(m), kv_gib, 32768, v0=v0)
    ours = tokens if unit == "tokens" else blocks
    peer_tokens = kv_gib * GIB / no_gqa_bpt(m)
    peer = peer_tokens if unit == "tokens" else peer_tokens / 16
    add(rid, f"vLLM {unit} from logged {kv_gib} GiB KV", logged, ours, None, peer)

m = model("Qwen/Qwen3-14B")
add(
    "lmcache1739-qwen3-14b",
    "vLLM concurrency at 32,768",
    1.30,
    kv_capacity(vllm_layout(m), 6.51, 32768)[3],
    None,
    6.51 * GIB / no_gqa_bpt(m) / 32768,
)

m = model("mistralai/Mistral-Nemo-Instruct-2407")
add(
    "aphrodite1320-pixtral-48gb-breakdown",
    "KV GiB for 8,192 tokens (Pixtral text = Nemo)",
    1.25,
    vllm_layout(m).all_attention_bytes_per_token * 8192 / GIB,
    None,
    no_gqa_bpt(m) * 8192 / GIB,
)

m = model("google/gemma-3-12b-it")
add(
    "ollama11819-ctx2048-kv608",
    "Ollama KV MiB at num_ctx 2048 (gemma3:12b)",
    608.0,
    kv_bytes(llamacpp_layout(m), 2048, LlamaCppConfig(n_ctx=2048, n_ubatch=512)) / MIB,
    None,
    no_gqa_bpt(m) * 2048 / MIB,
)

m = model("Qwen/Qwen1.5-72B-Chat")
add(
    "xinference1202-qwen15-72b-q3-kv-alloc",
    "llama.cpp KV MiB on device 0 (41 layers, n_ctx 32768 derived)",
    41984.0,
    llamacpp_layout(m).growing_bytes_per_token / m.num_hidden_layers * 41 * 32768 / MIB,
    None,
    no_gqa_bpt(m) / m.num_hidden_layers * 41 * 32768 / MIB,
)

r = RECORDS["kaito2132-h100nvl-mistral-small4"]["facts"]
add(
    "kaito2132-h100nvl-mistral-small4",
    "vLLM V1 estimated max model len from needed/available GiB",
    r["estimated_max_model_len"],
    int(r["kv_cache_gib"] / r["kv_needed_gib"] * r["max_seq_len"]),
    None,
    None,
)


# ---- full budget: GPU + model + flags ----------------------------------------------------------
def full(rid: str, what: str, mid: str, gpu: GPU, cfg: VllmConfig, logged: float, unit: str) -> None:
    m = model(mid)
    variant = next((v for v in m.variants if v.id == m.id), None)
    wbytes = variant_weight_bytes(m, variant)
    b = vllm_budget(m, gpu, wbytes, cfg)
    util = b.utilization
    peer_gib = peer_budget_gib(b.total_gib, util, wbytes, cfg.tp)
    if unit == "gib":
        add(rid, what, logged, b.kv_cache_gib, peer_gib, None)
    else:
        peer_blocks = max(0.0, peer_gib) * GIB / (b.kv_bytes_per_token * 16)
        add(rid, what, logged, b.num_blocks, peer_blocks, None)


full(
    "vllm10517-29k-bad",
    "KV GiB: 3090, Llama-3.1-8B, len 29000 (V0)",
    "meta-llama/Llama-3.1-8B-Instruct",
    resolve_gpu("3090"),
    VllmConfig(max_model_len=29000, version="0.6.3"),
    2.89,
    "gib",
)
full(
    "vllm10517-20k-ok",
    "KV GiB: 3090, Llama-3.1-8B, len 20000 (V0)",
    "meta-llama/Llama-3.1-8B-Instruct",
    resolve_gpu("3090"),
    VllmConfig(max_model_len=20000, version="0.6.3"),
    3.81,
    "gib",
)
full(
    "repofile-qwen25-15b-t4-colab",
    "KV GiB: T4, Qwen2.5-1.5B, util 0.5 (v0.7.2)",
    "Qwen/Qwen2.5-1.5B-Instruct",
    resolve_gpu("t4"),
    VllmConfig(gpu_memory_utilization=0.5, version="0.7.2"),
    2.36,
    "gib",
)
full(
    "vllm2031-llama2-blocks",
    "blocks: A100-80GB, Llama-2-7B (2023 main)",
    "meta-llama/Llama-2-7b-chat-hf",
    resolve_gpu("a100-80g"),
    VllmConfig(max_model_len=4096, version="0.1.7"),
    7449,
    "blocks",
)
full(
    "vllm2031-llama2-blocks",
    "blocks: A100-80GB, Llama-2-7B (the PR's new profiler)",
    "meta-llama/Llama-2-7b-chat-hf",
    resolve_gpu("a100-80g"),
    VllmConfig(max_model_len=4096, version="0.1.7"),
    7351,
    "blocks",
)
full(
    "vllm2031-llama2-blocks",
    "blocks: 4x A100-80GB TP=4, Llama-2-70B (2023 main)",
    "meta-llama/Llama-2-70b-chat-hf",
    resolve_gpu("a100-80g"),
    VllmConfig(tp=4, max_model_len=4096, version="0.1.7"),
    31615,
    "blocks",
)
full(
    "vllm2031-llama2-blocks",
    "blocks: 4x A100-80GB TP=4, Llama-2-70B (the PR's new profiler)",
    "meta-llama/Llama-2-70b-chat-hf",
    resolve_gpu("a100-80g"),
    VllmConfig(tp=4, max_model_len=4096, version="0.1.7"),
    20865,
    "blocks",
)
full(
    "vllm5248-dscoder67b-2xt4-blocks",
    "blocks: 2x T4 TP=2, deepseek-coder-6.7b fp16 (v0.4)",
    "deepseek-ai/deepseek-coder-6.7b-instruct",
    resolve_gpu("t4"),
    VllmConfig(tp=2, version="0.4.3"),
    507,
    "blocks",
)
full(
    "vllm7593-gemma2-9b-8xl4",
    "blocks: 8x L4 TP=8, gemma-2-9b (v0.5)",
    "google/gemma-2-9b-it",
    resolve_gpu("l4"),
    VllmConfig(tp=8, version="0.5.4"),
    22982,
    "blocks",
)


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.2f}" if abs(x) < 100 else f"{x:,.0f}"


def main() -> None:
    print(
        f"{'record':42} {'quantity':58} {'logged':>10} {'ours':>10} {'err%':>6} {'x1.2':>10} {'err%':>6} {'noGQA':>10} {'err%':>6}"
    )
    ours_err: list[float] = []
    a_err: list[float] = []
    for rid, what, logged, ours, pa, pb in rows:
        e = pct(ours, logged)
        ours_err.append(e)
        ea = pct(pa, logged) if pa is not None else None
        eb = pct(pb, logged) if pb is not None else None
        if ea is not None:
            a_err.append(ea)
        print(
            f"{rid:42} {what[:58]:58} {fmt(logged):>10} {fmt(ours):>10} {e:6.1f} {fmt(pa):>10} "
            f"{'-' if ea is None else f'{ea:6.1f}':>6} {fmt(pb):>10} {'-' if eb is None else f'{eb:6.1f}':>6}"
        )
    pure = [pct(o, lg) for _r, _w, lg, o, pa, _pb in rows if pa is None]
    pure_peer = [pct(pb, lg) for _r, _w, lg, _o, pa, pb in rows if pa is None and pb is not None]
    budget = [pct(o, lg) for _r, _w, lg, o, pa, _pb in rows if pa is not None]
    print()
    print(
        f"median |error|, pure KV math ({len(pure)} checks): ours {statistics.median(pure):.2f}%, "
        f"KV without GQA (peer) {statistics.median(pure_peer):.1f}%"
    )
    print(
        f"median |error|, full budget ({len(budget)} predictions): ours {statistics.median(budget):.1f}%, "
        f"params x bytes x 1.2 (peer) {statistics.median(a_err):.1f}%"
    )


if __name__ == "__main__":
    main()
