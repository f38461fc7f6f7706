"""gpu_oom@ollama: weights + KV cache + graph do not fit at Ollama's fixed context."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import gpu_total, model_gpu_facts
from bot.diagnosis.fixes import one_slot_fix
from bot.diagnosis.gguf import gguf_bytes
from bot.diagnosis.llamacpp_facts import alloc_mib, llama_kv_per_token
from bot.diagnosis.numbers import fmt_gib, fmt_mib
from bot.diagnosis.smaller_builds import smaller_checkpoints, smaller_sibling
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import variant_weight_bytes
from calculator.commands import ollama_env_command
from calculator.llamacpp import CUDA_CONTEXT_GIB as LLAMACPP_CUDA_CONTEXT_GIB
from calculator.llamacpp import FIT_MARGIN_MIB
from calculator.ollama import default_num_ctx
from calculator.units import GIB, KIB, fmt_tokens, round_down_clean


def ollama_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    n_ctx = facts.get("n_ctx")
    parallel = int(facts.get("n_parallel") or 1)
    num_ctx = (
        int(n_ctx) // parallel if n_ctx and "--ctx-size" in str(facts.context.get("command") or "") else n_ctx
    )
    num_gpu = p.get("num_gpu")
    alloc = alloc_mib(facts)
    tag = None
    if facts.model is not None:
        tag = facts.model.variant.ollama if facts.model.variant and facts.model.variant.ollama else None
        tag = tag or next((v.ollama for v in facts.model.model.variants if v.ollama), None)
    named = str(facts.context.get("model") or "")
    if (
        not tag
        and named
        and not named.startswith(("/", ".", "~"))
        and "blobs" not in named
        and "\\" not in named
    ):
        tag = named
    total, total_src = gpu_total(facts)
    kv_tok = llama_kv_per_token(facts)
    gguf = gguf_bytes(facts)
    fit_ctx = None
    if kv_tok and gguf and total:
        room = (total - LLAMACPP_CUDA_CONTEXT_GIB - FIT_MARGIN_MIB / 1024 - 0.5) * GIB - gguf
        fit_ctx = round_down_clean(int(room / kv_tok / parallel)) if room > 0 else 0
    if fit_ctx:
        new_ctx, ctx_why = fit_ctx, "what fits next to the weights"
    elif total:
        new_ctx, ctx_why = (
            default_num_ctx(total, 1 << 20),
            f"Ollama's own default for {fmt_gib(total)} of VRAM",
        )
    else:
        new_ctx, ctx_why = (
            (round_down_clean(int(num_ctx) // 4) if num_ctx else 8192),
            "a quarter of the KV cache",
        )
    if num_ctx and new_ctx >= int(num_ctx):
        new_ctx, ctx_why = round_down_clean(int(num_ctx) // 2), "half the KV cache"

    if sig.endswith("memory_layout"):
        title = "Ollama: no split of the model between GPU and CPU fits" + (
            f" (num_gpu = {num_gpu} forced)" if num_gpu else ""
        )
    elif sig.endswith("insufficient_memory"):
        title = "Ollama engine: not enough memory for weights + KV cache + graph"
    else:
        title = "Ollama: llama-server ran out of memory while starting"
    if num_ctx:
        title += f", context {int(num_ctx):,}"
    sentences = [
        "Ollama starts the model with a fixed context (num_ctx x OLLAMA_NUM_PARALLEL, passed as -c), so llama.cpp "
        "can move layers to the CPU but cannot shrink the KV cache; weights + KV cache + compute graph did not fit."
    ]
    if num_gpu:
        sentences.append(
            f"num_gpu = {num_gpu} forces that many layers onto the GPU, which is more than fits."
        )
    if num_ctx and int(num_ctx) >= 32768:
        sentences.append(
            f"A {int(num_ctx):,}-token context is Ollama's default on 23+ GiB (32k) or 47+ GiB (256k) of VRAM and "
            "often the whole problem."
        )
    summary = " ".join(sentences)
    numbers: list[Fact] = []
    if num_ctx:
        numbers.append(Fact("context (num_ctx)", f"{int(num_ctx):,}", "log"))
    if parallel > 1:
        numbers.append(Fact("OLLAMA_NUM_PARALLEL", str(parallel), "log"))
    if num_gpu:
        numbers.append(Fact("num_gpu (layers forced on the GPU)", str(num_gpu), "log"))
    if alloc:
        numbers.append(Fact("allocation that failed", fmt_mib(alloc), "log"))
    if total:
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    if kv_tok:
        numbers.append(Fact("KV per token", f"{kv_tok / KIB:,.0f} KiB", "catalog"))
    if fit_ctx is not None:
        numbers.append(Fact("context that fits next to the weights", fmt_tokens(fit_ctx), "computed"))
    numbers += model_gpu_facts(facts)

    fixes = [
        Fix(
            "ollama",
            f"context of {fmt_tokens(new_ctx)} tokens",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag),
            f"{ctx_why}: the KV cache for {fmt_tokens(new_ctx)} tokens"
            + (f" ({fmt_gib(new_ctx * kv_tok * parallel / GIB)})" if kv_tok else "")
            + " (per request: /set parameter num_ctx "
            + str(new_ctx)
            + ")",
            "Ollama silently drops the oldest messages beyond it",
            rank=1,
        ),
        Fix(
            "ollama",
            "q8_0 KV cache",
            ollama_env_command({"OLLAMA_KV_CACHE_TYPE": "q8_0"}, tag),
            "about half the KV cache at the same context",
            "negligible quality loss; before Ollama 0.30 also set OLLAMA_FLASH_ATTENTION=1",
            rank=2,
        ),
    ]
    if parallel > 1:
        fixes.append(
            one_slot_fix("one request at a time", tag, f"KV cache / {parallel}", "requests queue", 2)
        )
    if num_gpu:
        fewer = max(1, int(num_gpu) * 3 // 4)
        fixes.append(
            Fix(
                "ollama",
                f"fewer layers on the GPU (num_gpu {fewer}), or drop num_gpu",
                f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {fewer}",
                "without num_gpu Ollama (or llama.cpp's --fit) picks the layer count that fits",
                "layers on the CPU are slower",
                rank=1,
            )
        )
    smaller = smaller_checkpoints(facts, gguf=True)
    for v, size in smaller[:1]:
        if v.ollama:
            fixes.append(
                Fix(
                    "ollama",
                    f"smaller tag ({v.ollama})",
                    f"ollama run {v.ollama}",
                    f"weights {fmt_gib(size / GIB)}",
                    "lower quality",
                    rank=3,
                )
            )
    smaller_model = smaller_sibling(facts)
    if smaller_model is not None:
        sibling, variant = smaller_model
        size = variant_weight_bytes(sibling, variant) / GIB
        now = gguf_bytes(facts)
        fixes.append(
            Fix(
                "ollama",
                f"a smaller model of the family ({variant.ollama})",
                f"ollama run {variant.ollama}",
                f"{sibling.params_b:g}B instead of {facts.model.model.params_b:g}B parameters: weights about "  # type: ignore[union-attr]
                f"{fmt_gib(size)}" + (f" instead of {fmt_gib(now / GIB)}" if now else ""),
                "a smaller model answers worse",
                rank=3,
            )
        )
    elif not smaller:
        fixes.append(
            Fix(
                "ollama",
                "a smaller quantization tag",
                f"ollama run {(tag or '<model>').split(':')[0]}:<size>-q4_K_M",
                "Q4_K_M is about 4.9 bits per weight (Q8_0: 8.5)",
                "lower quality below Q4",
                rank=3,
            )
        )
    notes = ["`ollama ps` shows the split (e.g. 48%/52% CPU/GPU) and the context of the loaded model."]
    data = {"suggested_num_ctx": new_ctx}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        "Weights + KV cache + graph do not fit; Ollama cannot shrink the context itself.",
        data=data,
        ranked=True,
    )


RULES = {"gpu_oom@ollama": ollama_gpu_oom}
