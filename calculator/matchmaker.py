"""Matchmaking: which GPUs (and how many) serve a model; which models a GPU serves.

For a model: every catalog GPU at 1, 2, 4 and 8 cards (tensor parallel must divide the attention
heads for vLLM/SGLang; llama.cpp splits layers), keeping each card's smallest count that fits the
context; smallest total memory first, then price.  For a GPU: the best checkpoint of every catalog
model that fits (highest precision first) and the context it reaches; biggest models first.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.catalog import GPU, ModelSpec, Variant, gpus, models
from calculator.estimate import EngineName, VramRequest, VramResult, estimate_for
from calculator.vllm import derived_max_model_len

COUNTS = (1, 2, 4, 8)
DEFAULT_CONTEXT = 32768
MIN_USEFUL_CONTEXT = 8192
# preference among checkpoints of one model when several fit: higher precision first
_QUANT_ORDER = {
    "bf16": 0,
    "fp16": 0,
    "fp8": 1,
    "gptq-int8": 2,
    "awq": 3,
    "gptq": 4,
    "nvfp4": 5,
    "mxfp4": 5,
    "bnb-4bit": 6,
    "gguf": 7,
}
_GGUF_ORDER = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "MXFP4", "Q4_0", "Q4_K_S", "IQ4_XS", "Q3_K_M", "Q2_K"]


@dataclass(frozen=True)
class GpuOption:
    """A GPU and count that serve the model, with the estimate that shows it."""

    gpu: GPU
    count: int
    result: VramResult

    @property
    def total_gib(self) -> float:
        return self.gpu.total_gib * self.count

    @property
    def price_usd(self) -> float | None:
        return self.gpu.price.usd * self.count if self.gpu.price else None


@dataclass(frozen=True)
class ModelOption:
    """A model and quant that fit the GPU, with the estimate that shows it."""

    model: ModelSpec
    variant: Variant | None
    result: VramResult


def _engine_ok(gpu: GPU, engine: str) -> bool:
    if engine in ("vllm", "sglang"):
        return gpu.vendor in ("nvidia", "amd") and (gpu.cc is None or gpu.cc >= 7.0)
    return True


def _variant_ok(variant: Variant | None, gpu: GPU, engine: str) -> bool:
    if variant is None:
        return engine in ("vllm", "sglang") or True
    if engine in ("llama.cpp", "ollama"):
        return variant.quant == "gguf"
    if variant.quant == "gguf":
        return False
    if variant.quant == "fp8":
        return gpu.vendor == "amd" or (gpu.cc or 0) >= 8.0  # vLLM: Marlin fp8 on Ampere, native from Ada
    if variant.quant in ("nvfp4",):
        return gpu.fp4
    if variant.quant == "awq":
        return (gpu.cc or 8.0) >= 7.5  # vLLM: awq needs 7.5 (awq_marlin 8.0)
    if variant.quant in ("gptq", "gptq-int8"):
        return (gpu.cc or 8.0) >= 6.0  # vLLM: gptq needs 6.0 (gptq_marlin 8.0)
    return True


# answers already computed in this process, keyed by the identity of the (immutable) model and variant
# objects; an entry keeps them alive, so an id cannot be reused for another object while it is stored
_ANSWERS: dict[tuple, tuple[ModelSpec, Variant | None, tuple[GpuOption, ...]]] = {}
ANSWERS_KEPT = 256


def gpus_for_model(
    model: ModelSpec,
    variant: Variant | None,
    context: int | None = None,
    engine: EngineName = "vllm",
    kv_cache_dtype: str = "auto",
    limit: int = 12,
) -> list[GpuOption]:
    """The ``limit`` best options: one card before several, then the least memory, then the lowest
    price.  The catalogs do not change while a process runs, so a repeated question is answered from
    the answers kept (the options are read-only: callers never change them)."""
    key = (id(model), id(variant), context, engine, kv_cache_dtype, limit)
    kept = _ANSWERS.get(key)
    if kept is not None and kept[0] is model and kept[1] is variant:
        return list(kept[2])
    want = context or min(derived_max_model_len(model), DEFAULT_CONTEXT)
    options = _scan(model, variant, want, engine, kv_cache_dtype, limit)
    if len(_ANSWERS) >= ANSWERS_KEPT:
        del _ANSWERS[next(iter(_ANSWERS))]  # the oldest
    _ANSWERS[key] = (model, variant, tuple(options))
    return options


def _scan(
    model: ModelSpec, variant: Variant | None, want: int, engine: EngineName, kv_cache_dtype: str, limit: int
) -> list[GpuOption]:
    """Single cards are tried first, least memory then lowest price first, so when ``limit`` of them
    fit the scan stops there (a single card ranks before any multi-card option); otherwise every GPU
    is tried at 2, 4 and 8 cards as well."""
    usable = [g for g in gpus() if _engine_ok(g, engine) and _variant_ok(variant, g, engine)]
    singles: list[GpuOption] = []
    for gpu in sorted(usable, key=_memory_then_price):
        result = _try(model, variant, gpu, 1, want, engine, kv_cache_dtype)
        if result is not None:
            singles.append(GpuOption(gpu, 1, result))
            if len(singles) == limit:
                return singles
    options = list(singles)
    single_ids = {o.gpu.id for o in singles}
    for gpu in usable:
        if gpu.id in single_ids or gpu.unified_memory:
            continue
        for n in COUNTS[1:]:
            if engine in ("vllm", "sglang") and model.num_attention_heads % n:
                continue
            result = _try(model, variant, gpu, n, want, engine, kv_cache_dtype)
            if result is not None:
                options.append(GpuOption(gpu, n, result))
                break
    options.sort(
        key=lambda o: (o.count > 1, o.total_gib, o.price_usd if o.price_usd is not None else _NO_PRICE)
    )
    return options[:limit]


_NO_PRICE = float("inf")


def _memory_then_price(gpu: GPU) -> tuple[float, float]:
    return gpu.total_gib, gpu.price.usd if gpu.price else _NO_PRICE


def _try(
    model: ModelSpec, variant: Variant | None, gpu: GPU, n: int, want: int, engine: EngineName, kv_dtype: str
) -> VramResult | None:
    """The result on ``n`` of this GPU when the context fits, else None."""
    kv = kv_dtype if (kv_dtype == "auto" or gpu.fp8_kv_cache) else "auto"
    req = VramRequest(
        model=model.id, gpu=gpu.id, gpus=n, engine=engine, max_model_len=want, kv_cache_dtype=kv
    )
    result = estimate_for(model, variant, gpu, req, hardware=False)
    return result if result.fits else None


def _candidates(model: ModelSpec, engine: str) -> list[Variant | None]:
    if engine in ("llama.cpp", "ollama"):
        ggufs = [v for v in model.variants if v.quant == "gguf"]
        order = {t: i for i, t in enumerate(_GGUF_ORDER)}
        ranked = sorted(ggufs, key=lambda v: order.get((v.gguf_type or "").upper(), 50))
        return list(ranked)
    variants: list[Variant | None] = [v for v in model.variants if v.quant != "gguf"]
    if not any(v.id == model.id for v in variants if v is not None):
        variants.insert(0, None)  # the base checkpoint
    return sorted(variants, key=lambda v: _QUANT_ORDER.get(v.quant if v else model.torch_dtype[:2] + "16", 0))


def models_for_gpu(
    gpu: GPU,
    count: int = 1,
    context: int | None = None,
    engine: EngineName = "vllm",
    limit: int = 15,
) -> list[ModelOption]:
    found: list[ModelOption] = []
    for model in models():
        if engine in ("vllm", "sglang") and model.num_attention_heads % count:
            continue
        want = context or min(derived_max_model_len(model), MIN_USEFUL_CONTEXT)
        for variant in _candidates(model, engine):
            if not _variant_ok(variant, gpu, engine):
                continue
            req = VramRequest(model=model.id, gpu=gpu.id, gpus=count, engine=engine, max_model_len=want)
            result = estimate_for(model, variant, gpu, req, hardware=False)
            if result.fits:
                found.append(ModelOption(model, variant, result))
                break
    found.sort(key=lambda o: (-o.model.params_b, o.model.id))
    return found[:limit]
