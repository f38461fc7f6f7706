"""llama.cpp's memory: GGUF weights, the KV cache (n_ctx padded to 256, SWA capped), compute buffers.

See shared/reference/llamacpp_ollama.md §1.  Bytes per KV element come from ggml's block sizes
(``q8_0`` = 34 B per 32 values).  ``--fit`` (default on since b7407) keeps 1024 MiB free per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calculator.catalog import ModelSpec
from calculator.kv import LLAMACPP_KV_BYTES, KVLayout, llamacpp_layout
from calculator.units import GIB, MIB

FIT_MARGIN_MIB = 1024  # llama.cpp --fit-target default
CUDA_CONTEXT_GIB = 0.4  # CUDA context + cuBLAS workspace, not in llama.cpp's own buffer lines
DEFAULT_UBATCH = 512
CTX_PAD = 256


def pad_ctx(n_ctx: int) -> int:
    return int(math.ceil(n_ctx / CTX_PAD) * CTX_PAD)


@dataclass
class LlamaCppConfig:
    n_ctx: int | None = None  # None: as large as fits (what --fit does when -c is not given)
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    n_parallel: int = 1
    kv_unified: bool = True
    flash_attn: bool = True
    n_ubatch: int = DEFAULT_UBATCH
    n_gpu_layers: int | None = None  # None: all


@dataclass
class LlamaCppBudget:
    total_gib: float
    weights_gib: float
    weights_on_gpu_gib: float
    kv_gib: float
    compute_gib: float
    overhead_gib: float
    n_ctx: int
    n_ctx_max_fit: int
    kv_bytes_per_token: float
    fits: bool
    layers_on_gpu: int
    layers_total: int
    notes: list[str] = field(default_factory=list)

    @property
    def used_gib(self) -> float:
        return self.weights_on_gpu_gib + self.kv_gib + self.compute_gib + self.overhead_gib

    @property
    def free_gib(self) -> float:
        return self.total_gib - self.used_gib


def compute_buffer_bytes(model: ModelSpec, n_ctx: int, n_ubatch: int, flash_attn: bool) -> float:
    """Worst-case compute graph; without flash attention the f32 KQ scores grow with n_ctx x heads."""
    ub = min(n_ubatch, n_ctx)
    base = 4 * ub * (model.hidden_size + model.vocab_size)
    if flash_attn:
        return base
    return max(base, 4 * ub * (1 + 4 * model.hidden_size + n_ctx * (1 + model.num_attention_heads)))


def kv_bytes(layout: KVLayout, n_ctx: int, cfg: LlamaCppConfig) -> float:
    """KV cells: n_ctx in total (unified) or n_ctx/np per stream; SWA layers hold window + ubatch."""
    ctx = pad_ctx(n_ctx)
    streams = 1 if cfg.kv_unified else max(1, cfg.n_parallel)
    per_stream = ctx if cfg.kv_unified else pad_ctx(ctx // streams)
    total = layout.growing_bytes_per_token * per_stream * streams
    for s in layout.sliding:
        window = s.window * (max(1, cfg.n_parallel) if cfg.kv_unified else 1)
        cells = min(per_stream, pad_ctx(window + cfg.n_ubatch))
        total += s.bytes_per_token * cells * streams
    total += layout.state_bytes_per_seq * max(1, cfg.n_parallel)
    return total


def llamacpp_budget(
    model: ModelSpec,
    weight_bytes: int,
    total_gib: float,
    cfg: LlamaCppConfig,
    margin_mib: int = FIT_MARGIN_MIB,
) -> LlamaCppBudget:
    for t in (cfg.cache_type_k, cfg.cache_type_v):
        if t not in LLAMACPP_KV_BYTES:
            raise ValueError(f"unknown llama.cpp cache type {t!r}; known: {', '.join(LLAMACPP_KV_BYTES)}")
    notes: list[str] = []
    if cfg.cache_type_v != "f16" and cfg.cache_type_v != "f32" and not cfg.flash_attn:
        notes.append("a quantized V cache needs flash attention (-fa on)")
    layout = llamacpp_layout(model, cfg.cache_type_k, cfg.cache_type_v)
    layers_total = model.num_hidden_layers + 1  # + output layer, as llama.cpp counts
    on_gpu = layers_total if cfg.n_gpu_layers is None else max(0, min(cfg.n_gpu_layers, layers_total))
    gpu_fraction = on_gpu / layers_total
    weights = weight_bytes / GIB
    weights_gpu = weights * gpu_fraction
    budget_for_ctx = total_gib - weights_gpu - CUDA_CONTEXT_GIB - margin_mib * MIB / GIB

    def need(ctx: int) -> float:
        kv = kv_bytes(layout, ctx, cfg) * gpu_fraction
        return (kv + compute_buffer_bytes(model, pad_ctx(ctx), cfg.n_ubatch, cfg.flash_attn)) / GIB

    trained = model.max_position_embeddings
    max_fit = _largest(lambda c: need(c) <= budget_for_ctx, trained)
    n_ctx = cfg.n_ctx if cfg.n_ctx else max(min(max_fit, trained), 0)
    ctx_for_math = max(n_ctx, 1)
    kv = kv_bytes(layout, ctx_for_math, cfg) * gpu_fraction / GIB
    compute = compute_buffer_bytes(model, pad_ctx(ctx_for_math), cfg.n_ubatch, cfg.flash_attn) / GIB
    used = weights_gpu + kv + compute + CUDA_CONTEXT_GIB
    return LlamaCppBudget(
        total_gib=total_gib,
        weights_gib=weights,
        weights_on_gpu_gib=weights_gpu,
        kv_gib=kv,
        compute_gib=compute,
        overhead_gib=CUDA_CONTEXT_GIB,
        n_ctx=pad_ctx(n_ctx) if n_ctx else 0,
        n_ctx_max_fit=max_fit,
        kv_bytes_per_token=layout.all_attention_bytes_per_token,
        fits=n_ctx > 0 and used <= total_gib,
        layers_on_gpu=on_gpu,
        layers_total=layers_total,
        notes=notes,
    )


def _largest(ok, limit: int) -> int:
    """Largest context (multiple of 256, up to ``limit``) for which ``ok`` holds; 0 if none."""
    steps = limit // CTX_PAD
    if steps <= 0 or not ok(CTX_PAD):
        return 0
    lo, hi = 1, steps
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid * CTX_PAD):
            lo = mid
        else:
            hi = mid - 1
    return lo * CTX_PAD
