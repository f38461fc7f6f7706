"""kv_alloc_failed: llama.cpp could not allocate the KV cache for n_ctx tokens."""

from __future__ import annotations

from bot.diagnosis.commands import llama_cmd
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import model_gpu_facts, model_spec
from bot.diagnosis.llamacpp_facts import alloc_mib, device_total_mib, llama_kv_per_token
from bot.diagnosis.numbers import fmt_mib
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.llamacpp import compute_buffer_bytes
from calculator.units import KIB, MIB, fmt_tokens, round_down_clean


def llamacpp_kv_alloc_failed(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = alloc_mib(facts)
    device = str(p.get("device", "0"))
    n_ctx = facts.get("n_ctx")
    n_ctx = int(n_ctx) if n_ctx else None
    k_type = str(facts.get("cache_type_k") or "f16")
    v_type = str(facts.get("cache_type_v") or k_type)
    model = model_spec(facts)
    kv_tok_all = llama_kv_per_token(facts)
    weights_dev = p.get("model_buffer_mib")
    total_mib, total_src = device_total_mib(facts)
    compute_est = 512.0
    if model is not None and n_ctx:
        compute_est = compute_buffer_bytes(model, n_ctx, 512, True) / MIB
    avail = None
    if total_mib is not None:
        avail = total_mib - (weights_dev or 0.0) - compute_est - 256.0
    per_tok_dev, per_tok_src, layers_dev = None, "estimated", None
    if alloc and n_ctx:
        per_tok_dev, per_tok_src = alloc * MIB / n_ctx, "computed"
        if model is not None and kv_tok_all:
            layers_dev = round(per_tok_dev / (kv_tok_all / model.num_hidden_layers))
    elif alloc and kv_tok_all:
        # n_ctx not printed: assume this GPU holds every layer's KV (one GPU)
        per_tok_dev, per_tok_src = kv_tok_all, "catalog"
    implied_ctx = int(alloc * MIB / per_tok_dev) if alloc and per_tok_dev and not n_ctx else None

    fit_ctx = fit_q8 = None
    if avail is not None and per_tok_dev:
        fit_ctx = round_down_clean(int(avail * MIB / per_tok_dev)) if avail > 0 else 0
        q8_factor = (
            LLAMACPP_KV_BYTES[k_type] / LLAMACPP_KV_BYTES["q8_0"]
            if k_type in LLAMACPP_KV_BYTES
            else 2 / 1.0625
        )
        fit_q8 = round_down_clean(int(avail * MIB / (per_tok_dev / q8_factor))) if avail > 0 else 0
        if n_ctx:
            fit_q8 = min(fit_q8, n_ctx)
    ratio = avail / alloc if avail is not None and alloc else None

    title = "llama.cpp: the KV cache could not be allocated"
    if facts.root.signature == "llamacpp.context_init_failed" and not alloc:
        reason = p.get("reason")
        title = "llama.cpp: the context (KV cache + compute buffers) could not be created" + (
            f": {reason}" if reason else ""
        )
    if alloc:
        title = f"llama.cpp: the {fmt_mib(alloc)} KV cache does not fit on device {device}"
        if n_ctx:
            title += f" (n_ctx {n_ctx:,})"
    sentences = [
        "llama.cpp reserves the whole KV cache for n_ctx tokens up front, on the GPUs that hold the layers; the "
        "weights were already loaded, so it is the context size (-c) and the cache type, not the model, that did not fit."
    ]
    if alloc and avail is not None:
        sentences.append(
            f"Device {device} offers about {fmt_mib(avail)} after the weights"
            + (f" ({fmt_mib(weights_dev)})" if weights_dev else "")
            + f" and a compute buffer, against the {fmt_mib(alloc)} asked for: the KV cache must shrink "
            f"{alloc / max(avail, 1):.1f}x."
            if avail > 0
            else f"Device {device} has nothing left after the weights: fewer layers on it, not just a smaller context."
        )
    if model is not None and model.num_key_value_heads == model.num_attention_heads:
        sentences.append(
            f"{model.id.split('/')[-1]} has no grouped-query attention ({model.num_key_value_heads} KV heads): its KV "
            "cache per token is several times that of GQA models of the same size."
        )
    summary = " ".join(sentences)
    short = "The KV cache for this context does not fit next to the weights."

    numbers: list[Fact] = []
    if alloc:
        numbers.append(Fact(f"KV buffer that failed (device {device})", fmt_mib(alloc), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", f"{n_ctx:,}", "log"))
    elif implied_ctx:
        numbers.append(Fact("context that KV size implies", fmt_tokens(implied_ctx), "computed"))
    numbers.append(
        Fact("cache type K/V", f"{k_type}/{v_type}", "log" if facts.get("cache_type_k") else "estimated")
    )
    if weights_dev is not None:
        numbers.append(Fact("weights on the first GPU", fmt_mib(weights_dev), "log"))
    if p.get("layers_offload") is not None:
        numbers.append(
            Fact("layers on the GPU", f"{p['layers_offload']}/{p.get('layers_model', '?')}", "log")
        )
    if total_mib is not None:
        numbers.append(Fact("what the GPU offers llama.cpp", fmt_mib(total_mib), total_src))
    if avail is not None:
        numbers.append(Fact("left for the KV cache on that GPU", fmt_mib(max(0.0, avail)), "computed"))
    if per_tok_dev:
        numbers.append(Fact(f"KV per token on device {device}", f"{per_tok_dev / KIB:,.0f} KiB", per_tok_src))
    if kv_tok_all and model is not None:
        numbers.append(
            Fact(
                "KV per token, all layers",
                f"{kv_tok_all / KIB:,.0f} KiB ({model.num_key_value_heads} KV heads x {model.head_dim})",
                "catalog",
            )
        )
        if layers_dev:
            numbers.append(Fact(f"layers whose KV lives on device {device}", str(layers_dev), "computed"))
    if ratio is not None:
        numbers.append(Fact("share of the asked KV that fits", f"{max(0.0, ratio):.0%}", "computed"))
    numbers += model_gpu_facts(facts)

    fixes: list[Fix] = []
    if fit_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context of {fmt_tokens(fit_ctx)} tokens",
                llama_cmd(facts, {"-c": str(fit_ctx)}),
                f"KV on device {device}: {fit_ctx:,} x {per_tok_dev / KIB:,.0f} KiB = {fmt_mib(fit_ctx * per_tok_dev / MIB)}, "  # type: ignore[operator]
                f"within the {fmt_mib(avail or 0)} free" + (f" (asked for {n_ctx:,})" if n_ctx else ""),
                "longer prompts are cut or rejected",
                rank=1,
            )
        )
    if fit_q8:
        fixes.append(
            Fix(
                "llama.cpp",
                "q8_0 KV cache with flash attention",
                llama_cmd(facts, {"-c": str(fit_q8), "-fa": "on", "-ctk": "q8_0", "-ctv": "q8_0"}),
                f"1.06 bytes per value instead of {LLAMACPP_KV_BYTES.get(k_type, 2):g}: {fmt_tokens(fit_q8)} tokens fit",
                "negligible quality loss; needs flash attention",
                rank=2,
            )
        )
    if not fit_ctx and ratio is not None and ratio > 0:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context at most {ratio:.0%} of what you set",
                llama_cmd(facts, {"-c": "<n_ctx x " + f"{ratio:.2f}" + ">", "-fa": "on"}),
                f"the KV cache scales with n_ctx: {ratio:.0%} of it is about {fmt_mib(ratio * (alloc or 0))}, what device {device} has left",
                "n_ctx is not in the paste: multiply your value (llama-cpp-python / Xinference: the n_ctx setting)",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "q8_0 KV cache with flash attention",
                llama_cmd(facts, {"-fa": "on", "-ctk": "q8_0", "-ctv": "q8_0"}),
                f"about half the KV per token: the context can then be up to {min(1.0, ratio * 1.88):.0%} of what you set",
                "negligible quality loss; needs flash attention",
                rank=2,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "keep the KV cache in system RAM",
            llama_cmd(facts, {"-nkvo": ""}),
            f"frees the whole KV cache from the GPU ({fmt_mib(alloc)} in RAM instead)"
            if alloc
            else "the KV cache moves to RAM",
            "attention then runs on the CPU: much slower generation",
            rank=4,
        )
    )
    fixes.append(
        Fix(
            "llama.cpp",
            "let --fit choose the context (no -c)",
            llama_cmd(facts, {"-c": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) shrinks the context to what fits, down to 4,096",
            "only without an explicit -c",
            rank=5,
        )
    )
    notes = []
    if model is None:
        notes.append(
            "The model is not in the paste (or my catalog): per-token KV and the exact -c need n_ctx or the model name."
        )
    if not n_ctx:
        notes.append(
            "n_ctx is not in the paste ('llama_new_context_with_model: n_ctx = ...'); under llama-cpp-python / Xinference "
            "it is the n_ctx setting of the model launch."
        )
    picture = None
    if total_mib and alloc and weights_dev:
        segs = [
            MemorySegment("weights", weights_dev / 1024, "log"),
            MemorySegment("compute buffers", compute_est / 1024, "estimated"),
            MemorySegment("kv cache", alloc / 1024, "log"),
        ]
        picture = MemoryPicture(total_mib / 1024, segs, f"device {device} if the KV cache had been allocated")
    hw = (
        bigger_hardware(facts, n_ctx, engine="llama.cpp")
        if model is not None and ratio is not None and ratio < 0.1
        else None
    )
    data = {
        "fit_ctx": fit_ctx,
        "fit_ctx_q8": fit_q8,
        "kv_per_token_device": per_tok_dev,
        "kv_room_mib": avail,
    }
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, [hw], picture, data, ranked=True)


RULES = {"kv_alloc_failed": llamacpp_kv_alloc_failed}
