"""SGLang's static memory: ``mem_fraction_static`` of the free memory holds weights + the KV pool.

``max_total_num_tokens = (pre_free * mem_fraction_static - weights) / cell_size``; the default
fraction reserves room for activations and CUDA graphs by GPU size (shared/reference/vllm_memory.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.catalog import ModelSpec
from calculator.constants import constant, table
from calculator.kv import vllm_layout
from calculator.plan import Outcome, Plan, Sourced, Term
from calculator.units import GIB

# Budget constants, each with its unit and source in data/engine_constants.yaml.
CUDA_CONTEXT_GIB = constant("sglang", "cuda_context_gib")

_TIERS = [  # (GPU memory below, GB) -> (chunked_prefill_size, decode cuda-graph max batch, with tp>=4)
    (r["below_gb"], int(r["chunked_prefill_size"]), int(r["max_bs"]), int(r["max_bs_tp4"]))
    for r in table("sglang", "tiers")
]
RESERVED_BASE_MIB = constant("sglang", "reserved_base_mib")
RESERVED_PER_CHUNK_TOKEN_MIB = constant("sglang", "reserved_per_chunk_token_mib")
RESERVED_MIN_CHUNK = constant("sglang", "reserved_min_chunk")
RESERVED_PER_8_RANKS_MIB = constant("sglang", "reserved_per_8_ranks_mib")
RESERVED_PER_GRAPH_BS_MIB = constant("sglang", "reserved_per_graph_bs_mib")
RESERVED_FLOOR_ABOVE_GB = constant("sglang", "reserved_floor_above_gb")
RESERVED_FLOOR_MIB = constant("sglang", "reserved_floor_mib")


def default_mem_fraction_static(gpu_mem_gib: float, tp: int = 1, pp: int = 1) -> float:
    gpu_mb = gpu_mem_gib * 1024
    gb = gpu_mem_gib * GIB / 1e9
    chunk, max_bs, max_bs_tp4 = next((c, b, b4) for limit, c, b, b4 in _TIERS if gb < limit)
    bs = max_bs_tp4 if tp >= 4 else max_bs
    reserved = (
        RESERVED_BASE_MIB + RESERVED_PER_CHUNK_TOKEN_MIB * max(chunk, RESERVED_MIN_CHUNK)
        + tp * pp / 8 * RESERVED_PER_8_RANKS_MIB + RESERVED_PER_GRAPH_BS_MIB * bs
    )  # fmt: skip
    if gb > RESERVED_FLOOR_ABOVE_GB:
        reserved = max(reserved, RESERVED_FLOOR_MIB)
    return round((gpu_mb - reserved) / gpu_mb, 3)


@dataclass
class SGLangBudget:
    """SGLang's static pool: the fraction, the weights, and the KV tokens it holds."""

    total_gib: float
    mem_fraction_static: float
    weights_gib: float
    kv_pool_gib: float
    cell_size_bytes: float
    max_total_num_tokens: int
    context_length: int
    fits: bool


def sglang_budget(
    model: ModelSpec,
    weight_bytes: int,
    total_gib: float,
    tp: int = 1,
    mem_fraction_static: float | None = None,
    kv_cache_dtype: str = "auto",
    context_length: int | None = None,
) -> SGLangBudget:
    msf = mem_fraction_static or default_mem_fraction_static(total_gib, tp)
    pre_free = total_gib - CUDA_CONTEXT_GIB
    weights = weight_bytes / tp / GIB
    pool = pre_free * msf - weights
    cell = vllm_layout(model, kv_cache_dtype, tp=tp).all_attention_bytes_per_token
    tokens = int(max(0.0, pool) * GIB // cell) if cell else 0
    ctx = context_length or model.max_position_embeddings
    return SGLangBudget(
        total_gib=total_gib,
        mem_fraction_static=msf,
        weights_gib=weights,
        kv_pool_gib=pool,
        cell_size_bytes=cell,
        max_total_num_tokens=tokens,
        context_length=ctx,
        fits=tokens > ctx,
    )


def mem_fraction_for_tokens(
    tokens: int, cell_size_bytes: float, weights_gib: float, total_gib: float
) -> float:
    """The mem_fraction_static that gives a KV pool of ``tokens``."""
    pre_free = total_gib - CUDA_CONTEXT_GIB
    return (weights_gib + tokens * cell_size_bytes / GIB) / pre_free


@dataclass
class SglangEstimate:
    """SGLang's static pool for a plan (mem_fraction_static, context_length, kv dtype, tp)."""

    plan0: Plan
    device_gib: Sourced | None
    model: ModelSpec | None
    weight_bytes: int | None

    def evaluate(self, plan: Plan) -> Outcome | None:
        if self.device_gib is None or self.model is None or not self.weight_bytes:
            return None
        kv = "fp8" if plan.kv_dtype.startswith("fp8") else "auto"
        b = sglang_budget(
            self.model, self.weight_bytes, self.device_gib.value, plan.tp, plan.util, kv, plan.max_len
        )
        starts = b.kv_pool_gib > 0 and b.max_total_num_tokens >= min(b.context_length, MIN_POOL_TOKENS)
        fit = b.max_total_num_tokens
        terms = [
            Term("weights", b.weights_gib, "catalog"),
            Term("kv cache", max(0.0, b.kv_pool_gib), "computed"),
        ]
        why = "" if starts else "the KV pool is empty after the weights"
        return Outcome(starts, fit, b.kv_pool_gib, fit, terms, self.device_gib.value,
                       self.device_gib.value * b.mem_fraction_static, why)  # fmt: skip


# below this a context_length fix is not worth printing
MIN_POOL_TOKENS = int(constant("sglang", "min_pool_tokens"))
