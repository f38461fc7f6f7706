"""host_memory: the model's CPU part does not fit in system RAM (Ollama, llama.cpp)."""

from __future__ import annotations

import math

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.fixes import num_ctx_fix, one_slot_fix
from bot.diagnosis.gguf import catalog_model, gguf_placeholder, gguf_variant, kv_gguf_gib, ollama_tag
from bot.diagnosis.host_memory_llamacpp import llamacpp_host_memory
from bot.diagnosis.numbers import fmt_gib_or_mib, pow2_floor
from bot.diagnosis.smaller_builds import quant_fix
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import variant_weight_bytes
from calculator.commands import llamacpp_command
from calculator.units import GIB, fmt_tokens


def host_memory(facts: PasteFacts) -> Reply:
    if facts.root.engine == "llama.cpp":
        return llamacpp_host_memory(facts)
    return _host_memory_ollama(facts)


def _host_memory_ollama(facts: PasteFacts) -> Reply:
    p = facts.params
    required = p.get("required_gib")
    available = p.get("available_gib")
    if available is None and p.get("available_bytes") is not None:
        available = p["available_bytes"] / GIB
    short = required - available if required is not None and available is not None else None
    match = catalog_model(facts)
    variant = gguf_variant(match)
    weights = variant_weight_bytes(match.model, variant) / GIB if match and variant else None
    tag = ollama_tag(facts, match)
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    assumed_ctx = n_ctx or 2048
    kv = kv_gguf_gib(match.model, assumed_ctx, parallel=parallel) if match else None
    total_est = weights + kv + 0.3 if weights is not None and kv is not None else None  # + graph
    on_gpu_src = "estimated"
    weights_src = "catalog"
    kv_src = "computed" if n_ctx else "estimated"
    lo, lm = p.get("layers_offload"), p.get("layers_model")
    if p.get("required_partial_gib") is not None and lm:
        # the offload line: what Ollama planned for the GPU, and the share of layers left on the CPU
        on_gpu, on_gpu_src = p["required_partial_gib"], "log"
        cpu_only = (lo or 0) == 0
        cpu_fraction = 1 - (lo or 0) / lm
        if p.get("weights_total_gib"):
            weights, weights_src = p["weights_total_gib"], "log"
        if p.get("required_kv_mib") is not None:
            kv, kv_src = p["required_kv_mib"] / 1024, "log"
    else:
        cpu_only = bool(total_est and required and required >= total_est * 0.9)
        on_gpu = max(0.0, total_est - required) if total_est and required and not cpu_only else None
        cpu_fraction = min(1.0, required / total_est) if total_est and required else None

    label = (tag or (variant.id if variant else match.label)) if match else None
    title = "Ollama: the model needs more system memory than is free"
    if required is not None and available is not None:
        title = f"Ollama: the CPU part of the model needs {fmt_gib_or_mib(required)} of RAM, {fmt_gib_or_mib(available)} is free"
    sentences = [
        "Before loading, Ollama (v0.2 to v0.29) checks that the part of the model it will keep in system "
        "RAM — the layers that do not fit on the GPU, with their share of the KV cache — fits in free RAM "
        "plus free swap."
    ]
    if short is not None:
        sentences.append(
            f"It put that part at {fmt_gib_or_mib(required)} but only {fmt_gib_or_mib(available)} was free, "
            f"{fmt_gib_or_mib(short)} short, so it refused to load the model."
        )
    if weights is not None and cpu_only:
        sentences.append(
            f"{label} is {fmt_gib_or_mib(weights)} of weights, so this is the whole model: nothing was planned for the GPU."
        )
    elif on_gpu is not None and on_gpu_src == "log":
        sentences.append(
            f"Ollama planned {fmt_gib_or_mib(on_gpu)} for the GPU ({lo} of {lm} layers); only the other {lm - (lo or 0)} layers "
            "and their KV cache need RAM."
        )
    elif weights is not None and on_gpu is not None:
        sentences.append(
            f"{label} is {fmt_gib_or_mib(weights)} of weights, so about {fmt_gib_or_mib(on_gpu)} of it was planned for the GPU "
            "and only the rest needs RAM."
        )
    else:
        sentences.append(
            "The number is only the CPU share: with partial offload the layers on the GPU need no RAM, so "
            "a smaller quant, a shorter context or more free RAM closes the gap."
        )

    numbers: list[Fact] = []
    if required is not None:
        numbers.append(Fact("RAM needed for the CPU part", fmt_gib_or_mib(required), "log"))
    if available is not None:
        numbers.append(Fact("free RAM + free swap", fmt_gib_or_mib(available), "log"))
    if short is not None:
        numbers.append(Fact("short by", fmt_gib_or_mib(short), "computed"))
    numbers += [
        Fact(label_, fmt_gib_or_mib(p[k]), "log")
        for k, label_ in (
            ("system_total_gib", "system RAM in total"),
            ("system_free_gib", "system RAM free"),
            ("swap_free_gib", "swap free"),
            ("gpu_available_gib", "GPU memory available to Ollama"),
        )
        if p.get(k) is not None
    ]
    if p.get("layers_offload") is not None and p.get("layers_model"):
        numbers.append(Fact("layers on the GPU", f"{p['layers_offload']}/{p['layers_model']}", "log"))
    if weights is not None:
        numbers.append(
            Fact(
                f"model weights ({label})" if label else "model weights", fmt_gib_or_mib(weights), weights_src
            )
        )
    if kv is not None:
        numbers.append(
            Fact(
                "KV cache" if kv_src == "log" else f"KV cache at num_ctx {fmt_tokens(assumed_ctx)}",
                fmt_gib_or_mib(kv),
                kv_src,
            )
        )
    if on_gpu is not None:
        numbers.append(
            Fact(
                "planned for the GPU" + ("" if on_gpu_src == "log" else " (weights + KV + graph − RAM part)"),
                fmt_gib_or_mib(on_gpu),
                on_gpu_src,
            )
        )

    fixes: list[Fix] = []
    notes: list[str] = []
    need = (short or 0.0) + 0.25  # a margin: Ollama rounds and the OS needs some RAM too
    if match is not None and weights is not None:
        fix = quant_fix(match, weights, need, 1, tag, "the RAM part")
        if fix:
            fixes.append(fix)
    elif short is not None:
        fixes.append(
            Fix(
                "ollama",
                f"a build at least {fmt_gib_or_mib(need)} smaller",
                "ollama list                  # what you have\nollama show <model>          # its 'quantization' line",
                f"the RAM part must shrink by {fmt_gib_or_mib(short)}; a smaller quant (Q4_K_M -> Q3_K_M saves about 18%) "
                "or a smaller model does that",
                "lower-bit weights lose some quality",
                1,
            )
        )
    # a shorter context: the CPU layers' KV lives in RAM
    ctx_now = n_ctx or 4096
    new_ctx = max(1024, pow2_floor(ctx_now // 2)) if n_ctx else 2048
    if new_ctx < ctx_now:
        effect = f"the KV cache for {fmt_tokens(new_ctx)} tokens instead of {fmt_tokens(ctx_now)}"
        if not n_ctx:
            effect = (
                "helps if num_ctx is above the old default (v0.6.7+ uses 4,096; clients and Modelfiles often set "
                "more): " + effect
            )
        if match is not None:
            saved = kv_gguf_gib(match.model, ctx_now, parallel=parallel) - kv_gguf_gib(
                match.model, new_ctx, parallel=parallel
            )
            saved *= cpu_fraction or 1.0
            effect += f": about {fmt_gib_or_mib(saved)} less RAM"
            if short is not None and saved < short:
                effect += f" (not enough alone for the {fmt_gib_or_mib(short)} gap)"
        fixes.append(
            num_ctx_fix(
                new_ctx,
                tag,
                effect,
                "the model sees less of the conversation (Ollama drops the oldest messages)",
                2,
            )
        )
    if parallel != 1 or not facts.get("n_parallel"):
        fixes.append(
            one_slot_fix(
                "one request at a time",
                tag,
                "before v0.10 Ollama could pick 4 parallel slots, and every slot has its own KV cache: "
                "one slot cuts the KV part to a quarter",
                "requests queue instead of running together",
                3,
            )
        )
    if short is not None:
        swap = max(2, math.ceil(short + 1.5))
        fixes.append(
            Fix(
                "ollama",
                "free RAM or add swap",
                "free -h   # what is free; close browsers/IDEs first\n"
                f"sudo fallocate -l {swap}G /swapfile && sudo chmod 600 /swapfile && "
                "sudo mkswap /swapfile && sudo swapon /swapfile",
                f"the check counts free swap, so {swap} GiB more lets the model load",
                "not a fix for speed: layers paged out to swap make every token wait on the disk",
                4,
            )
        )
    # llama.cpp maps the file: no up-front RAM check
    fixes.append(
        Fix(
            "llama.cpp",
            "run the same GGUF with llama-server",
            llamacpp_command(None, gguf_placeholder(match, variant), {"-c": "4096"}),
            "llama.cpp memory-maps the file instead of copying it into RAM, and --fit (default) puts as many "
            "layers on the GPU as fit: there is no up-front free-RAM check",
            "if RAM is still short, the CPU layers are re-read from disk: slow",
            5,
        )
    )
    notes.append(
        "vLLM and SGLang keep the whole model in GPU memory; they do not help when the model only fits "
        "with part of it in RAM."
    )
    if not n_ctx and match is not None:
        notes.append(
            "num_ctx is not in the paste; the KV numbers assume 2,048 tokens (Ollama's default before v0.6.7; "
            "4,096 after)."
        )
    if match is None:
        notes.append(
            "The model is not named in the paste: tell me the tag (ollama ps / ollama list) for sizes."
        )
    notes.append(
        "This check is in Ollama v0.2 to v0.29 (not on macOS, whose swap is dynamic); OLLAMA_CONTEXT_LENGTH "
        "exists from v0.5.13 — before that, /set parameter num_ctx or PARAMETER num_ctx in a Modelfile."
    )
    data = {"required_gib": required, "available_gib": available, "short_gib": short, "model_gib": weights}
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        f"The CPU part needs {fmt_gib_or_mib(required)} of RAM; {fmt_gib_or_mib(available)} is free."
        if required is not None and available is not None
        else "",
        data=data,
    )


RULES = {"host_memory": host_memory}
