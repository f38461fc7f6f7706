"""vLLM's memory budget: how much of a GPU ends up as KV cache, and what that buys.

Follows the worker-side accounting (see shared/reference/vllm_memory.md §1):
``available_kv = total * util - weights - non_torch - activation_peak - cudagraph_estimate``
with the CUDA-graph estimate subtracted by default only from v0.21.  Blocks are 16 tokens (64 for MLA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calculator.catalog import GPU, ModelSpec
from calculator.kv import KVLayout, vllm_layout
from calculator.units import GIB
from calculator.versions import (
    CURRENT_VLLM,
    parse_version,
    vllm_default_utilization,
    vllm_is_v0,
    vllm_subtracts_cudagraph_estimate,
    vllm_yarn_scales_max_len,
)

NON_TORCH_GIB_SINGLE = 0.25  # cuBLAS workspace, CUDA context growth (logs: 0.01-0.35 GiB, median ~0.25)
NON_TORCH_GIB_PER_EXTRA_RANK = 0.25  # NCCL buffers and custom all-reduce once tp > 1
# Activation peak per batched token, in units of intermediate_size x dtype bytes.  Fitted on two
# V0 profiles (Llama-3.1-8B: 2.07/2.99 GiB at 20,000/29,000 tokens; Qwen2.5-1.5B: 2.02 GiB at
# 32,768 tokens): both give 3.7 x intermediate x 2 B per token.
ACTIVATION_FACTOR = 3.7
SAMPLER_TEMPORARIES = 2  # logits in fp32 plus one softmax-sized temporary


@dataclass
class VllmConfig:
    tp: int = 1
    pp: int = 1
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    kv_cache_memory_gib: float | None = None
    version: str = CURRENT_VLLM
    block_size: int | None = None


@dataclass
class VllmBudget:
    """Per-GPU budget in GiB, plus the capacity it implies."""

    total_gib: float
    utilization: float
    requested_gib: float
    weights_gib: float
    non_torch_gib: float
    activation_gib: float
    cudagraph_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: float
    block_size: int
    num_blocks: int
    kv_tokens: int
    max_model_len: int
    max_model_len_fit: int
    max_concurrency: float
    fits: bool
    max_num_seqs: int
    max_num_batched_tokens: int
    cudagraph_in_budget: bool
    notes: list[str] = field(default_factory=list)

    @property
    def free_gib(self) -> float:
        return max(0.0, self.total_gib - self.requested_gib)


def derived_max_model_len(model: ModelSpec, version: str = CURRENT_VLLM) -> int:
    """What vLLM derives from config.json when ``--max-model-len`` is not given."""
    derived = model.max_position_embeddings
    rs = model.rope_scaling
    if rs and rs.factor and rs.type not in ("su", "longrope", "llama3") and model.family != "gemma3":
        v = parse_version(version, CURRENT_VLLM)
        if rs.type == "yarn":
            if vllm_yarn_scales_max_len(v) and rs.original_max_position_embeddings:
                derived = int(rs.original_max_position_embeddings * rs.factor)
        else:
            derived = int(derived * rs.factor)
    return derived


def default_batching(gpu_total_gib: float, gpu_id: str, v0: bool, max_model_len: int) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) for the OpenAI server by GPU class (V1)."""
    if v0:
        return 256, max(max_model_len, 2048)
    if gpu_total_gib >= 160:
        return 1024, 16384
    if gpu_total_gib >= 70 and "a100" not in gpu_id:
        return 1024, 8192
    return 256, 2048


def estimate_activation_gib(
    model: ModelSpec, batched_tokens: int, num_seqs: int, tp: int, v0: bool = False
) -> float:
    """Profiled activation peak: a forward pass of ``batched_tokens`` plus (V1) a dummy sampler run."""
    inter = model.intermediate_size or 4 * model.hidden_size
    if model.is_moe and model.moe_intermediate_size:
        inter = model.moe_intermediate_size * (model.experts_per_token or 8)
    per_token = ACTIVATION_FACTOR * inter * model.dtype_bytes / max(1, tp)
    sampler = 0 if v0 else min(num_seqs, batched_tokens) * model.vocab_size * 4 * SAMPLER_TEMPORARIES
    return (batched_tokens * per_token + sampler) / GIB


def estimate_cudagraph_gib(model: ModelSpec, tp: int, pp: int) -> float:
    """Rough CUDA-graph pool size; 0.17 GiB was logged for a 28-layer 1.5B model."""
    layers = model.num_hidden_layers / max(1, pp)
    scale = (layers * model.hidden_size / max(1, tp)) / (28 * 1536)
    return 0.17 * math.sqrt(max(scale, 0.05))


