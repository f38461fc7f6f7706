"""The engine's budget for a situation: the paste's numbers where it printed them, the catalog and the
calculator's estimates for the rest.  Diagnoses never compute memory themselves; they ask this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.situation import Situation
from calculator.catalog import ModelSpec, Variant, variant_weight_bytes
from calculator.estimate import GGUF_DEFAULT, _gguf_weight_bytes
from calculator.llamacpp import LlamaCppEstimate, LlamaCppObserved
from calculator.ollama import OllamaEstimate
from calculator.plan import Plan, Source, Sourced
from calculator.sglang import SglangEstimate
from calculator.units import GIB
from calculator.versions import CURRENT_VLLM, parse_version
from calculator.vllm import VllmEstimate, VllmObserved, loaded_weight_bytes

Estimate = VllmEstimate | LlamaCppEstimate | OllamaEstimate | SglangEstimate
LLAMACPP_KV = ("f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")


def _s(situation: Situation, *names: str, source: Source = "log") -> Sourced | None:
    for name in names:
        value = situation.params.get(name)
        if value is not None:
            return Sourced(value, source)
    return None


def plan_in_force(situation: Situation) -> Plan:
    """The settings the paste ran with (command, log, then the version's defaults)."""
    st = situation.setting
    engine = situation.engine
    kv = st("kv_dtype") or "auto"
    if engine in ("llama.cpp", "ollama"):
        ctk = st("cache_type_k") or "f16"
        kv = ctk if ctk in LLAMACPP_KV else "f16"
    max_len = st("max_len") or _int(situation.get("max_model_len") if engine == "vllm" else None)
    if engine == "sglang":
        max_len = st("max_len") or _int(situation.get("context_length"))
    if engine in ("llama.cpp", "ollama"):
        max_len = st("max_len") or _int(situation.get("n_ctx"))
    util = st("util") or situation.get("gpu_memory_utilization") or situation.get("mem_fraction_static")
    fa = st("flash_attn")
    return Plan(
        max_len=max_len,
        kv_dtype=str(kv),
        util=float(util) if util else None,
        eager=bool(st("eager")),
        tp=_int(st("tp")) or 1,
        pp=_int(st("pp")) or 1,
        max_seqs=_int(st("max_seqs")),
        batched_tokens=_int(st("batched_tokens")),
        gpu_layers=_gpu_layers(st("gpu_layers")),
        parallel=_int(st("parallel")) or 1,
        ubatch=_int(st("ubatch")),
        flash_attn=str(fa).lower() not in ("off", "0", "false", "disabled") if fa is not None else True,
        kv_offload=not st("no_kv_offload"),
    )


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and int(value) > 0 else None
    except (TypeError, ValueError):
        return None


def _gpu_layers(value: Any) -> int | None:
    n = _int(value)
    return None if n is None or n >= 999 else n


@dataclass
class Budget:
    """An engine's estimate plus the plan in force."""

    engine: str
    estimate: Estimate
    plan0: Plan


def vllm_version(situation: Situation) -> tuple[int, int, int]:
    return situation.version or parse_version(None, CURRENT_VLLM)


def _model(situation: Situation) -> tuple[ModelSpec | None, Variant | None]:
    if situation.model is None:
        return None, None
    return situation.model.model, situation.model.variant


def _vllm(situation: Situation, plan0: Plan) -> VllmEstimate:
    model, variant = _model(situation)
    p = situation.params
    want = plan0.max_len
    bpt = None
    if p.get("kv_needed_gib") and want:
        bpt = Sourced(p["kv_needed_gib"] * GIB / want, "log")
    elif p.get("kv_cache_gib") and p.get("kv_tokens"):
        bpt = Sourced(p["kv_cache_gib"] * GIB / p["kv_tokens"], "log")
    fit = _s(situation, "estimated_max_model_len", "kv_tokens")
    kv = _s(situation, "kv_cache_gib")
    if kv is None and p.get("kv_deficit_gib") is not None:
        kv = Sourced(-abs(p["kv_deficit_gib"]), "log")
    total = _s(situation, "total_gib") or situation.gpus.per_device_gib
    obs = VllmObserved(
        total_gib=total,
        weights_gib=_s(situation, "weights_gib"),
        non_torch_gib=_s(situation, "non_torch_gib"),
        activation_gib=_s(situation, "activation_gib"),
        cudagraph_gib=_s(situation, "cudagraph_estimate_gib"),
        kv_cache_gib=kv,
        kv_bytes_per_token=bpt,
        fit_len=fit,
        free_gib=_s(situation, "free_gib", "gpu_available_gib"),
    )
    gpu = situation.gpus.gpu
    cc = gpu.cc if gpu else None
    weights = loaded_weight_bytes(model, variant, cc, plan0.tp) if model is not None else None
    gpu_id = gpu.id if gpu else ""
    v0 = {"v0": True, "v1": False}.get(situation.engine_mode or "")
    return VllmEstimate(vllm_version(situation), plan0, obs, model, weights, gpu_id, engine_v0=v0)


def gguf_weights(situation: Situation) -> int | None:
    """The GGUF a llama.cpp / Ollama user runs: the paste's quant when it names one, else Q4_K_M."""
    model, variant = _model(situation)
    if model is None:
        return None
    if variant is not None and variant.quant == "gguf":
        return variant_weight_bytes(model, variant)
    named = next((v for v in model.variants if v.quant == "gguf" and v.gguf_type == GGUF_DEFAULT), None)
    return _gguf_weight_bytes(model, named)[0]


def _llamacpp(situation: Situation, plan0: Plan) -> LlamaCppEstimate:
    model, _variant = _model(situation)
    obs = LlamaCppObserved(
        device_gib=situation.gpus.per_device_gib,
        devices=situation.gpus.n,
        model_buffer_mib=_s(situation, "model_buffer_mib"),
        kv_buffer_mib=_s(situation, "kv_buffer_mib", "kv_self_mib", "kv_size_mib"),
        compute_buffer_mib=_s(situation, "compute_buffer_mib"),
    )
    return LlamaCppEstimate(plan0, obs, model, gguf_weights(situation))


def budget_for(situation: Situation, engine: str | None = None) -> Budget | None:
    """The budget of ``engine`` (default: the paste's) for the situation; None when it cannot be built."""
    engine = engine or situation.engine
    plan0 = (
        plan_in_force(situation)
        if engine == situation.engine
        else Plan(max_len=plan_in_force(situation).max_len)
    )
    model, variant = _model(situation)
    if engine == "vllm":
        return Budget(engine, _vllm(situation, plan0), plan0)
    if engine == "llama.cpp":
        if engine != situation.engine:
            plan0 = plan0.with_(kv_dtype="f16")
        return Budget(engine, _llamacpp(situation, plan0), plan0)
    if engine == "ollama":
        est = OllamaEstimate(plan0.with_(kv_dtype="f16") if engine != situation.engine else plan0,
                             situation.gpus.per_device_gib, model, gguf_weights(situation), situation.gpus.n)  # fmt: skip
        return Budget(engine, est, est.plan0)
    if engine == "sglang":
        weights = variant_weight_bytes(model, variant) if model is not None else None
        return Budget(engine, SglangEstimate(plan0, situation.gpus.per_device_gib, model, weights), plan0)
    return None
