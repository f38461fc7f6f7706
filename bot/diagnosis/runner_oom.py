"""runner_crashed, memory cause: the Ollama runner ran out of GPU memory or system RAM."""

from __future__ import annotations

import math
import re

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import gpu_total_from_context, ollama_version
from bot.diagnosis.fixes import num_ctx_fix, one_slot_fix
from bot.diagnosis.gguf import catalog_model, gguf_placeholder, gguf_variant, kv_gguf_gib, ollama_tag
from bot.diagnosis.numbers import fmt_gib_or_mib, pow2_floor
from bot.diagnosis.ollama_runner import ollama_log_fix, status_facts
from bot.diagnosis.smaller_builds import quant_fix
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import ModelSpec, variant_weight_bytes
from calculator.commands import llamacpp_command
from calculator.ollama import OllamaConfig, default_num_ctx, ollama_budget
from calculator.units import GIB, fmt_tokens

_HOST_TEXT = re.compile(r"CPU buffer|signal: killed|bad_alloc|system memory", re.IGNORECASE)


def runner_memory(facts: PasteFacts, inner: str, status: str) -> Reply:
    p = facts.params
    match = catalog_model(facts)
    variant = gguf_variant(match)
    weights = variant_weight_bytes(match.model, variant) / GIB if match and variant else None
    tag = ollama_tag(facts, match)
    label = tag or (match.label if match else None)
    total, total_src = gpu_total_from_context(facts)
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    kv_type = facts.get("cache_type_k") or "f16"
    host = bool(_HOST_TEXT.search(inner))
    killed = "signal: killed" in inner
    wording_new = "llama-server" in " ".join(facts.root.evidence)
    if n_ctx:
        ctx_assumed, ctx_src = n_ctx, "log"
    elif wording_new and total and match is not None:
        ctx_assumed, ctx_src = default_num_ctx(total, match.model.max_position_embeddings), "estimated"
    else:
        ctx_assumed, ctx_src = (4096 if wording_new else 2048), "estimated"
    weights_failed = bool(
        re.search(r"error loading model|model buffer|load_tensors|unable to allocate", inner)
    )

    if killed:
        title = "Ollama: the runner was killed by the Linux OOM killer (out of system RAM)"
        first = (
            "'signal: killed' means the kernel's out-of-memory killer ended the runner: the weights and KV cache "
            "kept in RAM, plus everything else running, exceeded RAM + swap."
        )
    else:
        title = f"Ollama: the runner ran out of {'system RAM' if host else 'memory'} while loading" + (
            f" {label}" if label else ""
        )
        where = "system RAM" if host else "memory (GPU, or RAM for the layers kept on the CPU)"
        if weights_failed and not host:
            first = (
                f"The runner died because an allocation failed while it placed the weights ('{inner[:160]}'): the "
                "model does not fit in the memory it was given (the GPU, or RAM for the layers kept on the CPU)."
            )
        else:
            first = (
                f"The runner died because an allocation failed: '{inner[:160]}'. The model, its KV cache for the "
                f"context, or the compute buffer did not fit in {where}."
            )
    sentences = [first]
    if status.lower() == "0xc0000409":
        sentences.append(
            "The Windows exit code 0xc0000409 is only how the abort after that failure is reported, not a memory "
            "code itself."
        )
    numbers = status_facts(status)
    if inner:
        numbers.append(Fact("runner error", inner[:200], "log"))
    fixes: list[Fix] = []
    notes: list[str] = []
    budget = None
    if match is not None and weights is not None:
        numbers.append(Fact(f"model ({label})", fmt_gib_or_mib(weights), "catalog"))
        numbers.append(
            Fact(
                f"KV cache at num_ctx {fmt_tokens(ctx_assumed)}"
                + (f" x {parallel} slots" if parallel > 1 else ""),
                fmt_gib_or_mib(kv_gguf_gib(match.model, ctx_assumed, kv_type, kv_type, parallel)),
                "computed" if n_ctx else "estimated",
            )
        )
    if total:
        numbers.append(Fact("GPU memory", fmt_gib_or_mib(total), total_src))
    if match is not None and weights is not None and total and not killed:
        budget = ollama_budget(
            match.model,
            int(weights * GIB),
            total,
            OllamaConfig(num_ctx=ctx_assumed, num_parallel=parallel, kv_cache_type=kv_type),
        )
        need = budget.used_gib
        parts = (
            f"{fmt_gib_or_mib(budget.weights_gib)} of weights + {fmt_gib_or_mib(budget.kv_gib)} of KV for {fmt_tokens(ctx_assumed)} tokens + "
            f"{fmt_gib_or_mib(budget.compute_gib + budget.overhead_gib)} of buffers and CUDA context"
        )
        numbers.append(Fact("needed on the GPU at that context", fmt_gib_or_mib(need), "computed"))
        if budget.n_ctx_max_fit:
            numbers.append(
                Fact("largest num_ctx that stays on the GPU", fmt_tokens(budget.n_ctx_max_fit), "computed")
            )
        if need <= total:
            sentences.append(
                f"By my numbers {label} at num_ctx {fmt_tokens(ctx_assumed)} needs {fmt_gib_or_mib(need)} ({parts}), which fits in "
                f"{fmt_gib_or_mib(total)} — so something took more: a larger num_ctx set by the client or a Modelfile (above "
                f"about {fmt_tokens(budget.n_ctx_max_fit)} tokens it no longer fits), several parallel slots (each has its own "
                "KV cache), or another program holding GPU memory."
            )
        else:
            sentences.append(
                f"At num_ctx {fmt_tokens(ctx_assumed)} it needs {fmt_gib_or_mib(need)} ({parts}), more than the {fmt_gib_or_mib(total)} GPU."
            )
    elif weights_failed and not host:
        sentences.append("So fewer layers on the GPU or a smaller quant come first, the context second.")
    elif not killed:
        sentences.append(
            "Which one is in the server log; the levers are the same: a shorter context, fewer layers on the GPU, "
            "or a smaller quant."
        )
    if wording_new and not host and not killed:
        notes.append(
            "From v0.30 Ollama starts llama-server with -c num_ctx x num_parallel, so llama.cpp's --fit can move "
            "layers to the CPU but cannot shrink the context: the context is yours to lower."
        )

    fits_anyway = budget is not None and budget.used_gib <= budget.total_gib
    weights_too_big = budget is not None and budget.n_ctx_max_fit == 0
    r_ctx, r_gpu, r_quant = (3, 1, 2) if (weights_failed or weights_too_big) else (1, 2, 3)
    trained = match.model.max_position_embeddings if match is not None else None

    # 1) context
    if budget is not None and budget.n_ctx_max_fit >= 1024:
        new_ctx = min(pow2_floor(budget.n_ctx_max_fit), trained or 1 << 30)
        fixes.append(
            num_ctx_fix(
                new_ctx,
                tag,
                f"weights + the KV cache for {fmt_tokens(new_ctx)} tokens stay on the {fmt_gib_or_mib(total)} GPU (the limit is about "
                f"{fmt_tokens(budget.n_ctx_max_fit)})",
                "Ollama drops the oldest messages beyond it",
                r_ctx,
                "per session instead",
            )
        )
    else:
        new_ctx = max(1024, pow2_floor(ctx_assumed // 2))
        effect = f"halves the KV cache ({fmt_tokens(ctx_assumed)} -> {fmt_tokens(new_ctx)} tokens)"
        if match is not None:
            saved = kv_gguf_gib(match.model, ctx_assumed, kv_type, kv_type, parallel) - kv_gguf_gib(
                match.model, new_ctx, kv_type, kv_type, parallel
            )
            effect += f": {fmt_gib_or_mib(saved)} less"
        fixes.append(
            num_ctx_fix(
                new_ctx,
                tag,
                effect,
                "Ollama drops the oldest messages beyond it",
                r_ctx,
                "per session instead",
            )
        )
    if fits_anyway or parallel > 1:
        fixes.append(
            one_slot_fix(
                "one slot",
                tag,
                "every parallel slot has its own KV cache (before v0.10 Ollama could pick 4 by itself)",
                "requests queue",
                2,
            )
        )
    if fits_anyway:
        fixes.append(
            Fix(
                "ollama",
                "check what else holds GPU memory",
                "nvidia-smi    # other processes, a second model still loaded (ollama ps), the desktop",
                "Ollama plans with the memory that is free when it loads, not the card's total",
                "",
                3,
            )
        )
    # 2) layers on the GPU
    if budget is not None and match is not None and total and not host and not fits_anyway:
        layers = _layers_that_fit(match.model, weights, total, ctx_assumed, kv_type, parallel)
        if 0 < layers < match.model.num_hidden_layers + 1:
            fixes.append(
                Fix(
                    "ollama",
                    f"num_gpu {layers}",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {layers}\n"
                    f'# API: "options": {{"num_gpu": {layers}}}',
                    f"{layers} of {match.model.num_hidden_layers + 1} layers on the GPU with 1 GiB spare at num_ctx "
                    f"{fmt_tokens(ctx_assumed)}; the rest run from RAM",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
    elif budget is None and not host and not killed:
        offl = p.get("layers_offload")
        if offl:
            per_layer = (p.get("weights_total_gib") or 0) / max(1, p.get("layers_model") or 1)
            fewer = max(2, math.ceil(1.0 / per_layer)) if per_layer else 4
            layers = max(0, offl - fewer)
            fixes.append(
                Fix(
                    "ollama",
                    f"num_gpu {layers}",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {layers}",
                    f"{fewer} layers fewer than the {offl} Ollama planned: about 1 GiB of GPU headroom",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
        else:
            fixes.append(
                Fix(
                    "ollama",
                    "fewer layers on the GPU",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu <layers.offload from the log minus 4>",
                    "the server log's 'offload' line says how many layers Ollama planned; 4 fewer leaves about "
                    "1 GiB of GPU headroom on a 7-14B model",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
    # 3) smaller build
    if match is not None and weights is not None and not fits_anyway:
        need = 1.0
        if budget is not None:
            need = max(0.5, budget.used_gib - budget.total_gib + 0.5)
        fix = quant_fix(match, weights, need, r_quant, tag, "the memory it needs")
        if fix:
            fixes.append(fix)
    elif match is None:
        fixes.append(
            Fix(
                "ollama",
                "a smaller model or quant",
                "ollama ps     # what was loaded, its size and the CPU/GPU split\nollama list",
                "a model well under your GPU memory (weights + 1-2 GiB for the KV cache and buffers) loads "
                "fully on the GPU",
                "a smaller model is less capable",
                r_quant,
            )
        )
    if host or killed or status.lower() == "0xc0000409":
        fixes.append(
            Fix(
                "ollama",
                "more free RAM (or a bigger page file on Windows)",
                "free -h                       # Linux\n"
                "# Windows: System > About > Advanced system settings > Performance > Virtual memory",
                "the layers kept on the CPU must fit in RAM (on Windows: RAM + page file commit limit)",
                "swap/page file only lets it load; layers paged to disk are very slow",
                4,
            )
        )
    fixes.append(ollama_log_fix(6))
    if weights is not None and match is not None:
        fixes.append(
            Fix(
                "llama.cpp",
                "llama-server with automatic fitting",
                llamacpp_command(None, gguf_placeholder(match), {"-c": str(min(ctx_assumed, 8192))}),
                "--fit (b7407+) moves layers to the CPU until 1 GiB of VRAM stays free, instead of failing",
                "layers on the CPU are slower",
                7,
            )
        )
    if killed:
        notes.append("Confirm with: journalctl -k | grep -i -E 'killed process|out of memory'")
    if match is None:
        notes.append(
            "The model is not named in the paste; with its tag and your GPU I can compute num_ctx and num_gpu."
        )
    if not n_ctx:
        notes.append(
            f"num_ctx is not in the paste; assumed {fmt_tokens(ctx_assumed)} (Ollama's default was 2,048 before v0.6.7, "
            "4,096 after, and from v0.15.5 4k/32k/256k by total VRAM)."
        )
    version = ollama_version(facts)
    if version and version < (0, 5, 13):
        notes.append(
            "OLLAMA_CONTEXT_LENGTH needs Ollama 0.5.13+; on your version use /set parameter num_ctx or a Modelfile. "
            "Later versions also estimate memory better: upgrading is worth it."
        )
    data = {
        "cause": "memory",
        "host": host,
        "exit_status": status or None,
        "runner_error": inner or None,
        "num_ctx_assumed": ctx_assumed,
        "num_ctx_source": ctx_src,
        "num_ctx_max_fit": budget.n_ctx_max_fit if budget is not None else None,
    }
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        "The runner's allocation failed: " + (inner[:100] or "out of memory"),
        data=data,
    )


def _layers_that_fit(
    model: ModelSpec, weights_gib: float, total_gib: float, n_ctx: int, kv_type: str, parallel: int
) -> int:
    """Layers (llama.cpp counting: + the output layer) that fit with 1 GiB spare."""
    layers_total = model.num_hidden_layers + 1
    per_layer = (
        weights_gib / layers_total + kv_gguf_gib(model, n_ctx, kv_type, kv_type, parallel) / layers_total
    )
    fixed = 0.4 + 1.0 + 0.3  # CUDA context, the spare, the compute buffer
    return max(0, min(layers_total, int((total_gib - fixed) / per_layer)))