def vllm_budget(
    model: ModelSpec,
    gpu: GPU,
    weight_bytes: int,
    cfg: VllmConfig,
    total_gib: float | None = None,
) -> VllmBudget:
    version = parse_version(cfg.version, CURRENT_VLLM)
    v0 = vllm_is_v0(version)
    notes: list[str] = []
    tp, pp = max(1, cfg.tp), max(1, cfg.pp)
    total = total_gib if total_gib is not None else gpu.total_gib
    util = cfg.gpu_memory_utilization or vllm_default_utilization(version)
    requested = total * util
    max_len = cfg.max_model_len or derived_max_model_len(model, cfg.version)
    seqs_default, tokens_default = default_batching(total, gpu.id, v0, max_len)
    max_num_seqs = cfg.max_num_seqs or seqs_default
    batched = cfg.max_num_batched_tokens or tokens_default
    block = cfg.block_size or (64 if model.mla else 16)

    weights = weight_bytes / (tp * pp) / GIB
    non_torch = NON_TORCH_GIB_SINGLE + (NON_TORCH_GIB_PER_EXTRA_RANK if tp * pp > 1 else 0.0)
    activation = estimate_activation_gib(model, batched, max_num_seqs, tp, v0)
    graphs = 0.0 if cfg.enforce_eager else estimate_cudagraph_gib(model, tp, pp)
    graphs_in_budget = vllm_subtracts_cudagraph_estimate(version) and not cfg.enforce_eager

    layout: KVLayout = vllm_layout(model, cfg.kv_cache_dtype, tp=tp, pp=pp)
    if cfg.kv_cache_memory_gib is not None:
        kv_gib = cfg.kv_cache_memory_gib
        notes.append("--kv-cache-memory-bytes fixes the KV budget; gpu_memory_utilization is ignored")
    else:
        kv_gib = requested - weights - non_torch - activation - (graphs if graphs_in_budget else 0.0)
    return _capacity(
        layout,
        kv_gib,
        block,
        max_len,
        batched,
        v0,
        pp,
        dict(
            total_gib=total,
            utilization=util,
            requested_gib=requested,
            weights_gib=weights,
            non_torch_gib=non_torch,
            activation_gib=activation,
            cudagraph_gib=graphs,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=batched,
            cudagraph_in_budget=graphs_in_budget,
            notes=notes,
        ),
    )


def kv_capacity(
    layout: KVLayout,
    kv_gib: float,
    max_model_len: int,
    block_size: int = 16,
    max_num_batched_tokens: int = 2048,
    v0: bool = False,
    pp: int = 1,
) -> tuple[int, int, int, float]:
    """(num_blocks, kv_tokens, max_model_len_fit, max_concurrency) for a KV budget in GiB."""
    avail = max(0.0, kv_gib) * GIB
    per_block = layout.all_attention_bytes_per_token * block_size
    num_blocks = int(avail // per_block) if per_block > 0 else 0
    kv_tokens = num_blocks * block_size
    if v0:
        kv_tokens = block_size * (num_blocks // pp) if pp > 1 else kv_tokens
        fit = kv_tokens
        concurrency = kv_tokens / max_model_len if max_model_len else 0.0
    else:
        usable = num_blocks * per_block
        fit = _blocks_max_len(layout, usable, block_size, max_num_batched_tokens)
        need = _blocks_bytes(layout, max_model_len, block_size, max_num_batched_tokens)
        concurrency = usable / need if need else 0.0
    return num_blocks, kv_tokens, fit, concurrency


def _blocks_bytes(layout: KVLayout, length: int, block: int, in_flight: int) -> float:
    """vLLM's per-request maximum usage (§2.2): whole blocks, sliding layers capped at the window."""
    total = math.ceil(length / block) * block * layout.growing_bytes_per_token
    for s in layout.sliding:
        capped = min(s.window - 1 + in_flight, length)
        total += (math.ceil(capped / block) + 1) * block * s.bytes_per_token
    return total + layout.state_bytes_per_seq


def _blocks_max_len(layout: KVLayout, budget: float, block: int, in_flight: int) -> int:
    if budget <= 0 or _blocks_bytes(layout, 1, block, in_flight) > budget:
        return 0
    lo, hi = 1, 1 << 24
    if _blocks_bytes(layout, hi, block, in_flight) <= budget:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _blocks_bytes(layout, mid, block, in_flight) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _capacity(layout, kv_gib, block, max_len, batched, v0, pp, fields) -> VllmBudget:
    num_blocks, kv_tokens, fit, concurrency = kv_capacity(layout, kv_gib, max_len, block, batched, v0, pp)
    return VllmBudget(
        kv_cache_gib=kv_gib,
        kv_bytes_per_token=layout.all_attention_bytes_per_token,
        block_size=block,
        num_blocks=num_blocks,
        kv_tokens=kv_tokens,
        max_model_len=max_len,
        max_model_len_fit=fit,
        max_concurrency=concurrency,
        fits=kv_gib > 0 and fit >= max_len,
        **fields,
    )
