"""memory_report for Ollama's offload line: layers on the GPU, what all of them need, what is free."""

from __future__ import annotations

import math
import re

from bot.diagnosis.commands import int_flag
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import paste_text
from bot.diagnosis.fixes import num_ctx_fix
from bot.diagnosis.gguf import catalog_model, gguf_variant, ollama_tag
from bot.diagnosis.numbers import fmt_gib_or_mib, fmt_mib_or_gib, pow2_floor, size_to_bytes
from bot.diagnosis.smaller_builds import quant_fix
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import variant_weight_bytes
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.units import GIB, fmt_tokens


def ollama_offload_report(facts: PasteFacts) -> Reply:
    p = facts.params
    text = paste_text(facts)
    lm = p["layers_model"]
    lo = p.get("layers_offload") or 0
    avail = p.get("gpu_available_gib")
    full = p["required_full_gib"]
    partial = p.get("required_partial_gib")
    kv_mib = p.get("required_kv_mib")
    weights = p.get("weights_total_gib")
    graph_mib = p.get("graph_full_mib")
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    requested = p.get("layers_requested")
    sys_total = p.get("system_total_gib")
    sys_free = p.get("system_free_gib")
    overhead_key = p.get("env_key")
    numbers: list[Fact] = [Fact("layers on the GPU", f"{lo}/{lm}", "log")]
    if requested not in (None, "-1"):
        numbers.append(Fact("layers requested (num_gpu)", str(requested), "log"))
    if avail is not None:
        numbers.append(Fact("GPU memory available", fmt_gib_or_mib(avail), "log"))
    numbers.append(Fact("needed for all layers on the GPU", fmt_gib_or_mib(full), "log"))
    if partial is not None:
        numbers.append(Fact("planned on the GPU now", fmt_gib_or_mib(partial), "log"))
    if weights is not None:
        numbers.append(Fact("weights", fmt_gib_or_mib(weights), "log"))
    if kv_mib is not None:
        numbers.append(
            Fact(
                f"KV cache{f' ({fmt_tokens(n_ctx)} tokens x {parallel})' if n_ctx else ''}",
                fmt_mib_or_gib(kv_mib),
                "log",
            )
        )
    if graph_mib is not None:
        numbers.append(Fact("compute graph", fmt_mib_or_gib(graph_mib), "log"))
    if sys_total is not None:
        numbers.append(
            Fact(
                "system RAM total / free",
                f"{fmt_gib_or_mib(sys_total)} / {fmt_gib_or_mib(sys_free or 0)}",
                "log",
            )
        )
    fixes: list[Fix] = []
    notes: list[str] = []
    tag = ollama_tag(facts, catalog_model(facts))
    ctx_assumed = n_ctx or 2048
    per_token_mib = kv_mib / (ctx_assumed * parallel) if kv_mib else None
    if per_token_mib is not None:
        numbers.append(
            Fact("KV per token", f"{per_token_mib * 1024:,.0f} KiB", "computed" if n_ctx else "estimated")
        )
    fa_unsupported_model = "flash attention enabled but not supported by model" in text

    if lo >= lm:
        headroom = (avail or 0) - full
        title = (
            f"Ollama: all {lm} layers on the GPU — {fmt_gib_or_mib(full)} of {fmt_gib_or_mib(avail)} available"
            if avail
            else f"Ollama: all {lm} layers on the GPU"
        )
        sentences = [
            f"Everything fits: Ollama's estimate for the whole model is {fmt_gib_or_mib(full)} and the GPU has {fmt_gib_or_mib(avail)} "
            f"available, {fmt_gib_or_mib(headroom)} to spare."
            if avail
            else "Everything fits on the GPU."
        ]
        if per_token_mib and headroom > 0:
            extra = int(headroom * 1024 / per_token_mib)
            sentences.append(
                f"At {per_token_mib * 1024:,.0f} KiB per token, that headroom is about {fmt_tokens(extra)} more tokens of "
                "context before layers start moving to the CPU."
            )
        data = {"layers_model": lm, "layers_offload": lo, "headroom_gib": headroom}
        return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)

    cpu_layers = lm - lo
    short = round(full - avail, 2) if avail is not None else None
    if re.search(r"offload to cpu|library=cpu", " ".join(facts.root.evidence), re.IGNORECASE):
        return _report_ollama_cpu_only(facts, lm, full, avail, kv_mib, weights, n_ctx, per_token_mib, numbers)
    title = f"Ollama: {lo} of {lm} layers on the GPU — all of them need {fmt_gib_or_mib(full)}" + (
        f", {fmt_gib_or_mib(avail)} is available" if avail is not None else ""
    )
    parts = []
    if weights is not None:
        parts.append(f"weights {fmt_gib_or_mib(weights)}")
    if kv_mib is not None:
        parts.append(
            f"KV cache {fmt_mib_or_gib(kv_mib)}" + (f" for {fmt_tokens(ctx_assumed)} tokens" if n_ctx else "")
        )
    if graph_mib is not None:
        parts.append(f"compute graph {fmt_mib_or_gib(graph_mib)}")
    rest = full - (weights or 0) - (kv_mib or 0) / 1024 - (graph_mib or 0) / 1024
    if parts and rest > 0.3:
        what = (
            "the vision projector and its graph"
            if "projector." in text
            else "Ollama's per-layer and per-GPU overheads"
        )
        parts.append(f"{fmt_gib_or_mib(rest)} more for {what}")
    sentences = [
        f"Ollama's estimate for putting all {lm} layers on the GPU is {fmt_gib_or_mib(full)} ({', '.join(parts)})"
        if parts
        else f"Ollama's estimate for putting all {lm} layers on the GPU is {fmt_gib_or_mib(full)}"
    ]
    if short is not None:
        sentences[0] += (
            f", {fmt_gib_or_mib(short)} more than the {fmt_gib_or_mib(avail)} it found available, so it kept {cpu_layers} layer"
            f"{'s' if cpu_layers != 1 else ''} on the CPU ({lo}/{lm})."
        )
    else:
        sentences[0] += "."
    per_layer = (weights or 0) / lm if weights else None
    memory_for_layers = None
    if cpu_layers == 1 and short is not None and short < 1.0:
        need = short + 0.1  # both numbers are rounded to 0.1 GiB
        sentences.append(
            f"Freeing about {fmt_gib_or_mib(need)} of that estimate puts the last layer on the GPU; one layer "
            f"({fmt_gib_or_mib(per_layer) if per_layer else 'a few hundred MiB'}) on the CPU costs only a little speed."
        )
        memory_for_layers = need
    elif short is not None:
        ram_part = full - (partial or 0)
        sentences.append(
            f"The other {cpu_layers} layers (about {fmt_gib_or_mib(ram_part)}) run from system RAM"
            + (f", where {fmt_gib_or_mib(sys_free)} is free" if sys_free is not None else "")
            + f": with {cpu_layers} of {lm} layers on the CPU, generation runs at CPU speed whatever the GPU does."
        )
    if overhead_key == "OLLAMA_GPU_OVERHEAD" and p.get("env_value"):
        b = size_to_bytes(str(p["env_value"]).strip('"'))
        sentences.append(
            f"OLLAMA_GPU_OVERHEAD={p['env_value']} was rejected (it must be a byte count"
            + (f", {b})" if b else ")")
            + ", so no VRAM headroom was reserved: a plan that fills the GPU to its last GiB can still fail with "
            "cudaMalloc out of memory at load."
        )

    # fixes
    rank = 1
    if overhead_key == "OLLAMA_GPU_OVERHEAD" and p.get("env_value"):
        b = size_to_bytes(str(p["env_value"]).strip('"'))
        if b:
            per = ((partial or 0) - (graph_mib or 0) / 1024) / lo if lo and partial else None
            fewer = math.ceil((b / GIB) / per) if per and per > 0 else None
            fixes.append(
                Fix(
                    "ollama",
                    f"OLLAMA_GPU_OVERHEAD={b}",
                    ollama_env_command({"OLLAMA_GPU_OVERHEAD": str(b)}, tag)
                    + f"\n# docker compose: environment: - OLLAMA_GPU_OVERHEAD={b}",
                    f"Ollama plans with {fmt_gib_or_mib(avail - b / GIB)} instead of {fmt_gib_or_mib(avail)}"
                    + (
                        f": about {min(fewer, lo)} layer{'s' if min(fewer, lo) != 1 else ''} fewer on the GPU "
                        f"(≈{fmt_gib_or_mib(per)} each in this estimate), and no cudaMalloc failure at load"
                        if fewer and avail
                        else ""
                    ),
                    "a little slower: those layers run on the CPU",
                    rank,
                )
            )
            rank += 1
            if fewer and lo:
                fixes.append(
                    Fix(
                        "ollama",
                        f"or pin num_gpu {max(0, lo - fewer)}",
                        f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {max(0, lo - fewer)}\n"
                        f'# API: "options": {{"num_gpu": {max(0, lo - fewer)}}}',
                        f"exactly {max(0, lo - fewer)} layers on the GPU",
                        "a little slower",
                        rank,
                    )
                )
                rank += 1
    if memory_for_layers is not None and kv_mib and per_token_mib:
        need_mib = memory_for_layers * 1024
        if not fa_unsupported_model:
            q8 = kv_mib * LLAMACPP_KV_BYTES["q8_0"] / 2
            if kv_mib - q8 >= need_mib:
                fixes.append(
                    Fix(
                        "ollama",
                        "q8_0 KV cache",
                        ollama_env_command(
                            {"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}, tag
                        ),
                        f"KV {kv_mib:,.0f} MiB -> {q8:,.0f} MiB (saves {kv_mib - q8:,.0f} MiB ≥ {need_mib:,.0f}): all "
                        f"{lm} layers on the GPU, still {fmt_tokens(ctx_assumed)} tokens",
                        "negligible quality loss; ≤ v0.29 needs OLLAMA_FLASH_ATTENTION=1 (set here)",
                        rank,
                    )
                )
                rank += 1
        max_ctx_tokens = (kv_mib - need_mib) / per_token_mib / parallel
        new_ctx = pow2_floor(max_ctx_tokens)
        if new_ctx >= 256:
            new_kv = per_token_mib * new_ctx * parallel
            fixes.append(
                num_ctx_fix(
                    new_ctx,
                    tag,
                    f"KV {kv_mib:,.0f} MiB -> about {new_kv:,.0f} MiB (saves {kv_mib - new_kv:,.0f} MiB ≥ "
                    f"{need_mib:,.0f}): all {lm} layers on the GPU",
                    f"half the context ({fmt_tokens(new_ctx)} tokens)"
                    if new_ctx * 2 == ctx_assumed
                    else "a shorter context",
                    rank,
                    "per session",
                )
            )
            rank += 1
        fixes.append(
            Fix(
                "ollama",
                f"free about {fmt_gib_or_mib(memory_for_layers)} of VRAM",
                "nvidia-smi    # what else holds GPU memory (browsers, desktop compositors, other models)",
                "the same settings then fit entirely",
                "closing other GPU programs",
                rank,
            )
        )
        rank += 1
        if fa_unsupported_model:
            notes.append(
                "Your log says flash attention is not supported by this model, so a q8_0 KV cache is not an option."
            )
    elif short is not None and kv_mib and cpu_layers > 1:
        if weights and lo:
            layer_w, layer_kv = weights / lm, kv_mib / 1024 / lm
            budget_layers = lo * (layer_w + layer_kv)
            options = [("num_ctx", 0.5)] + (
                [] if fa_unsupported_model else [("q8_0", LLAMACPP_KV_BYTES["q8_0"] / 2)]
            )
            for what, factor in options:
                more = min(lm, int(budget_layers / (layer_w + factor * layer_kv))) - lo
                if more < 1:
                    continue
                if what == "num_ctx":
                    new_ctx = max(1024, pow2_floor(ctx_assumed // 2))
                    env = {"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}
                    change, cost = f"num_ctx {fmt_tokens(new_ctx)}", "half the context"
                else:
                    env = {"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}
                    change, cost = (
                        "q8_0 KV cache",
                        "negligible quality loss; ≤ v0.29 needs OLLAMA_FLASH_ATTENTION=1",
                    )
                fixes.append(
                    Fix(
                        "ollama",
                        change,
                        ollama_env_command(env, tag),
                        f"each layer's KV share shrinks: about {more} more layer{'s' if more != 1 else ''} on the GPU "
                        f"({lo + more}/{lm})",
                        cost,
                        rank,
                    )
                )
                rank += 1
        if fa_unsupported_model:
            notes.append(
                "Your log says flash attention is not supported by this model in this version, so "
                "OLLAMA_KV_CACHE_TYPE cannot shrink the KV cache."
            )
        if n_ctx is None and per_token_mib:
            notes.append(
                f"num_ctx is not in the paste; {fmt_tokens(ctx_assumed)} (the default before v0.6.7) is assumed for the "
                f"{per_token_mib:,.2f} MiB per token."
            )
    if short is not None and weights and weights > (avail or 0) * 2:
        notes.append(
            f"The weights ({fmt_gib_or_mib(weights)}) are over {weights / (avail or 1):.0f}x the GPU: a GPU this size only helps "
            "a few layers; RAM bandwidth sets the speed."
        )
        if lm == 62 and weights > 300:
            notes.append("62 layers and this weight size look like DeepSeek-V3/R1 671B (61 layers + output).")
    variant_fix = None
    if catalog_model(facts) is not None and short is not None and cpu_layers > 1:
        match = catalog_model(facts)
        v = gguf_variant(match)
        if v is not None:
            variant_fix = quant_fix(match, variant_weight_bytes(match.model, v) / GIB, short, rank + 1, tag)
    if variant_fix:
        fixes.append(variant_fix)
    gguf_cmd = {"-c": str(ctx_assumed), "-fa": "on"}
    if memory_for_layers is not None:
        gguf_cmd |= {"-ctk": "q8_0", "-ctv": "q8_0"}
    fixes.append(
        Fix(
            "llama.cpp",
            "the same GGUF in llama-server",
            llamacpp_command(None, "<model>.gguf", gguf_cmd),
            "--fit places layers itself and keeps 1 GiB free per GPU (--fit-target)",
            "its own estimate: the split can differ by a layer",
            9,
        )
    )
    started = int_flag(facts.context.get("command"), "--n-gpu-layers", "-ngl")
    if requested not in (None, "-1") and started is not None and started > lo:
        sentences.append(
            f"You asked for num_gpu {requested} and Ollama started the runner with --n-gpu-layers {started} anyway, "
            f"so {lo}/{lm} is only the estimate's warning that this is {fmt_gib_or_mib(short or 0)} over what it sees free: if "
            "the model loads and runs nothing is wrong, and if it runs out of memory the fixes below free the "
            "difference."
        )
    elif requested not in (None, "-1") and str(requested) == str(lm) and lo < lm:
        notes.append(
            f"layers.requested={requested} asked for every layer, but Ollama's estimate capped it at {lo}."
        )
    data = {
        "layers_model": lm,
        "layers_offload": lo,
        "required_full_gib": full,
        "available_gib": avail,
        "short_gib": short,
        "kv_mib": kv_mib,
        "kv_per_token_mib": per_token_mib,
    }
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        f"{lo}/{lm} layers fit: all need {fmt_gib_or_mib(full)}, {fmt_gib_or_mib(avail)} available."
        if avail
        else "",
        data=data,
    )


def _report_ollama_cpu_only(
    facts: PasteFacts,
    lm: int,
    full: float,
    avail: float | None,
    kv_mib: float | None,
    weights: float | None,
    n_ctx: int | None,
    per_token_mib: float | None,
    numbers: list[Fact],
) -> Reply:
    """The offload line of a machine without a usable GPU: everything is in RAM."""
    tag = ollama_tag(facts, catalog_model(facts))
    short = round(full - avail, 2) if avail is not None else None
    title = f"Ollama: CPU only — the model needs {fmt_gib_or_mib(full)}" + (
        f", {fmt_gib_or_mib(avail)} of memory is available" if avail else ""
    )
    sentences = [
        f"No GPU was used (offload to cpu): all {lm} layers run on the CPU, and Ollama's estimate of {fmt_gib_or_mib(full)} "
        f"(weights{f' {fmt_gib_or_mib(weights)}' if weights else ''}, KV cache{f' {fmt_mib_or_gib(kv_mib)}' if kv_mib else ''}, graph) "
        "has to fit in system memory."
    ]
    if short is not None and short > 0:
        sentences.append(f"It is {fmt_gib_or_mib(short)} over the {fmt_gib_or_mib(avail)} available.")
    elif avail is not None:
        sentences.append(f"It fits, with {fmt_gib_or_mib(avail - full)} to spare.")
    sentences.append(
        "If you have an NVIDIA/AMD GPU, Ollama did not detect it: check the driver and the 'inference compute' line."
    )
    fixes: list[Fix] = []
    ctx_now = n_ctx or 2048
    new_ctx = max(1024, pow2_floor(ctx_now // 2))
    if kv_mib and new_ctx < ctx_now:
        fixes.append(
            num_ctx_fix(
                new_ctx,
                tag,
                f"the KV cache drops from {fmt_mib_or_gib(kv_mib)} to about {fmt_mib_or_gib(kv_mib * new_ctx / ctx_now)}",
                "less context",
                1,
            )
        )
    fixes.append(
        Fix(
            "ollama",
            "free RAM",
            "free -h   # close other programs before loading",
            "the estimate is compared with free RAM (+ swap)",
            "swap makes a CPU model very slow",
            2,
        )
    )
    data = {"cpu_only": True, "required_full_gib": full, "available_gib": avail, "short_gib": short}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, [], data=data)
