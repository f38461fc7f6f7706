"""llama.cpp device memory as a paste states it: the failed allocation, what the GPU offers, KV per token."""

from __future__ import annotations

from bot.diagnosis.engine_facts import model_gpu_facts, model_spec
from bot.diagnosis.numbers import fmt_mib
from bot.facts import PasteFacts
from bot.reply import Fact
from calculator.kv import llamacpp_layout
from calculator.llamacpp import CUDA_CONTEXT_GIB as LLAMACPP_CUDA_CONTEXT_GIB
from calculator.units import MIB


def alloc_mib(facts: PasteFacts) -> float | None:
    """The allocation that failed, in MiB (the log prints MiB or bytes)."""
    p = facts.params
    if p.get("alloc_mib") is not None:
        return float(p["alloc_mib"])
    if p.get("alloc_bytes") is not None:
        return p["alloc_bytes"] / MIB
    return None


def device_total_mib(facts: PasteFacts) -> tuple[float | None, str]:
    """What the device offers llama.cpp: its free memory at load (log), else the card's total minus the
    CUDA context (catalog)."""
    free = facts.params.get("free_mib")
    if free is not None and facts.root.engine in ("llama.cpp", "ollama") and free > 1024:
        return float(free), "log"
    if facts.gpu is not None and not facts.gpu.unified_memory:
        return (facts.gpu.total_gib - LLAMACPP_CUDA_CONTEXT_GIB) * 1024, "catalog"
    total = facts.context.get("gpu_total_gib")
    if total:
        return (float(total) - LLAMACPP_CUDA_CONTEXT_GIB) * 1024, "log"
    return None, "estimated"


def llama_kv_per_token(facts: PasteFacts) -> float | None:
    """f16/q8 KV bytes per token over all layers of the catalog model, with the paste's cache types."""
    model = model_spec(facts)
    if model is None:
        return None
    k = str(facts.get("cache_type_k") or "f16")
    v = str(facts.get("cache_type_v") or k)
    try:
        return llamacpp_layout(model, k, v).all_attention_bytes_per_token
    except ValueError:
        return llamacpp_layout(model).all_attention_bytes_per_token


def llama_numbers(facts: PasteFacts, alloc: float | None, label: str) -> list[Fact]:
    """The numbers a llama.cpp OOM reply shows: the failed allocation (as ``label``), the buffers, context, layers and what the GPU offers."""
    p = facts.params
    out = []
    device = p.get("device")
    if alloc is not None:
        out.append(Fact(label + (f" (device {device})" if device is not None else ""), fmt_mib(alloc), "log"))
    for name, lab in (
        ("model_buffer_mib", "weights on the first GPU"),
        ("kv_buffer_mib", "KV cache on the first GPU"),
        ("kv_self_mib", "KV cache (all devices)"),
        ("compute_buffer_mib", "compute buffer"),
    ):
        if p.get(name) is not None:
            out.append(Fact(lab, fmt_mib(p[name]), "log"))
    for name, lab in (("n_ctx", "context (n_ctx)"), ("n_gpu_layers", "-ngl")):
        if facts.get(name) is not None:
            out.append(
                Fact(
                    lab,
                    f"{facts.get(name):,}" if isinstance(facts.get(name), int) else str(facts.get(name)),
                    "log",
                )
            )
    if p.get("layers_offload") is not None and p.get("layers_model") is not None:
        out.append(Fact("layers on the GPU", f"{p['layers_offload']}/{p['layers_model']}", "log"))
    avail, src = device_total_mib(facts)
    if avail is not None:
        out.append(Fact("what the GPU offers llama.cpp", fmt_mib(avail), src))
    out += model_gpu_facts(facts)
    return out
