"""The engine's budget for a situation: the paste's numbers where it printed them, the catalog and the
calculator's estimates for the rest.  Diagnoses never compute memory themselves; they ask this."""

from __future__ import annotations

from typing import Any

from bot.situation import Situation
from calculator.budget import Budget, Seen, build
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.plan import Plan

__all__ = ["Budget", "budget_for", "plan_in_force"]


def plan_in_force(situation: Situation) -> Plan:
    """The settings the paste ran with (command, log, then the version's defaults)."""
    st = situation.setting
    engine = situation.engine
    kv = st("kv_dtype") or "auto"
    if engine in ("llama.cpp", "ollama"):
        ctk = st("cache_type_k") or "f16"
        kv = ctk if ctk in LLAMACPP_KV_BYTES else "f16"
    logged = {"vllm": "max_model_len", "sglang": "context_length", "llama.cpp": "n_ctx", "ollama": "n_ctx"}
    max_len = st("max_len") or _int(situation.get(logged.get(engine, "")))  # the context the log printed
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


def seen(situation: Situation) -> Seen:
    """What the paste showed, as the calculator's budgets take it."""
    match = situation.model
    return Seen(
        params=situation.params,
        model=match.model if match else None,
        variant=match.variant if match else None,
        gpu=situation.gpus.gpu,
        device_gib=situation.gpus.per_device_gib,
        devices=situation.gpus.n,
        version=situation.version,
        engine_v0={"v0": True, "v1": False}.get(situation.engine_mode or ""),
        spec=situation.spec,
    )


def budget_for(situation: Situation, engine: str | None = None) -> Budget | None:
    """The budget of ``engine`` (default: the paste's) for the situation; None when it cannot be built.
    Another engine starts from its own defaults at the paste's context (16-bit KV for llama.cpp/Ollama)."""
    engine = engine or situation.engine
    plan0 = plan_in_force(situation)
    if engine != situation.engine:
        plan0 = Plan(max_len=plan0.max_len, kv_dtype="f16" if engine in ("llama.cpp", "ollama") else "auto")
    return build(engine, seen(situation), plan0)
