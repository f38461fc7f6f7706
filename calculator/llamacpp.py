"""llama.cpp's memory: GGUF weights, the KV cache (n_ctx padded to 256, SWA capped), compute buffers.

See shared/reference/llamacpp_ollama.md §1.  Bytes per KV element come from ggml's block sizes
(``q8_0`` = 34 B per 32 values).  ``--fit`` (default on since b7407) keeps 1024 MiB free per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calculator.catalog import ModelSpec
from calculator.constants import constant
from calculator.kv import LLAMACPP_KV_BYTES, KVLayout, llamacpp_layout
from calculator.plan import Outcome, Plan, Sourced, Term
from calculator.units import GIB, MIB

# Budget constants, each with its unit and source in data/engine_constants.yaml.
FIT_MARGIN_MIB = int(constant("llamacpp", "fit_margin_mib"))  # --fit-target default
CUDA_CONTEXT_GIB = constant("llamacpp", "cuda_context_gib")  # not in llama.cpp's own buffer lines
DEFAULT_UBATCH = int(constant("llamacpp", "default_ubatch"))
CTX_PAD = int(constant("llamacpp", "ctx_pad"))
COMPUTE_FALLBACK_GIB = constant("llamacpp", "compute_fallback_gib")  # when the log prints no compute buffer


def pad_ctx(n_ctx: int) -> int:
    return int(math.ceil(n_ctx / CTX_PAD) * CTX_PAD)


@dataclass
class LlamaCppConfig:
    """The llama.cpp settings that change memory: context, cache types, slots, batch."""

    n_ctx: int | None = None  # None: as large as fits (what --fit does when -c is not given)
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    n_parallel: int = 1
    kv_unified: bool = True
    flash_attn: bool = True
    n_ubatch: int = DEFAULT_UBATCH
    n_gpu_layers: int | None = None  # None: all
    kv_offload: bool = True  # False: -nkvo, the KV cache stays in host RAM


@dataclass
class LlamaCppBudget:
    """llama.cpp's memory on one device: weights, KV cache, compute buffers, free."""

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

    kv_on_gpu = gpu_fraction if cfg.kv_offload else 0.0

    def need(ctx: int) -> float:
        kv = kv_bytes(layout, ctx, cfg) * kv_on_gpu
        return (kv + compute_buffer_bytes(model, pad_ctx(ctx), cfg.n_ubatch, cfg.flash_attn)) / GIB

    trained = model.max_position_embeddings
    max_fit = _largest(lambda c: need(c) <= budget_for_ctx, trained)
    n_ctx = cfg.n_ctx if cfg.n_ctx else max(min(max_fit, trained), 0)
    ctx_for_math = max(n_ctx, 1)
    kv = kv_bytes(layout, ctx_for_math, cfg) * kv_on_gpu / GIB
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


START_HEADROOM_GIB = constant("llamacpp", "start_headroom_gib")  # a fixed -c starts with this to spare


@dataclass
class LlamaCppObserved:
    """Buffer sizes a llama.cpp log prints (MiB), and the device memory."""

    device_gib: Sourced | None = None  # what one device has (total, or free at start)
    devices: int = 1
    model_buffer_mib: Sourced | None = None
    kv_buffer_mib: Sourced | None = None  # at plan0's n_ctx and cache types
    compute_buffer_mib: Sourced | None = None


@dataclass
class LlamaCppEstimate:
    """llama.cpp's budget for a plan: the catalog model when known, else the log's buffer sizes."""

    plan0: Plan
    obs: LlamaCppObserved
    model: ModelSpec | None = None
    weight_bytes: int | None = None

    def _config(self, plan: Plan, n_ctx: int | None) -> LlamaCppConfig:
        k, v = (plan.kv_dtype, plan.kv_dtype) if plan.kv_dtype != "auto" else ("f16", "f16")
        return LlamaCppConfig(
            n_ctx=n_ctx, cache_type_k=k, cache_type_v=v, n_parallel=max(1, plan.parallel),
            kv_unified=True, flash_attn=plan.flash_attn, n_ubatch=plan.ubatch or DEFAULT_UBATCH,
            n_gpu_layers=plan.gpu_layers, kv_offload=plan.kv_offload,
        )  # fmt: skip

    def evaluate(self, plan: Plan) -> Outcome | None:
        if self.obs.device_gib is None:
            return None
        total = self.obs.device_gib.value * max(1, self.obs.devices)
        if self.model is not None and self.weight_bytes:
            return self._from_model(plan, total)
        return self._from_log(plan, total)

    def _from_model(self, plan: Plan, total: float) -> Outcome:
        assert self.model is not None and self.weight_bytes is not None
        b = llamacpp_budget(self.model, self.weight_bytes, total, self._config(plan, plan.max_len))
        starts = plan.max_len is not None and b.used_gib + START_HEADROOM_GIB <= total
        if plan.max_len is None:
            starts = b.n_ctx_max_fit >= CTX_PAD
        terms = [
            Term("weights", b.weights_on_gpu_gib, "catalog"),
            Term("compute buffers", b.compute_gib, "estimated"),
            Term("cuda context", b.overhead_gib, "estimated"),
            Term("kv cache", b.kv_gib, "computed"),
        ]
        why = "" if starts else "the weights and the KV cache do not fit"
        return Outcome(starts, b.n_ctx_max_fit, b.kv_gib, b.n_ctx_max_fit, terms, total, None, why)

    def _from_log(self, plan: Plan, total: float) -> Outcome | None:
        o = self.obs
        if o.model_buffer_mib is None or o.kv_buffer_mib is None or not self.plan0.max_len:
            return None
        mib = 1 / 1024
        weights = o.model_buffer_mib.value * mib * _layers_share(plan, self.plan0)
        bpt0 = o.kv_buffer_mib.value * mib / self.plan0.max_len
        bpt = bpt0 * _kv_factor(plan.kv_dtype) / _kv_factor(self.plan0.kv_dtype)
        if not plan.kv_offload:
            bpt = 0.0
        compute = o.compute_buffer_mib.value * mib if o.compute_buffer_mib else COMPUTE_FALLBACK_GIB
        room = total - weights - compute - CUDA_CONTEXT_GIB - FIT_MARGIN_MIB / 1024
        fit = int(max(0.0, room) / bpt) // CTX_PAD * CTX_PAD if bpt else 1 << 24
        want = plan.max_len or fit
        kv = bpt * want
        starts = weights + compute + CUDA_CONTEXT_GIB + kv + START_HEADROOM_GIB <= total and want > 0
        terms = [Term("weights", weights, "log"), Term("compute buffers", compute, "log" if o.compute_buffer_mib else "estimated"),
                 Term("cuda context", CUDA_CONTEXT_GIB, "estimated"), Term("kv cache", kv, "computed")]  # fmt: skip
        return Outcome(starts, fit, kv, fit, terms, total, None, "" if starts else "the buffers do not fit")


def _kv_factor(kv_dtype: str) -> float:
    return LLAMACPP_KV_BYTES.get(kv_dtype if kv_dtype != "auto" else "f16", 2.0)


def _layers_share(plan: Plan, plan0: Plan) -> float:
    """Weights on the GPU scale with the layers kept there (None = all)."""
    if plan.gpu_layers is None or plan.gpu_layers == plan0.gpu_layers:
        return 1.0
    if plan0.gpu_layers:
        return min(1.0, plan.gpu_layers / plan0.gpu_layers)
    return 1.0
