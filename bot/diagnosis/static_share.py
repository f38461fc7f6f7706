"""SGLang's static share: the loaded weights leave no room for the KV pool under --mem-fraction-static.

SGLang gives the weights and the KV pool ``mem_fraction_static`` x the free memory measured before the
weights loaded, and keeps the rest for activations and CUDA graphs
(sgl-project/sglang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py,
``_profile_available_bytes``: ``rest = available - pre_model_load_memory * (1 - mem_fraction_static)``;
``rest <= 0`` raises "Loaded weights leave no GPU memory for the KV cache ... (minimum viable = 1 -
available/pre = F)", PR #28683 / #28855, 2026-06).  A higher fraction moves memory from that headroom
into the pool; at the floor F the pool is empty and the headroom is all that was free after the weights.
So a raise helps only when the floor is below 1, and never by more than what the weights left free."""

from __future__ import annotations

import math

from bot.diagnosis.advice import steps_section
from bot.diagnosis.parts import reply
from bot.reply import Fix, Reply
from bot.situation import Situation

STEP = 0.01  # the step the effect is counted in: one hundredth of the pre-load free memory


def _float(situation: Situation, name: str) -> float | None:
    value = situation.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pre_load_gib(situation: Situation) -> float | None:
    """Free memory before loading: "Load weight begin. avail mem=" or, from "Load weight end", what was
    free after the weights plus what they took (SGLang: mem usage = before - after)."""
    pre = _float(situation, "pre_load_avail_gib")
    after, weights = _float(situation, "avail_after_weights_gib"), _float(situation, "weights_gib")
    return pre or (after + weights if after is not None and weights is not None else None) or None


def _floor(situation: Situation, pre: float | None) -> tuple[float | None, str]:
    """The fraction at or below which the pool is empty, and how it was found."""
    printed = _float(situation, "minimum_mem_fraction_static")
    if printed is not None:
        return printed, "SGLang's minimum viable value"
    after = _float(situation, "avail_after_weights_gib")
    if pre and after is not None:
        return 1 - after / pre, f"1 - {after:.2f} GiB free after the weights / {pre:.2f} GiB free before them"
    return _float(situation, "suggested_mem_fraction_static"), "SGLang's suggested value"


def _raise(floor: float | None, pre: float | None, after: float | None) -> Fix:
    """Raise the fraction above the floor (or, the message cut before it, above the one SGLang prints next)."""
    above = f"{math.ceil(floor * 1000) / 1000:.3f}" if floor is not None else "the minimum SGLang prints after this error ('Raise --mem-fraction-static above X')"  # fmt: skip
    effect = "the KV pool gets what the activations and CUDA graphs give up"
    if pre and floor is not None:
        effect = (f"each {STEP:.2f} above {floor:.4f} gives the KV pool {pre * STEP:.2f} GiB and takes it from the "
                  f"activations and CUDA graphs, which keep {pre * (1 - floor):.2f} GiB at the floor")  # fmt: skip
    elif after is not None:
        effect += f": the two share the {after:.2f} GiB the weights left free"
    return Fix("sglang", f"raise `--mem-fraction-static` above {above}", "", effect,
               "less room for activations and CUDA graphs: too little and CUDA-graph capture or a long prefill runs out of memory",
               1, {"kind": "floor", **({"floor": round(floor, 4)} if floor is not None else {})})  # fmt: skip


def static_share(situation: Situation) -> Reply:
    fraction = _float(situation, "mem_fraction_static")
    pre = _pre_load_gib(situation)
    after = _float(situation, "avail_after_weights_gib")
    floor, source = _floor(situation, pre)
    key = None
    if floor is not None:
        key = f"At --mem-fraction-static {floor:.4f} or below the KV pool is empty ({source})"
        key += f"; this run used {fraction:g}." if fraction is not None else "."
        if pre and after is not None:
            key += f" The weights took {pre - after:.2f} of the {pre:.2f} GiB free before loading."
    fixes: list[Fix] = []
    if floor is None or (floor < 1 and (fraction is None or floor > fraction)):
        fixes.append(_raise(floor, pre, after))
    return reply(situation, situation.root.title, key, fixes, extra=steps_section(situation, "Or make the weights smaller per GPU"))  # fmt: skip
