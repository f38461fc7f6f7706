"""kv_quant_needs_flash_attn: a quantized V cache needs flash attention (llama.cpp, Ollama)."""

from __future__ import annotations

import re

from bot.diagnosis.commands import flag_value
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import llamacpp_build, ollama_version
from bot.diagnosis.gguf import catalog_model, gguf_file, kv_gguf_gib, ollama_tag
from bot.diagnosis.numbers import fmt_gib_or_mib, pow2_floor
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.units import fmt_tokens
from calculator.versions import llamacpp_fa_takes_value


def _gpu_cc(facts: PasteFacts) -> float | None:
    cc = facts.get("compute_capability")
    if cc:
        try:
            return float(cc)
        except (TypeError, ValueError):
            pass
    if facts.gpu is not None and facts.gpu.vendor == "nvidia":
        return facts.gpu.cc
    return None


def _fa_unsupported(cc: float | None) -> bool:
    """CUDA flash attention needs compute capability 6.0+, and is missing on 7.2 (Jetson Xavier)."""
    return cc is not None and (cc < 6.0 or abs(cc - 7.2) < 1e-6)


def kv_quant_needs_flash_attn(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    evidence = " ".join(facts.root.evidence)
    command = facts.context.get("command")
    model_file = gguf_file(facts)
    match = catalog_model(facts)
    logged_type = re.search(r"\b(?:cache_)?type=([a-z0-9_]+)", evidence)
    ctk_known = facts.get("cache_type_k") or (logged_type.group(1) if logged_type else None)
    ctk = str(ctk_known or "q8_0")
    ctv = str(facts.get("cache_type_v") or ctk)
    n_ctx = facts.get("n_ctx")
    cc = _gpu_cc(facts)
    unsupported = _fa_unsupported(cc) or "but this requires Flash Attention" in evidence
    build = llamacpp_build(facts)
    fa_value = "on" if llamacpp_fa_takes_value(build) else ""
    old_build_hint = (
        build is None
        and "V cache quantization requires flash_attn" in evidence
        and flag_value(command, "-fa", "--flash-attn") is None
    )
    if old_build_hint:
        # builds that print this wording without any -fa are from before -fa took a value (≈b6325)
        fa_value = ""
    tag = ollama_tag(facts, match)
    version = ollama_version(facts)

    kv_q = kv_f16v = kv_f16 = None
    if match is not None and n_ctx and ctk in LLAMACPP_KV_BYTES and ctv in LLAMACPP_KV_BYTES:
        kv_q = kv_gguf_gib(match.model, n_ctx, ctk, ctv)
        kv_f16v = kv_gguf_gib(match.model, n_ctx, ctk, "f16")
        kv_f16 = kv_gguf_gib(match.model, n_ctx)

    numbers: list[Fact] = []
    if engine == "ollama" and ctk_known:
        numbers.append(Fact("OLLAMA_KV_CACHE_TYPE", ctk, "log"))
    elif ctk_known:
        numbers.append(Fact("K cache type", ctk, "log"))
    if facts.get("cache_type_v") and engine != "ollama":
        numbers.append(Fact("V cache type", ctv, "log"))
    if facts.get("flash_attn"):
        numbers.append(Fact("flash attention", str(facts.get("flash_attn")), "log"))
    if n_ctx:
        numbers.append(Fact("context", fmt_tokens(n_ctx), "log"))
    if cc:
        numbers.append(
            Fact("GPU compute capability", f"{cc:g}", "log" if facts.get("compute_capability") else "catalog")
        )
    if facts.gpu is not None:
        numbers.append(Fact("GPU", facts.gpu.name, "catalog"))
    if kv_q is not None:
        numbers.append(
            Fact(f"KV cache ({ctk}/{ctv}) at {fmt_tokens(n_ctx)}", fmt_gib_or_mib(kv_q), "computed")
        )
        numbers.append(
            Fact(f"KV cache ({ctk}/f16) at {fmt_tokens(n_ctx)}", fmt_gib_or_mib(kv_f16v), "computed")
        )

    fixes: list[Fix] = []
    notes: list[str] = []
    if engine == "ollama":
        title = f"Ollama: OLLAMA_KV_CACHE_TYPE={ctk} was ignored — flash attention is off"
        sentences = [
            "Up to v0.29 a quantized OLLAMA_KV_CACHE_TYPE only takes effect with flash attention on; without it "
            "Ollama quietly kept an f16 KV cache.",
            f"f16 takes {2 / LLAMACPP_KV_BYTES.get(ctk, 1.0625):.2f}x the memory of {ctk}, so the context you "
            "planned for may not fit on the GPU.",
            "From v0.30 flash attention is automatic for a quantized cache.",
        ]
        if not unsupported:
            fixes.append(
                Fix(
                    "ollama",
                    "turn flash attention on",
                    ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": ctk}, tag),
                    f"the {ctk} KV cache takes effect"
                    + (f": {fmt_gib_or_mib(kv_q)} instead of {fmt_gib_or_mib(kv_f16)}" if kv_q else ""),
                    "none on supported GPUs; a model that does not support it logs 'flash attention enabled but not "
                    "supported by model' and stays f16",
                    1,
                )
            )
            fixes.append(
                Fix(
                    "ollama",
                    "upgrade to v0.30+",
                    "ollama -v   # then install the latest release",
                    "flash attention turns on by itself for a quantized cache",
                    "",
                    2,
                )
            )
        else:
            fixes.append(
                Fix(
                    "ollama",
                    "a shorter context instead",
                    ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(pow2_floor((n_ctx or 8192) // 2))}, tag),
                    "this GPU has no flash attention (CUDA CC < 6.0 or 7.2), so the KV cache stays f16: save memory "
                    "with the context instead",
                    "less context",
                    1,
                )
            )
    else:
        title = f"llama.cpp: a {ctv} V cache needs flash attention"
        if unsupported:
            title += " — not available on this GPU"
        sentences = [
            f"-ctv {ctv} asks for a quantized V cache, which llama.cpp can only use with flash attention, and flash "
            "attention is off"
            + (
                " because this GPU does not support it (CUDA needs compute capability 6.0+, and 7.2 — Jetson Xavier — "
                "has none)."
                if unsupported
                else (
                    " (-fa off)."
                    if str(facts.get("flash_attn") or "") in ("off", "0", "false", "disabled")
                    else "."
                )
            ),
            "A quantized K cache alone does not need it.",
        ]
        if not unsupported:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "flash attention on"
                    if fa_value
                    else "flash attention on (bare -fa: this wording is from builds before -fa took a value)",
                    llamacpp_command(command, model_file, {"-fa": fa_value}),
                    f"keeps the {ctk}/{ctv} KV cache"
                    + (f": {fmt_gib_or_mib(kv_q)} at {fmt_tokens(n_ctx)} tokens" if kv_q else ""),
                    "none on GPUs that support it",
                    1,
                )
            )
        fixes.append(
            Fix(
                "llama.cpp",
                "keep V at f16",
                llamacpp_command(command, model_file, {"-ctv": "f16"}),
                "works without flash attention; K stays quantized"
                + (f": KV {fmt_gib_or_mib(kv_f16v)} instead of {fmt_gib_or_mib(kv_q)}" if kv_q else ""),
                "more KV memory" if kv_q is None else f"{fmt_gib_or_mib(kv_f16v - kv_q)} more KV memory",
                1 if unsupported else 2,
            )
        )
        if unsupported and kv_q is not None and n_ctx:
            same = int(n_ctx * kv_q / kv_f16v)
            new_ctx = max(256, (same // 256) * 256)
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"V at f16 and context {fmt_tokens(new_ctx)}",
                    llamacpp_command(command, model_file, {"-ctv": "f16", "-c": str(new_ctx)}),
                    f"the same {fmt_gib_or_mib(kv_q)} of KV memory you planned for",
                    "a shorter context",
                    2,
                )
            )
        fixes.append(
            Fix(
                "ollama",
                "the same in Ollama",
                ollama_env_command(
                    ({"OLLAMA_FLASH_ATTENTION": "1"} if not unsupported else {})
                    | {"OLLAMA_KV_CACHE_TYPE": ctv},
                    tag,
                ),
                "Ollama ≤ 0.29 needs OLLAMA_FLASH_ATTENTION=1 for a quantized cache; v0.30+ turns it on by itself"
                + ("" if not unsupported else "; on this GPU Ollama stays at f16"),
                "",
                5,
            )
        )
        if build is None and fa_value:
            notes.append(
                "-fa takes a value (on/off/auto) from about b6325 (Aug 2025); on older builds it is a bare -fa."
            )
        elif old_build_hint:
            notes.append("On a build from after Aug 2025 (≈b6325) write -fa on instead of the bare -fa.")
    if version is not None:
        notes.append(f"Ollama {'.'.join(map(str, version))}.")
    data = {"cache_type_k": ctk, "cache_type_v": ctv, "fa_supported": not unsupported, "kv_gib": kv_q}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)


RULES = {"kv_quant_needs_flash_attn": kv_quant_needs_flash_attn}
