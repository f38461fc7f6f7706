"""The ``/vram`` computation: does this model fit on these GPUs, with what context, and which flags.

``estimate(VramRequest) -> VramResult``: plain dataclasses (the request's bounds are checked by
:mod:`calculator.checks`), so the CLI's ``--json`` and the bot's replies share one shape.  The
llama.cpp, Ollama and SGLang budgets are imported when a request asks for that engine (or the llama.cpp
partial offload), so a vLLM ``/vram`` does not load them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Annotated, Literal

from calculator.catalog import GGUF_DEFAULT, GPU, ModelSpec, Variant, gguf_weight_bytes, variant_weight_bytes
from calculator.checks import Checked, Interval
from calculator.commands import (
    llamacpp_command,
    ollama_env_command,
    ollama_num_gpu_command,
    sglang_command,
    vllm_command,
)
from calculator.fit import (
    KVSituation,
    Remedy,
    llamacpp_kv_remedies,
    ollama_kv_remedies,
    sglang_kv_remedies,
    vllm_kv_remedies,
)
from calculator.kv import LLAMACPP_KV_BYTES, VLLM_KV_BYTES
from calculator.resolve import resolve_gpu, resolve_model
from calculator.units import GIB, fmt_tokens, round_down_clean
from calculator.versions import CURRENT_VLLM, parse_version
from calculator.vllm import VllmConfig, derived_max_model_len, loaded_weight_bytes, vllm_budget

EngineName = Literal["vllm", "llama.cpp", "ollama", "sglang"]
MIN_USEFUL_CONTEXT = 4096


Count = Annotated[int, Interval(ge=1, le=64)]  # GPUs, tp, pp
GiB = Annotated[float, Interval(gt=0, le=4096)]
Tokens = Annotated[int, Interval(ge=1, le=1 << 25)]


@dataclass(kw_only=True)
class VramRequest(Checked):
    """What ``/vram`` and ``gpu-garden vram`` ask; every bound is checked when one is made."""

    model: str
    gpu: str
    gpus: Count = 1
    engine: EngineName = "vllm"
    tp: Count | None = None
    pp: Count = 1
    gpu_memory_gib: GiB | None = None
    gpu_memory_utilization: Annotated[float, Interval(gt=0, le=1)] | None = None
    max_model_len: Tokens | None = None
    kv_cache_dtype: str = "auto"
    kv_cache_memory_gib: GiB | None = None
    max_num_seqs: Annotated[int, Interval(ge=1, le=65536)] | None = None
    max_num_batched_tokens: Annotated[int, Interval(ge=1, le=1 << 24)] | None = None
    enforce_eager: bool = False
    vllm_version: str | None = None
    ctx_size: Tokens | None = None
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    parallel: Annotated[int, Interval(ge=1, le=256)] = 1


@dataclass
class RemedyOut:
    """A remedy as the JSON output carries it."""

    engine: str
    change: str
    command: str
    effect: str
    cost: str = ""


@dataclass(kw_only=True)
class VramResult:
    """The answer; ``--json`` prints these fields in this order (:func:`result_json`)."""

    model: str
    variant: str | None
    quantization: str
    gpu: str
    gpu_name: str
    gpus: int
    engine: EngineName
    total_gib: float  # memory per GPU the engine sees
    weights_gib: float  # per GPU
    kv_bytes_per_token: float  # per GPU
    kv_cache_gib: float  # per GPU
    kv_tokens: int
    max_model_len: int
    max_model_len_fit: int
    max_concurrency: float
    fits: bool
    breakdown: dict[str, float]
    command: str
    remedies: list[RemedyOut]
    notes: list[str] = field(default_factory=list)


def result_json(result: VramResult) -> str:
    """The result as indented JSON: the shape pydantic gave it (UTF-8 as is, fields in order)."""
    return json.dumps(dataclasses.asdict(result), indent=2, ensure_ascii=False)


def _pick_variant(model: ModelSpec, variant: Variant | None, engine: str) -> Variant | None:
    """GGUF engines need a GGUF file: the named one, else the Q4_K_M variant (Ollama's default)."""
    if engine in ("llama.cpp", "ollama"):
        if variant is not None and variant.quant == "gguf":
            return variant
        gguf = [v for v in model.variants if v.quant == "gguf"]
        return next((v for v in gguf if v.gguf_type == GGUF_DEFAULT), gguf[0] if gguf else None)
    if variant is not None and variant.quant == "gguf":
        # vLLM/SGLang serve the safetensors checkpoint: the official one (MXFP4 for gpt-oss, FP8 for
        # DeepSeek-V3), not 16-bit weights
        return next((v for v in model.variants if v.id == model.id), None)
    return variant


def _identity(
    model: ModelSpec, variant: Variant | None, gpu: GPU, req: VramRequest, quantization: str
) -> dict:
    """The fields that say what was computed, shared by every engine's result."""
    return {
        "model": model.id,
        "variant": variant.id if variant else None,
        "quantization": quantization,
        "gpu": gpu.id,
        "gpu_name": gpu.name,
        "gpus": req.gpus,
    }


def _rem(r: Remedy) -> RemedyOut:
    return RemedyOut(engine=r.engine, change=r.change, command=r.command, effect=r.effect, cost=r.cost)


def estimate(req: VramRequest) -> VramResult:
    """Resolve the names in the request, then compute."""
    match = resolve_model(req.model)
    return estimate_for(match.model, match.variant, resolve_gpu(req.gpu), req)


def estimate_for(
    model: ModelSpec, named_variant: Variant | None, gpu: GPU, req: VramRequest, hardware: bool = True
) -> VramResult:
    """The computation for catalog entries already resolved.  When it does not fit and ``hardware`` is
    set, the remedies also cover what software settings cannot: a smaller checkpoint, more GPUs, a
    bigger GPU (the matchmaker calls this in loops with ``hardware=False``)."""
    result = _estimate_for(model, named_variant, gpu, req)
    limit = derived_max_model_len(model, req.vllm_version or CURRENT_VLLM)
    if result.max_model_len_fit > limit:
        result.max_model_len_fit = limit  # the model's own limit, not the memory, is the cap
    if hardware and not result.fits:
        result.remedies.extend(_rem(r) for r in hardware_remedies(model, named_variant, gpu, req, result))
    return result


_QUALITY = {
    "bf16": "none",
    "fp16": "none",
    "fp8": "very small",
    "gptq-int8": "very small",
    "awq": "small (4-bit)",
    "gptq": "small (4-bit)",
    "nvfp4": "small (4-bit)",
    "mxfp4": "small (4-bit)",
    "bnb-4bit": "small (4-bit), slower",
}


def _partial_offload(
    model: ModelSpec, variant: Variant | None, gpu: GPU, req: VramRequest, current: VramResult
) -> Remedy | None:
    """llama.cpp / Ollama can keep some layers in system RAM: the most layers that fit on the GPU."""
    from calculator.llamacpp import LlamaCppConfig, llamacpp_budget

    weight_bytes, _label = gguf_weight_bytes(model, variant)
    ctx = current.max_model_len or 4096
    total = (req.gpu_memory_gib or gpu.total_gib) * req.gpus
    layers = model.num_hidden_layers + 1
    cfg = LlamaCppConfig(n_ctx=ctx, cache_type_k=req.cache_type_k, cache_type_v=req.cache_type_v)
    best = 0
    lo, hi = 1, layers - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        cfg.n_gpu_layers = mid
        if llamacpp_budget(model, weight_bytes, total, cfg).fits:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best == 0:
        return None
    tag = variant.ollama if variant and variant.ollama else None
    if req.engine == "ollama":
        command = ollama_num_gpu_command(best, ctx, tag)
    else:
        model_file = f"{model.id.split('/')[-1]}.gguf"
        command = llamacpp_command(None, model_file, {"-c": str(ctx), "-ngl": str(best), "-fa": "on"})
    return Remedy(
        req.engine,
        f"keep part of the model in system RAM ({best} of {layers} layers on the GPU)",
        command,
        f"runs with {fmt_tokens(ctx)} tokens of context",
        "several times slower: the layers in RAM run on the CPU",
        rank=9,
    )


def hardware_remedies(
    model: ModelSpec, named_variant: Variant | None, gpu: GPU, req: VramRequest, current: VramResult
) -> list[Remedy]:
    """Changes beyond flags, each checked by recomputing: a smaller checkpoint of the same model (the
    highest precision that fits), tensor/layer parallelism over more of the same GPU, a bigger GPU."""
    out: list[Remedy] = []
    want = current.max_model_len
    here = _pick_variant(model, named_variant, req.engine)
    here_bytes = (
        variant_weight_bytes(model, here) if here is not None or req.engine in ("vllm", "sglang") else None
    )
    candidates = [
        v
        for v in model.variants
        if v is not here
        and (v.quant == "gguf") == (req.engine in ("llama.cpp", "ollama"))
        and (here_bytes is None or variant_weight_bytes(model, v) < here_bytes)
    ]
    candidates.sort(key=lambda v: -variant_weight_bytes(model, v))
    for v in candidates:  # the highest precision that fits, at the full context or a useful shorter one
        alt = _estimate_for(model, v, gpu, req)
        label = v.gguf_type or v.quant
        if alt.fits:
            effect = f"weights {alt.weights_gib:.1f} GiB per GPU instead of {current.weights_gib:.1f}: {fmt_tokens(want)} tokens fit"
            command = alt.command
        elif alt.max_model_len_fit >= MIN_USEFUL_CONTEXT:
            shorter = round_down_clean(alt.max_model_len_fit)
            alt = _estimate_for(
                model, v, gpu, dataclasses.replace(req, max_model_len=shorter, ctx_size=shorter)
            )
            if not alt.fits:
                continue
            effect = (
                f"weights {alt.weights_gib:.1f} GiB per GPU instead of {current.weights_gib:.1f}: "
                f"{fmt_tokens(shorter)} tokens fit"
            )
            command = alt.command
        else:
            continue
        out.append(
            Remedy(
                req.engine,
                f"a smaller checkpoint: {v.id}",
                command,
                effect,
                f"quality loss: {_QUALITY.get(v.quant, label)}",
                rank=10,
            )
        )
        break
    if req.engine in ("vllm", "sglang", "llama.cpp"):
        for n in (2, 4, 8):
            if n <= req.gpus or (req.engine != "llama.cpp" and model.num_attention_heads % n):
                continue
            alt = _estimate_for(model, named_variant, gpu, dataclasses.replace(req, gpus=n, tp=None))
            if alt.fits:
                how = "tensor parallel" if req.engine != "llama.cpp" else "layers split"
                out.append(
                    Remedy(
                        req.engine,
                        f"{how} over {n} GPUs",
                        alt.command,
                        f"{fmt_tokens(alt.max_model_len_fit)} tokens fit on {n}x {gpu.name}",
                        f"{n - req.gpus} more GPU(s)",
                        rank=11,
                    )
                )
                break
    if req.engine in ("llama.cpp", "ollama"):
        partial = _partial_offload(model, here, gpu, req, current)
        if partial is not None:
            out.append(partial)
    from calculator.matchmaker import gpus_for_model

    bigger = [
        o for o in gpus_for_model(model, here, context=want, engine=req.engine, limit=2) if o.gpu.id != gpu.id
    ]
    if bigger:
        o = bigger[0]
        setup = f"{o.count}x {o.gpu.name}" if o.count > 1 else o.gpu.name
        price = ""
        if o.gpu.price is not None and o.price_usd is not None:
            unit = "/h" if o.gpu.price.kind == "cloud_hourly" else ""
            price = f"about ${o.price_usd:,.0f}{unit} ({o.gpu.price.kind}, {o.gpu.price.date})"
        out.append(
            Remedy(
                req.engine,
                f"a bigger GPU: {setup}",
                o.result.command,
                f"{o.total_gib:.0f} GiB: {fmt_tokens(want)} tokens fit",
                price or "money",
                rank=12,
            )
        )
    return out


def _estimate_for(model: ModelSpec, named_variant: Variant | None, gpu: GPU, req: VramRequest) -> VramResult:
    variant = _pick_variant(model, named_variant, req.engine)
    total = req.gpu_memory_gib or gpu.total_gib
    notes: list[str] = []
    if named_variant is not None and variant is None and req.engine in ("vllm", "sglang"):
        notes.append(f"{named_variant.id} is a GGUF file; {req.engine} numbers use the original checkpoint")
    if req.engine == "vllm":
        return _vllm(req, model, variant, gpu, total, notes)
    if req.engine == "sglang":
        return _sglang(req, model, variant, gpu, total, notes)
    return _gguf(req, model, variant, gpu, total, notes)


def _vllm(req: VramRequest, model, variant, gpu: GPU, total: float, notes: list[str]) -> VramResult:
    if req.kv_cache_dtype not in VLLM_KV_BYTES:
        raise ValueError(
            f"unknown --kv-cache-dtype {req.kv_cache_dtype!r}; known: {', '.join(VLLM_KV_BYTES)}"
        )
    tp = req.tp or max(1, req.gpus // req.pp)
    if tp * req.pp > req.gpus:
        notes.append(f"tp x pp = {tp * req.pp} needs that many GPUs; computed as if you had them")
    if model.num_attention_heads % tp:
        notes.append(
            f"{model.num_attention_heads} attention heads are not divisible by tp={tp}: vLLM refuses this"
        )
    version = req.vllm_version or CURRENT_VLLM
    cfg = VllmConfig(
        tp=tp,
        pp=req.pp,
        gpu_memory_utilization=req.gpu_memory_utilization,
        max_model_len=req.max_model_len,
        kv_cache_dtype=req.kv_cache_dtype,
        max_num_seqs=req.max_num_seqs,
        max_num_batched_tokens=req.max_num_batched_tokens,
        enforce_eager=req.enforce_eager,
        kv_cache_memory_gib=req.kv_cache_memory_gib,
        version=version,
    )
    weight_bytes = loaded_weight_bytes(model, variant, gpu.cc, tp)
    b = vllm_budget(model, gpu, weight_bytes, cfg, total_gib=total)
    notes.extend(b.notes)
    model_name = variant.id if variant else model.id
    flags: dict[str, str | None] = {"--max-model-len": str(b.max_model_len)}
    if tp > 1:
        flags["--tensor-parallel-size"] = str(tp)
    if req.kv_cache_dtype != "auto":
        flags["--kv-cache-dtype"] = req.kv_cache_dtype
    if req.gpu_memory_utilization:
        flags["--gpu-memory-utilization"] = str(req.gpu_memory_utilization)
    if req.enforce_eager:
        flags["--enforce-eager"] = ""
    command = vllm_command(None, model_name, flags)
    remedies: list[Remedy] = []
    if not b.fits:
        situation = KVSituation(
            fit_len=b.max_model_len_fit,
            max_model_len=b.max_model_len,
            kv_gib=b.kv_cache_gib,
            bytes_per_token=b.kv_bytes_per_token,
            total_gib=total,
            utilization=b.utilization,
            version=parse_version(version, CURRENT_VLLM),
            gpu=gpu,
            model=model,
            tp=tp,
            kv_cache_dtype=req.kv_cache_dtype,
            enforce_eager=req.enforce_eager,
            cudagraph_gib=b.cudagraph_gib,
            base_command=command,
            model_name=model_name,
        )
        remedies = vllm_kv_remedies(situation)
        if b.kv_cache_gib <= 0:
            notes.append(
                f"the weights alone ({b.weights_gib:.1f} GiB per GPU) leave no room for a KV cache "
                f"within {b.requested_gib:.1f} GiB"
            )
    breakdown = {
        "weights": round(b.weights_gib, 3),
        "non_torch": round(b.non_torch_gib, 3),
        "activations": round(b.activation_gib, 3),
        "cuda_graphs": round(b.cudagraph_gib, 3),
        "kv_cache": round(max(0.0, b.kv_cache_gib), 3),
        "reserved_free": round(max(0.0, total - b.requested_gib), 3),
    }
    return VramResult(
        **_identity(model, variant, gpu, req, variant.quant if variant else model.torch_dtype),
        engine="vllm",
        total_gib=round(total, 3),
        weights_gib=round(b.weights_gib, 3),
        kv_bytes_per_token=b.kv_bytes_per_token,
        kv_cache_gib=round(b.kv_cache_gib, 3),
        kv_tokens=b.kv_tokens,
        max_model_len=b.max_model_len,
        max_model_len_fit=b.max_model_len_fit,
        max_concurrency=round(b.max_concurrency, 2),
        fits=b.fits,
        breakdown=breakdown,
        command=command,
        remedies=[_rem(r) for r in remedies],
        notes=notes,
    )


def _sglang(req: VramRequest, model, variant, gpu: GPU, total: float, notes: list[str]) -> VramResult:
    from calculator.sglang import mem_fraction_for_tokens, sglang_budget

    tp = req.tp or req.gpus
    weight_bytes = variant_weight_bytes(model, variant)
    b = sglang_budget(
        model, weight_bytes, total, tp=tp, kv_cache_dtype=req.kv_cache_dtype, context_length=req.max_model_len
    )
    model_name = variant.id if variant else model.id
    flags: dict[str, str | None] = {"--mem-fraction-static": f"{b.mem_fraction_static}"}
    if req.max_model_len:
        flags["--context-length"] = str(req.max_model_len)
    if tp > 1:
        flags["--tp"] = str(tp)
    command = sglang_command(None, model_name, flags)
    fit = min(b.max_total_num_tokens, model.max_position_embeddings)
    remedies = []
    if not b.fits:
        remedies = sglang_kv_remedies(
            fit,
            b.context_length,
            command,
            model_name,
            mem_fraction=b.mem_fraction_static,
            fraction_for=lambda tokens: mem_fraction_for_tokens(
                tokens, b.cell_size_bytes, b.weights_gib, total
            ),
        )
    breakdown = {
        "weights": round(b.weights_gib, 3),
        "kv_cache": round(max(0.0, b.kv_pool_gib), 3),
        "activations_and_graphs": round(total * (1 - b.mem_fraction_static), 3),
    }
    return VramResult(
        **_identity(model, variant, gpu, req, variant.quant if variant else model.torch_dtype),
        engine="sglang",
        total_gib=round(total, 3),
        weights_gib=round(b.weights_gib, 3),
        kv_bytes_per_token=b.cell_size_bytes,
        kv_cache_gib=round(b.kv_pool_gib, 3),
        kv_tokens=b.max_total_num_tokens,
        max_model_len=b.context_length,
        max_model_len_fit=fit,
        max_concurrency=round(b.max_total_num_tokens / b.context_length, 2) if b.context_length else 0.0,
        fits=b.fits,
        breakdown=breakdown,
        command=command,
        remedies=[_rem(r) for r in remedies],
        notes=notes,
    )


def _gguf(req: VramRequest, model, variant, gpu: GPU, total_per_gpu: float, notes: list[str]) -> VramResult:
    from calculator.llamacpp import LlamaCppConfig, llamacpp_budget
    from calculator.ollama import OllamaConfig, default_num_ctx, ollama_budget

    weight_bytes, quant_label = gguf_weight_bytes(model, variant)
    total = total_per_gpu * req.gpus  # llama.cpp splits layers across GPUs
    if req.gpus > 1:
        notes.append(f"{req.gpus} GPUs: llama.cpp splits layers across them; figures are the sum")
    for t in (req.cache_type_k, req.cache_type_v):
        if t not in LLAMACPP_KV_BYTES:
            raise ValueError(f"unknown cache type {t!r}; known: {', '.join(LLAMACPP_KV_BYTES)}")
    model_file = f"{model.id.split('/')[-1]}-{quant_label.split(' ')[0]}.gguf"
    tag = variant.ollama if variant and variant.ollama else None
    if req.engine == "ollama":
        num_ctx = req.ctx_size or req.max_model_len
        b = ollama_budget(
            model,
            weight_bytes,
            total,
            OllamaConfig(num_ctx=num_ctx, num_parallel=req.parallel, kv_cache_type=req.cache_type_k),
        )
        want = num_ctx or default_num_ctx(total, model.max_position_embeddings)
        if not num_ctx:
            notes.append(f"Ollama's default context for {total:.0f} GiB of VRAM is {want:,} tokens")
        env = {"OLLAMA_CONTEXT_LENGTH": str(b.n_ctx // max(1, req.parallel) if b.n_ctx else want)}
        if req.cache_type_k != "f16":
            env["OLLAMA_KV_CACHE_TYPE"] = req.cache_type_k
        command = ollama_env_command(env, tag)
        fit = b.n_ctx_max_fit
        remedies = [] if b.fits else ollama_kv_remedies(fit, want, tag)
    else:
        n_ctx = req.ctx_size or req.max_model_len
        cfg = LlamaCppConfig(
            n_ctx=n_ctx, cache_type_k=req.cache_type_k, cache_type_v=req.cache_type_v, n_parallel=req.parallel
        )
        b = llamacpp_budget(model, weight_bytes, total, cfg)
        want = n_ctx or b.n_ctx
        flags: dict[str, str | None] = {"-c": str(b.n_ctx or want), "-ngl": "99", "-fa": "on"}
        if req.cache_type_k != "f16":
            flags["-ctk"] = req.cache_type_k
        if req.cache_type_v != "f16":
            flags["-ctv"] = req.cache_type_v
        command = llamacpp_command(None, model_file, flags)
        fit = b.n_ctx_max_fit
        remedies = [] if b.fits else llamacpp_kv_remedies(fit, want, command, model_file)
        if not n_ctx:
            notes.append("no -c given: llama.cpp's --fit picks the largest context that fits (at least 4096)")
    notes.extend(b.notes)
    if b.weights_on_gpu_gib > total:
        notes.append("the weights alone exceed GPU memory: layers must stay on the CPU (-ngl) — slow")
    breakdown = {
        "weights": round(b.weights_on_gpu_gib / req.gpus, 3),
        "kv_cache": round(b.kv_gib / req.gpus, 3),
        "compute_buffers": round(b.compute_gib, 3),
        "cuda_context": round(b.overhead_gib, 3),
        "free": round(max(0.0, b.free_gib) / req.gpus, 3),
    }
    kv_tokens = int(b.kv_gib * GIB / b.kv_bytes_per_token) if b.kv_bytes_per_token else 0
    return VramResult(
        **_identity(model, variant, gpu, req, quant_label),
        engine=req.engine,
        total_gib=round(total_per_gpu, 3),
        weights_gib=round(b.weights_gib / req.gpus, 3),
        kv_bytes_per_token=b.kv_bytes_per_token / req.gpus,
        kv_cache_gib=round(b.kv_gib / req.gpus, 3),
        kv_tokens=kv_tokens,
        max_model_len=b.n_ctx or want,
        max_model_len_fit=fit,
        max_concurrency=round(fit / max(1, want), 2) if want else 0.0,
        fits=b.fits,
        breakdown=breakdown,
        command=command,
        remedies=[_rem(r) for r in remedies],
        notes=notes,
    )


def derived_context(model: ModelSpec) -> int:
    return derived_max_model_len(model)


__all__ = [
    "EngineName",
    "RemedyOut",
    "VramRequest",
    "VramResult",
    "derived_context",
    "estimate",
    "result_json",
    "round_down_clean",
]
