"""What a paste says about the engine, the GPU and the model: totals, versions, evidence."""

from __future__ import annotations

import re
from typing import Any

from bot.diagnosis.numbers import fmt_version
from bot.facts import PasteFacts
from bot.reply import Fact
from calculator.catalog import ModelSpec, variant_weight_bytes
from calculator.kv import vllm_layout
from calculator.units import GIB
from calculator.versions import CURRENT_OLLAMA, parse_version, vllm_default_utilization, vllm_is_v0

# ------------------------------------------------------------------------------------------ the paste


def first_logged(facts: PasteFacts, *names: str) -> tuple[Any, str]:
    """The first of ``names`` the paste printed (a finding's number, then the context)."""
    for source in (facts.params, facts.context):
        for name in names:
            value = source.get(name)
            if value is not None:
                return value, "log"
    return None, "estimated"


def evidence_number(facts: PasteFacts, pattern: str) -> float | None:
    """The number the first evidence line matching ``pattern`` captures (group 1); None if none matches."""
    for line in facts.root.evidence:
        m = re.search(pattern, line)
        if m:
            try:
                return float(m.group(1).replace(",", ""))
            except ValueError:
                return None
    return None


def evidence_has(facts: PasteFacts, needle: str) -> bool:
    """Whether an evidence line contains ``needle`` (any case)."""
    return any(needle.lower() in line.lower() for line in facts.root.evidence)


def paste_text(facts: PasteFacts) -> str:
    """The prefix-stripped paste when the facts carry it (``PasteFacts.text``), else ''."""
    return str(getattr(facts, "text", "") or "")


# ------------------------------------------------------------------------------------------ the GPU


def gpu_total(facts: PasteFacts) -> tuple[float | None, str]:
    """The GPU total the error printed (``total_gib``), else the context's, else the catalog card's."""
    value, src = first_logged(facts, "total_gib", "gpu_total_gib")
    if value:
        return float(value), src
    if facts.gpu is not None:
        return facts.gpu.total_gib, "catalog"
    return None, "estimated"


def gpu_total_from_context(facts: PasteFacts) -> tuple[float | None, str]:
    """The GPU total the context states (``gpu_total_gib``), else the error's ``total_gib``, else the catalog card's."""
    total = facts.get("gpu_total_gib") or facts.params.get("total_gib")
    if total:
        return float(total), "log"
    if facts.gpu is not None:
        return facts.gpu.total_gib, "catalog"
    return None, "estimated"


def gpu_name(facts: PasteFacts) -> str | None:
    """The GPU as the paste names it, else the catalog card's name."""
    name = facts.params.get("gpu") or facts.context.get("gpu")
    if name:
        return str(name)
    return facts.gpu.name if facts.gpu else None


def compute_capability(facts: PasteFacts) -> tuple[float | None, str]:
    """The compute capability the paste printed, else the catalog card's, with its source."""
    cc = facts.params.get("compute_capability")
    if cc is None:
        cc = facts.context.get("compute_capability")
    if cc is not None:
        return float(cc), "log"
    if facts.gpu is not None and facts.gpu.cc is not None:
        return facts.gpu.cc, "catalog"
    return None, "estimated"


def model_gpu_facts(facts: PasteFacts) -> list[Fact]:
    """The catalog model and GPU the paste resolved to, as reply facts."""
    out = []
    if facts.model is not None:
        out.append(Fact("model", facts.model.label, "catalog"))
    if facts.gpu is not None:
        out.append(Fact("GPU", facts.gpu.name, "catalog"))
    return out


# ------------------------------------------------------------------------------------------ the model


def model_spec(facts: PasteFacts) -> ModelSpec | None:
    """The catalog model the paste names, if any."""
    return facts.model.model if facts.model is not None else None


def catalog_weights_gib(facts: PasteFacts, shards: int = 1) -> float | None:
    """The catalog size of the checkpoint in use, split over ``shards`` GPUs."""
    if facts.model is None:
        return None
    return variant_weight_bytes(facts.model.model, facts.model.variant) / max(1, shards) / GIB


def is_16bit(facts: PasteFacts) -> bool:
    """The served checkpoint is (or may be) 16-bit: online fp8 quantization would halve it."""
    if facts.get("quantization"):
        return False
    variant = facts.model.variant if facts.model is not None else None
    return variant is None or variant.quant in ("bf16", "fp16")


def vllm_kv_bytes_per_token(
    model: ModelSpec | None, facts: PasteFacts, tp: int = 1, pp: int = 1, dtype: str | None = None
) -> float | None:
    """KV bytes per token of every attention layer on one GPU in vLLM's (or SGLang's) paged layout, at
    ``dtype`` else the paste's --kv-cache-dtype; None for an unknown model or a dtype vLLM does not know."""
    if model is None:
        return None
    try:
        return vllm_layout(
            model, dtype or facts.get("kv_cache_dtype") or "auto", tp=tp, pp=pp
        ).all_attention_bytes_per_token
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------ engine versions and defaults


def v0_log_lines(facts: PasteFacts) -> bool:
    """Numbers only the V0 engine prints (its memory-profiling block, CPU swap blocks)."""
    p = facts.params
    return (
        "cpu_blocks" in p
        or "peak_torch_gib" in p
        or ("requested_gib" in p and "free_gib" not in p)
        or ("activation_gib" in p and "non_torch_gib" in p and "non_kv_gib" not in p)
    )


def paste_vllm_version(facts: PasteFacts) -> tuple[int, int, int]:
    """The paste's version; when it is not printed, V0-only lines bound it to 0.10 or older."""
    if facts.version_known:
        return facts.vllm_version
    return (0, 10, 0) if v0_log_lines(facts) else facts.vllm_version


def is_vllm_v0(facts: PasteFacts) -> bool:
    """The paste comes from vLLM's V0 engine (by its version or by V0-only log lines)."""
    return vllm_is_v0(paste_vllm_version(facts)) or v0_log_lines(facts)


def vllm_utilization(facts: PasteFacts, version: tuple[int, int, int]) -> tuple[float, str]:
    """gpu_memory_utilization as the paste printed it, else vLLM's default at ``version``."""
    util, src = first_logged(facts, "gpu_memory_utilization")
    if util is None:
        util, src = vllm_default_utilization(version), "estimated"
    return float(util), src


def vllm_version_note(facts: PasteFacts, notes: list[str], inferred: str | None = None) -> None:
    """When the paste prints no vLLM version, say which version the flags suit (``inferred`` overrides)."""
    if facts.version_known:
        return
    if inferred:
        notes.append(f"vLLM version not in the paste; {inferred}")
    elif facts.root.versions:
        notes.append(
            f"vLLM version not in the paste; this wording is printed by vLLM {facts.root.versions}, "
            f"so the flags suit v{fmt_version(facts.vllm_version)}."
        )
    else:
        notes.append(
            f"vLLM version not in the paste; flags assume a current release (v{fmt_version(facts.vllm_version)})."
        )


def ollama_version(facts: PasteFacts) -> tuple[int, int, int] | None:
    """Ollama's version from the paste, if printed."""
    v = facts.context.get("engine_version")
    return parse_version(str(v), CURRENT_OLLAMA) if v else None


def llamacpp_build(facts: PasteFacts) -> int | None:
    """llama.cpp's build number (``b4589``) from the paste, if printed."""
    m = re.match(r"\s*b?([0-9]{3,6})\b", str(facts.context.get("engine_version") or ""))
    return int(m.group(1)) if m else None
