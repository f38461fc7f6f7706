"""Ollama on top of llama.cpp: its default context by VRAM, num_parallel and OLLAMA_KV_CACHE_TYPE.

Since v0.30 Ollama spawns llama-server with ``-c num_ctx*num_parallel -np num_parallel`` (unified KV
off, so every slot gets num_ctx) and lets ``--fit`` move layers; see shared/reference/llamacpp_ollama.md §3.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.catalog import ModelSpec
from calculator.constants import constant, table
from calculator.kv import KVLayout
from calculator.llamacpp import START_HEADROOM_GIB, LlamaCppBudget, LlamaCppConfig, llamacpp_budget
from calculator.plan import Outcome, Plan, Sourced, Term
from calculator.versions import ollama_estimate_windows

# Budget tables, each with its source in data/engine_constants.yaml.
DEFAULT_NUM_CTX_TIERS = [(r["min_vram_gib"], int(r["num_ctx"])) for r in table("ollama", "default_num_ctx")]
AUTO_BATCH_TIERS = [(r["ctx_above"], int(r["batch"])) for r in table("ollama", "auto_batch")]


def default_num_ctx(total_vram_gib: float, trained_ctx: int) -> int:
    """v0.15.5+: 262144 with >= 47 GiB of VRAM in total, 32768 with >= 23 GiB, else 4096; capped."""
    tier = next(
        (ctx for vram, ctx in DEFAULT_NUM_CTX_TIERS if total_vram_gib >= vram), DEFAULT_NUM_CTX_TIERS[-1][1]
    )
    return min(tier, trained_ctx)


def auto_batch(num_ctx: int) -> int:
    return next((batch for above, batch in AUTO_BATCH_TIERS if num_ctx > above), AUTO_BATCH_TIERS[-1][1])


def estimated_kv_bytes(
    model: ModelSpec, layout: KVLayout, num_ctx: int, version: tuple[int, int, int], num_parallel: int = 1
) -> float:
    """The KV cache Ollama's own estimate gives (the offload line's ``memory.required.kv``) for
    ``num_ctx`` cells in total (llm/memory.go: GraphSize(NumCtx, min(NumCtx, NumBatch), numParallel))."""
    arch = model.architecture.lower().removesuffix("forcausallm").removesuffix("forconditionalgeneration")
    total = layout.growing_bytes_per_token * num_ctx + layout.state_bytes_per_seq
    if not ollama_estimate_windows(arch, version):
        return total + sum(g.bytes_per_token for g in layout.sliding) * num_ctx
    # sliding layers: num_parallel x window + batch cells (gpt-oss: a fixed window, not the model's)
    window = int(constant("ollama", "estimate_window_gptoss")) if arch == "gptoss" else None
    batch = min(num_ctx, int(constant("ollama", "default_num_batch")))
    return total + sum(
        g.bytes_per_token * (num_parallel * (window or g.window) + batch) for g in layout.sliding
    )


@dataclass
class OllamaConfig:
    """The Ollama settings that change memory: context, parallel slots, KV type."""

    num_ctx: int | None = None  # None: Ollama's VRAM-tier default
    num_parallel: int = 1
    kv_cache_type: str = "f16"
    flash_attention: bool = True


def ollama_budget(model: ModelSpec, weight_bytes: int, total_gib: float, cfg: OllamaConfig) -> LlamaCppBudget:
    num_ctx = cfg.num_ctx or default_num_ctx(total_gib, model.max_position_embeddings)
    parallel = max(1, cfg.num_parallel)
    lcfg = LlamaCppConfig(
        n_ctx=num_ctx * parallel,
        cache_type_k=cfg.kv_cache_type,
        cache_type_v=cfg.kv_cache_type,
        n_parallel=parallel,
        kv_unified=False,
        flash_attn=cfg.flash_attention,
        n_ubatch=auto_batch(num_ctx),
    )
    budget = llamacpp_budget(model, weight_bytes, total_gib, lcfg)
    # the largest num_ctx per slot that fits
    budget.n_ctx_max_fit = budget.n_ctx_max_fit // parallel
    return budget


@dataclass
class OllamaEstimate:
    """Ollama's budget for a plan (num_ctx per slot, num_parallel, OLLAMA_KV_CACHE_TYPE, num_gpu)."""

    plan0: Plan
    device_gib: Sourced | None
    model: ModelSpec | None
    weight_bytes: int | None
    devices: int = 1

    def evaluate(self, plan: Plan) -> Outcome | None:
        if self.device_gib is None or self.model is None or not self.weight_bytes:
            return None
        total = self.device_gib.value * max(1, self.devices)
        kv_type = plan.kv_dtype if plan.kv_dtype not in ("auto", "fp8") else "f16"
        cfg = OllamaConfig(num_ctx=plan.max_len, num_parallel=max(1, plan.parallel), kv_cache_type=kv_type)
        b = ollama_budget(self.model, self.weight_bytes, total, cfg)
        starts = b.used_gib + START_HEADROOM_GIB <= total and b.n_ctx > 0
        terms = [Term("weights", b.weights_on_gpu_gib, "catalog"), Term("compute buffers", b.compute_gib, "estimated"),
                 Term("cuda context", b.overhead_gib, "estimated"), Term("kv cache", b.kv_gib, "computed")]  # fmt: skip
        why = "" if starts else "the weights and the KV cache do not fit in VRAM"
        return Outcome(starts, b.n_ctx_max_fit, b.kv_gib, b.n_ctx_max_fit, terms, total, None, why)
